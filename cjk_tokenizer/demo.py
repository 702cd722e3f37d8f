"""``python -m cjk_tokenizer demo``: build a sample archive and search it.

The sessions in data/sample_archive.jsonl (Chinese, Japanese, Korean, English
and code, with tool output and reasoning) are imported once as they are, then
``scale - 1`` more times as haystack: the same shape, scripts and sizes, but
every letter shifted within its script (a rare 漢字 from Extension A, another
kana, Hangul syllable or Latin letter), so the searches find the real sessions among
thousands of others.  Each search prints its best hits verbatim, which route
served it, and its time next to a scan of the same archive with the same
meaning (the LIKE/instr route), which has to read every row.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import tempfile
import time
from importlib import resources

SEARCHES = [
    ("项目", {}, "2-character Chinese word inside 大别山项目管理系统"),
    ("寨", {}, "1 Chinese character (an index lookup too: each character is also indexed on its own)"),
    ("合肥", {}, "a fact stated only in the model's reasoning: not found by default"),
    ("合肥", {"include_reasoning": True}, "... found with include_reasoning=True, labelled as thought"),
    ("品川 ホテル", {}, "Japanese, two terms (implicit AND)"),
    ("シンカンセン", {}, "full-width katakana query finds the half-width ｼﾝｶﾝｾﾝ note"),
    ("비빔밥", {}, "Korean"),
    ('"IF NOT EXISTS" 迁移', {}, "a quoted English phrase AND a Chinese word"),
    ("worker.join OR keyset", {}, "code identifiers, OR"),
]


def _sample_lines() -> list[dict]:
    text = resources.files("cjk_tokenizer").joinpath("data/sample_archive.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# (first, size, to_first, to_size): letters of a block and where the haystack
# moves them.  Han goes to Extension A, which the real sessions never use, so a
# one-character search finds only the real sessions.
_BLOCKS = ((0x4E00, 0x5200, 0x3400, 0x19C0), (0x3041, 0x56, 0x3041, 0x56), (0x30A1, 0x5A, 0x30A1, 0x5A),
           (0xAC00, 0x2BA4, 0xAC00, 0x2BA4), (0xFF66, 0x38, 0xFF66, 0x38), (0x61, 26, 0x61, 26), (0x41, 26, 0x41, 26))


def _shifter(copy: int):
    table = {}
    for first, size, to_first, to_size in _BLOCKS:
        step = (copy * 7919) % to_size or 1
        for cp in range(first, first + size):
            table[cp] = to_first + (cp - first + step) % to_size
    return table


def sample_messages(scale: int, lines: list[dict] | None = None):
    """The bundled sessions once, then ``scale - 1`` shifted haystack copies (later timestamps)."""
    lines = [l for l in (lines or _sample_lines()) if l.get("type") != "session"]
    stamps = [l["timestamp"] for l in lines]
    span = max(stamps) - min(stamps) + 3600.0
    for copy in range(scale):
        table = _shifter(copy) if copy else None
        for line in lines:
            msg = dict(line)
            msg["timestamp"] = line["timestamp"] + copy * span
            if table:
                msg["session_id"] = f"haystack-{copy}-{line['session_id']}"
                for key in ("content", "reasoning_content"):
                    if msg.get(key):
                        msg[key] = msg[key].translate(table)
            yield msg


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:7.2f} ms"


def run_demo(scale: int = 2000, keep: str | None = None, out=None) -> int:
    from . import _native
    from .archive import Archive
    from .errors import ExtensionError

    if isinstance(scale, bool) or not isinstance(scale, int) or scale < 1:
        raise ValueError(f"scale must be an integer of at least 1 (1 = the bundled sessions alone), not {scale!r}")
    if not _native.available():  # the demo shows the extension at work: say why it cannot, before building
        raise ExtensionError(_native.missing_reason())
    out = out or print
    tmp = None
    if keep:
        path = keep
        if os.path.exists(path):
            raise FileExistsError(f"{path} exists; give --keep a new file name")
    else:
        tmp = tempfile.mkdtemp(prefix="cjk-demo-")
        path = os.path.join(tmp, "demo.db")
    try:
        lines = _sample_lines()
        with Archive(path) as ar:
            t0 = time.perf_counter()
            n = ar.bulk_import(sample_messages(scale, lines))
            for line in lines:
                if line.get("type") == "session":
                    ar.update_session(line["id"], title=line["title"])
            took = time.perf_counter() - t0
            sizes = ar.indexes.sizes()
            out(f"Built {path}: {n:,} messages in {ar.count_sessions():,} sessions, "
                f"{sizes.get('text', 0) / 2**20:.1f} MiB of text, in {took:.1f} s "
                f"(extension {'loaded' if ar.extension_loaded else 'NOT loaded: ' + str(ar.extension_error)}).")
            if scale > 1:
                out(f"The bundled sessions are there once as they are; the other {scale - 1:,} copies are "
                    "synthetic haystack (every letter shifted within its script), which the searches below "
                    "must not find and a scan has to read.")
            out("Indexes: " + ", ".join(f"{r} {sizes[r] / 2**20:.1f} MiB" for r in sorted(ar.indexes.live()) if r in sizes))
            # First use registers SQL functions and builds the scan route's table
            # of spellings; time the searches, not that.
            ar.search("warm up 预热", limit=1)
            ar.search("warm up 预热", limit=1, route="scan")
            for query, opts, what in SEARCHES:
                out("")
                out(f"search {query!r} {opts or ''}  — {what}")
                t0 = time.perf_counter()
                hits = ar.search(query, limit=3, **opts)
                t_index = time.perf_counter() - t0
                t0 = time.perf_counter()
                scan_hits = ar.search(query, limit=3, route="scan", **opts)
                t_scan = time.perf_counter() - t0
                route = hits[0].route if hits else ar.explain(query, **opts).get("route", "?")
                r = t_scan / t_index if t_index > 0 else float("inf")
                ratio = f"index {r:,.0f}x faster" if r >= 10 else f"ratio {r:.1f}x (archive too small to tell)"
                out(f"  route {route}: {_ms(t_index)}   scan of the same archive: {_ms(t_scan)}   {ratio}")
                if {h.message_id for h in hits} != {h.message_id for h in scan_hits}:
                    out("  (the scan's top 3 differ: both routes return exact matches, ranked differently)")
                if not hits:
                    out("  (no matches)")
                for h in hits:
                    label = {"content": "said", "reasoning": "THOUGHT"}.get(h.matched_in[0] if h.matched_in else "", "matched")
                    out(f"  message {h.message_id} [{h.session_id} {h.role}, {label} in {','.join(h.matched_in)}] "
                        f"{h.snippet.replace(chr(10), ' ')}")
        if keep:
            out(f"\nKept {path}. Try: python -m cjk_tokenizer search {shlex.quote(path)} '部署' --reasoning")
        else:
            out(f"\nDeleting {path} now; run the demo with --keep PATH to keep the archive and search it yourself.")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0
