"""Memory: the tokenizer and cjk_match allocate through the host's SQLite
(its heap limit and accounting apply), stay bounded on long input, and keep
nothing that points into memory a connection owns, so a tokenizer object may
outlive the connection that made it.

The heap figures come from the host's own accounting (``apsw.memory_used``
and ``apsw.memory_high_water``), which sees exactly what goes through
sqlite3_malloc64.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import apsw
import pytest

DOCUMENT = apsw.FTS5_TOKENIZE_DOCUMENT

# ---- a tokenizer outliving its connection ------------------------------------------

_OUTLIVE_SCRIPT = textwrap.dedent(r"""
    import apsw, cjk_tokenizer

    c2 = apsw.Connection(":memory:")  # opened first, so nothing below needs new memory but the churn
    c = apsw.Connection(":memory:")
    cjk_tokenizer.load(c)
    tok = c.fts5_tokenizer("cjk_unicode61", ["remove_diacritics", "2"])
    c.close()  # FTS5's per-connection records (its table of tokenizers) are freed here
    # Reuse that memory at once: SQLite buffers of every nearby size, full of
    # random bytes, kept alive by cursors parked on their row.
    held = []
    for n in range(8, 512, 8):
        for _ in range(8):
            cur = c2.execute("SELECT randomblob(?)", (n,))
            next(cur)
            held.append(cur)
    print(repr(tok("Crème 中文 ＡＢ".encode(), apsw.FTS5_TOKENIZE_DOCUMENT, None)))
    del tok
    print("clean")
""")


def test_tokenizer_outliving_its_connection_is_safe():
    # A subprocess: reading freed memory crashes it (or, in the ASan stage,
    # makes ASan abort it) instead of the test run.
    proc = subprocess.run([sys.executable, "-c", _OUTLIVE_SCRIPT], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-3000:])
    lines = proc.stdout.splitlines()
    assert lines[-1] == "clean"
    assert eval(lines[0]) == [(0, 6, "creme"), (7, 13, "中文", "文"), (14, 20, "ab")]


# ---- allocations go through the host -----------------------------------------------

def _peak_during(fn):
    """Bytes the host's heap grew by at its peak while fn() ran."""
    apsw.memory_high_water(True)
    before = apsw.memory_used()
    fn()
    return apsw.memory_high_water() - before


def test_host_heap_limit_applies_to_the_tokenizer(conn):
    # Folding full-width text needs a copy: with a hard heap limit too small
    # for it, the host's allocator says no and the call fails cleanly
    # (rather than the extension taking memory the limit does not see).
    tok = conn.fts5_tokenizer("cjk_unicode61", [])
    data = "Ｈｅｌｌｏ ".encode() * 40000
    assert tok(data, DOCUMENT, None)[:1] == [(0, 15, "hello")]
    previous = apsw.hard_heap_limit(apsw.memory_used() + 64 * 1024)
    try:
        with pytest.raises(apsw.NoMemError):
            tok(data, DOCUMENT, None)
    finally:
        apsw.hard_heap_limit(previous)
    assert len(tok(data, DOCUMENT, None)) == 40000


def test_cjk_match_memory_is_accounted_by_the_host(conn):
    # A window as wide as the column makes cjk_match decode all of it (a code
    # point and a byte offset per character, plus the JSON): memory the
    # host's accounting must see.
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='cjk_unicode61')")
    n_chars = 200_000
    conn.execute("INSERT INTO t VALUES (?)", ("大别山项目" * (n_chars // 5),))

    def run(width):
        res = conn.execute("SELECT cjk_match(t, 'x', ?) FROM t WHERE t MATCH '项目'", (width,)).get
        assert json.loads(res)["column"] == "x"

    narrow = _peak_during(lambda: run(20))
    wide = _peak_during(lambda: run(n_chars))
    assert wide - narrow >= 8 * n_chars, (narrow, wide)


def test_cjk_match_fails_cleanly_wherever_the_host_runs_out_of_memory(conn):
    # Heap limits from what is in use up to the call's peak and a little
    # more: each allocation of cjk_match (its arena's blocks, the one for a
    # window wider than a block, the token and result buffers) in turn is the
    # one refused.
    # A call either fails with SQLite's out-of-memory error or returns what
    # it returns without a limit; the connection works on afterwards.
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, y, tokenize='cjk_unicode61')")
    text = "前言。" + "大别山项目管理，" * 3000 + "结束"
    conn.execute("INSERT INTO t VALUES (?, ?)", (text, "项目 in y"))
    sql = "SELECT cjk_match(t, 'x,y', ?) FROM t WHERE t MATCH '项目 OR 管理'"
    want = {width: conn.execute(sql, (width,)).get for width in (40, 20_000)}
    seen = set()
    for width, expected in want.items():
        peak = _peak_during(lambda: conn.execute(sql, (width,)).get)
        for slack in range(0, peak + 64 * 1024, peak // 120):
            previous = apsw.hard_heap_limit(apsw.memory_used() + slack)
            try:
                got = conn.execute(sql, (width,)).get
            except apsw.NoMemError:
                seen.add("refused")
            else:
                seen.add("answered")
                assert got == expected, (width, slack)
            finally:
                apsw.hard_heap_limit(previous)
    assert seen == {"refused", "answered"}
    assert {w: conn.execute(sql, (w,)).get for w in want} == want


# ---- bounded memory on long input --------------------------------------------------

def test_fullwidth_folding_memory_is_bounded(conn):
    # One long line (no newline to split at) holding a full-width letter:
    # folding copies it a bounded piece at a time, not whole (which would cost
    # five bytes per input byte).
    tok = conn.fts5_tokenizer("cjk_unicode61", [])
    line = "Ａ " + "word-" * (4 * 1024 * 1024 // 5)
    data = line.encode()
    toks = []
    peak = _peak_during(lambda: toks.append(tok(data, DOCUMENT, None, include_offsets=False)))
    assert len(toks[0]) == 1 + 4 * 1024 * 1024 // 5
    assert peak < 1024 * 1024, f"folding an {len(data)}-byte line took {peak} bytes of heap at peak"
