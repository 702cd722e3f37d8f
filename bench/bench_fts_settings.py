"""Build time and size of one FTS5 table under tokenizer options and FTS5 settings, side by side.

Reads the first MB of text of a corpus written by bench/generate.py, then
builds, in alternating order ``--repeat`` times, one ordinary FTS5 table
(content stored in it) per variant in ``VARIANTS`` with a single
``executemany`` in one transaction, and prints seconds and table bytes (dbstat)
per byte of text; the medians per variant come last.  This is the measurement
behind indexing.FTS_SETTINGS and the unigram cost quoted in RESULTS.md.

    python bench/generate.py --size 100MB -o c100.jsonl
    python bench/bench_fts_settings.py c100.jsonl --mb 10 --repeat 3
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

VARIANTS = [
    ("unicode61", "unicode61 remove_diacritics 2", {}),
    ("cjk", "cjk_unicode61 remove_diacritics 2", {}),
    ("cjk+unigrams", "cjk_unicode61 remove_diacritics 2 unigrams 1", {}),
    ("cjk+unigrams hashsize 16M", "cjk_unicode61 remove_diacritics 2 unigrams 1", {"hashsize": 16 * 2**20}),
    ("cjk+unigrams hashsize 16M automerge 8", "cjk_unicode61 remove_diacritics 2 unigrams 1",
     {"hashsize": 16 * 2**20, "automerge": 8}),
    ("cjk+unigrams pgsz 4072", "cjk_unicode61 remove_diacritics 2 unigrams 1", {"pgsz": 4072}),
]


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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("jsonl")
    ap.add_argument("--mb", type=float, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    rows, total = read_rows(a.jsonl, a.mb)
    print(f"{len(rows):,} rows, {total / 1e6:.1f} MB of text; load average {os.getloadavg()[0]:.1f}")
    work = tempfile.mkdtemp()
    seen = {name: [] for name, _, _ in VARIANTS}
    for rep in range(a.repeat):
        order = VARIANTS if rep % 2 == 0 else VARIANTS[::-1]
        for name, tokenize, settings in order:
            seconds, size = build(os.path.join(work, "b.db"), tokenize, settings, rows)
            seen[name].append((seconds, size / total))
            print(f"{rep} {name}: {seconds:.2f} s, table {size / total:.3f}x the text", flush=True)
    base = statistics.median(s for s, _ in seen["unicode61"])
    print("medians:")
    for name, runs in seen.items():
        med = statistics.median(s for s, _ in runs)
        print(f"  {name}: {med:.2f} s ({med / base:.2f}x unicode61), table {runs[0][1]:.3f}x the text")
    return 0


if __name__ == "__main__":
    sys.exit(main())
