"""Build time and size of one FTS5 table under tokenizer options and FTS5 settings, side by side.

Reads the first MB of text of a corpus written by bench/generate.py, then
builds, in alternating order ``--repeat`` times, one ordinary FTS5 table
(content stored in it) per variant in ``VARIANTS`` with a single
``executemany`` in one transaction, and prints seconds and table bytes (dbstat)
per byte of text; the medians per variant come last.  This is the measurement
behind indexing.FTS_SETTINGS and the unigram cost quoted in RESULTS.md.

The ``floor`` variant separates FTS5's share of a cjk build from the
tokenizer's: the text is tokenized beforehand (untimed) by cjk_unicode61 with
unigrams, each row written as its tokens joined by spaces, and that is indexed
with FTS5's cheapest tokenizer, ``ascii``.  FTS5 then stores the same terms,
one per position (colocated unigrams take a position of their own), so its
time is what the cjk token stream costs FTS5 whatever tokenizer produces it.

The target is read on the pair the archive actually creates: cjk with
unigrams against unicode61, both with indexing.FTS_SETTINGS.  The same cjk
table without unigrams shows what the bigrams alone cost, so what is left of
the target for the unigrams (whatever way they are indexed).  ``--write``
puts the medians into the "build" section of RESULTS.md.

    python bench/generate.py --size 100MB -o c100.jsonl
    python bench/bench_fts_settings.py c100.jsonl --mb 100 --repeat 3 --write
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import apsw  # noqa: E402

import cjk_tokenizer  # noqa: E402
from cjk_tokenizer import schema  # noqa: E402
from cjk_tokenizer.indexing import FTS_SETTINGS  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import results  # noqa: E402

U61 = schema.FTS_INDEXES["unicode61"][1]
CJK = schema.FTS_INDEXES["cjk"][1]
CJK_UNIGRAMS = f"{CJK} {schema.CJK_UNIGRAMS}"
FLOOR = "floor: cjk+unigrams tokens through ascii"
ARCHIVE_U61 = "unicode61, archive settings"
ARCHIVE_CJK = "cjk+unigrams, archive settings (the default cjk index)"
ARCHIVE_BIGRAMS = "cjk without unigrams, archive settings"
HASH16 = {"hashsize": 16 * 2**20}

VARIANTS = [
    ("unicode61", U61, {}),
    (ARCHIVE_U61, U61, FTS_SETTINGS),
    (FLOOR, "ascii", FTS_SETTINGS),
    ("cjk", CJK, {}),
    ("cjk+unigrams", CJK_UNIGRAMS, {}),
    (ARCHIVE_BIGRAMS, CJK, FTS_SETTINGS),
    (ARCHIVE_CJK, CJK_UNIGRAMS, FTS_SETTINGS),
    ("cjk+unigrams hashsize 16M automerge 8", CJK_UNIGRAMS, {**HASH16, "automerge": 8}),
    ("cjk+unigrams hashsize 16M crisismerge 32", CJK_UNIGRAMS, {**HASH16, "crisismerge": 32}),
    ("unicode61 hashsize 16M automerge 16", U61, {**HASH16, "automerge": 16}),
    ("cjk+unigrams hashsize 16M automerge 16", CJK_UNIGRAMS, {**HASH16, "automerge": 16}),
    ("cjk+unigrams pgsz 4072", CJK_UNIGRAMS, {"pgsz": 4072}),
]
TARGET = 2.0  # cjk with unigrams may take at most this multiple of unicode61's build time


def read_rows(path, mb):
    rows, total = [], 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = json.loads(line)
            calls = json.dumps(m["tool_calls"], ensure_ascii=False) if m.get("tool_calls") else None
            row = (m.get("content"), m.get("reasoning"), m.get("tool_name"), calls)
            rows.append(row)
            total += sum(len(x.encode()) for x in row if x)
            if total >= mb * 1e6:
                break
    return rows, total


def token_rows(rows):
    """``rows`` with each value replaced by its cjk_unicode61 (unigrams) tokens joined by spaces."""
    conn = cjk_tokenizer.load(apsw.Connection(":memory:"))
    tokenize = conn.fts5_tokenizer(CJK_UNIGRAMS.split()[0], CJK_UNIGRAMS.split()[1:])
    reason = apsw.mapping_fts5_tokenize_reason["FTS5_TOKENIZE_DOCUMENT"]

    def tokens(value):
        if not value:
            return value
        return " ".join(t for _, _, *forms in tokenize(value.encode(), reason, None) for t in forms)

    out = [tuple(tokens(v) for v in row) for row in rows]
    conn.close()
    return out


def build(path, tokenize, settings, rows):
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    conn = cjk_tokenizer.load(apsw.Connection(path))
    conn.execute(f"CREATE VIRTUAL TABLE t USING fts5(content, reasoning, tool_name, tool_calls, "
                 f"tokenize='{tokenize}')")
    for name, value in settings.items():
        conn.execute("INSERT INTO t(t, rank) VALUES (?, ?)", (name, value))
    t0 = time.perf_counter()
    with conn:
        conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    seconds = time.perf_counter() - t0
    size = conn.execute("SELECT sum(pgsize) FROM dbstat WHERE name LIKE 't_%'").fetchone()[0]
    conn.close()
    return seconds, size


def report(cmd, info, n_rows, total, seen):
    """The "build" section: median seconds and size per variant, and the target read on the archive's pair."""
    med = {name: statistics.median(s for s, _ in runs) for name, runs in seen.items()}
    base = med["unicode61"]
    L = [f"Command: `{cmd}`  ",
         f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory']} RAM; {info['os']}  ",
         f"Versions: SQLite {info['sqlite']}, APSW {info['apsw']}, Python {info['python']}, "
         f"cjk_tokenizer {info['cjk_tokenizer']}  ",
         f"Text: the first {n_rows:,} messages of the corpus, {total / 1e6:.1f} MB (content, reasoning, tool_name, "
         "tool_calls), inserted into one ordinary FTS5 table with one `executemany` in one transaction; "
         f"each variant built {len(next(iter(seen.values())))}× in alternating order, medians shown. "
         f"Archive settings = `indexing.FTS_SETTINGS` = `{FTS_SETTINGS}`.",
         "",
         "| variant | tokenize | FTS5 settings | build s | vs unicode61 | table / text |",
         "|---|---|---|---:|---:|---:|"]
    for name, tokenize, settings in VARIANTS:
        runs = seen[name]
        setting = ", ".join(f"{k} {v}" for k, v in settings.items()) or "defaults"
        L.append(f"| {name} | `{tokenize}` | {setting} | {med[name]:.2f} | {med[name] / base:.2f}× | "
                 f"{runs[0][1]:.3f}× |")
    ratio = med[ARCHIVE_CJK] / med[ARCHIVE_U61]
    floor = med[FLOOR] / med[ARCHIVE_U61]
    bigrams = med[ARCHIVE_BIGRAMS] / med[ARCHIVE_U61]
    merge16 = med["cjk+unigrams hashsize 16M automerge 16"] / med["unicode61 hashsize 16M automerge 16"]
    verdict = "met" if ratio <= TARGET else "**MISSED**"
    L += ["",
          f"- cjk index build with unigrams ≤ {TARGET:g}× unicode61's time, both as the archive creates them: "
          f"**{ratio:.2f}×** — {verdict}",
          f"- floor: FTS5 indexing the cjk token stream (tokenized beforehand, untimed) takes {floor:.2f}× "
          f"unicode61's build; the cjk tokenizer itself adds the rest "
          f"({(med[ARCHIVE_CJK] - med[FLOOR]) / med[ARCHIVE_CJK]:.0%} of the cjk build).",
          f"- without unigrams: the bigrams alone take {bigrams:.2f}× unicode61's build under the same settings, "
          + (f"over {TARGET:g}× before any unigram is added" if bigrams >= TARGET else
             f"leaving {TARGET - bigrams:.2f}× of the target for the unigrams")
          + f"; the colocated unigrams (one more token per CJK character) add {ratio - bigrams:.2f}× here.",
          f"- automerge 16 on both tables (fewer merges while building; a query then reads up to 15 segments "
          f"per level instead of 3): {merge16:.2f}×."]
    return "\n".join(L) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("jsonl")
    ap.add_argument("--mb", type=float, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="write the medians into RESULTS.md's build section")
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"))
    a = ap.parse_args(argv)
    rows, total = read_rows(a.jsonl, a.mb)
    print(f"{len(rows):,} rows, {total / 1e6:.1f} MB of text; load average {os.getloadavg()[0]:.1f}")
    streams = {"text": rows, "tokens": token_rows(rows)}
    work = tempfile.mkdtemp()
    seen = {name: [] for name, _, _ in VARIANTS}
    for rep in range(a.repeat):
        order = VARIANTS if rep % 2 == 0 else VARIANTS[::-1]
        for name, tokenize, settings in order:
            data = streams["tokens" if name == FLOOR else "text"]
            seconds, size = build(os.path.join(work, "b.db"), tokenize, settings, data)
            seen[name].append((seconds, size / total))
            print(f"{rep} {name}: {seconds:.2f} s, table {size / total:.3f}x the text", flush=True)
    base = statistics.median(s for s, _ in seen["unicode61"])
    print("medians:")
    for name, runs in seen.items():
        med = statistics.median(s for s, _ in runs)
        print(f"  {name}: {med:.2f} s ({med / base:.2f}x unicode61), table {runs[0][1]:.3f}x the text")
    if a.write:
        import bench_index

        cmd = " ".join(["python", "bench/bench_fts_settings.py", *(argv if argv is not None else sys.argv[1:])])
        results.update_section(a.results, "build", report(cmd, bench_index.machine_info(), len(rows), total, seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
