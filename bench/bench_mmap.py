"""Reading an archive through a memory map (``Archive(mmap_size=...)``) against SQLite's reads by system call.

An archive opens with ``PRAGMA mmap_size`` set to ``constants.MMAP_SIZE``; ``mmap_size=0``
reads every page SQLite's own cache does not hold with a system call and a copy.
A message longer than a page spans overflow pages, which that cache does not
keep, so a search's hits and a LIKE scan read them from the OS each time.  This
script opens one archive twice, mapped and not, and times the same calls on
both in alternation (``timing.paired_cells``), each pair checked to return the
same results:

  * ``Archive.search`` newest first and by relevance, top 20, for each class of
    term of the peers section (``bench_peers.pick_terms``);
  * the LIKE scan newest first of a planted needle (it reads every message) and
    of the most frequent character (it stops after 20 hits).

    python bench/generate.py --size 1GB -o c1g.jsonl
    python bench/bench_mmap.py --jsonl c1g.jsonl     # writes the "mmap" section of bench/RESULTS.md
    python bench/bench_mmap.py --smoke               # ~1 MB, seconds; checks only, writes nothing
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import bench_index  # noqa: E402
import bench_lean  # noqa: E402
import bench_peers  # noqa: E402
import results  # noqa: E402
from bench_queries import fmt_setup, ms  # noqa: E402
from timing import paired_cells  # noqa: E402

from cjk_tokenizer import Archive  # noqa: E402
from cjk_tokenizer.constants import MMAP_SIZE  # noqa: E402


def _hits(found):
    return [(h.message_id, h.snippet, h.highlight, h.score) for h in found]


def measure(path, terms, runs):
    """Rows of {"what", "term", "mapped", "plain"} (cells), each pair checked equal."""
    rows = []
    with Archive(path, auto_catch_up=0) as mapped, Archive(path, auto_catch_up=0, mmap_size=0) as plain:
        if mapped.conn.execute("PRAGMA mmap_size").fetchone()[0] == 0:
            raise SystemExit("this SQLite does not map files (PRAGMA mmap_size stays 0): nothing to compare")
        calls = []
        for kind, term in terms:
            for sort in ("newest", "relevance"):
                calls.append((f"`Archive.search` {sort}, {kind}", term,
                              [lambda a=a, t=term, s=sort: _hits(a.search(t, sort=s, limit=20))
                               for a in (mapped, plain)]))
        needle = next((t for k, t in terms if k.startswith("needle")), None)
        common = next(t for k, t in terms if k == "1 char")
        for what, term in (("LIKE scan newest, needle (reads every message)", needle),
                           ("LIKE scan newest, most frequent character", common)):
            if term is not None:
                calls.append((what, term, [lambda a=a, t=term: bench_peers.like_newest(a.conn, t)
                                           for a in (mapped, plain)]))
        for what, term, fns in calls:
            (m, got_m), (p, got_p) = paired_cells(fns, runs)
            if got_m != got_p:
                raise SystemExit(f"{path}: mapped and plain reads disagree for {what} {term!r}")
            rows.append({"what": what, "term": term, "mapped": m, "plain": p, "n": len(got_m)})
            bench_lean.log(f"{what} {term}: mapped {ms(m['p50'])} ms, plain {ms(p['p50'])} ms")
    return rows


def _ratio(r):
    return r["mapped"]["p50"] / r["plain"]["p50"]


def fmt(cmd, info, corpus, rows, runs):
    L = [*fmt_setup(info, cmd).splitlines(),
         f"Corpus: {corpus}. One archive, opened twice: with its default `mmap_size` ({MMAP_SIZE:,} bytes) "
         f"and with `mmap_size=0`. Each call ran on both in alternation (up to {runs} rounds within about a "
         "second each, after one untimed round), and both returned the same results. ms p50 / p95:",
         "",
         "| call | term | rows | mapped | `mmap_size=0` | mapped / not |",
         "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        m, p = r["mapped"], r["plain"]
        L.append(f"| {r['what']} | {r['term']} | {r['n']} | {ms(m['p50'])} / {ms(m['p95'])} | "
                 f"{ms(p['p50'])} / {ms(p['p95'])} | {_ratio(r):.2f}× |")
    L += ["", _reading(rows)]
    return "\n".join(L) + "\n"


def _reading(rows):
    """What the table shows, in figures from it."""
    search = [_ratio(r) for r in rows if r["what"].startswith("`Archive.search`")]
    scans = [r for r in rows if r["what"].startswith("LIKE scan newest, needle")]
    scan = (f"the LIKE scan that reads every message takes {_ratio(scans[0]):.2f}× its time without the map; "
            if scans else "")
    return ("What this shows: read through the map, " + scan + "`Archive.search`, which reads a few pages per hit, "
            f"takes {min(search):.2f}-{max(search):.2f}× (median {statistics.median(search):.2f}×). The map spares a "
            "system call and a copy for each page SQLite's cache does not hold: a scan reads them all, and a long "
            "message's overflow pages are never kept. The archive opens mapped for the scan route (a host without "
            "the extension, or a query no index serves); `mmap_size=0` is for a file on a network or removable "
            "drive, where a read error in a mapped page stops the process (SIGBUS) instead of raising an error.")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    bench_lean.corpus_args(ap, runs=100)
    a = ap.parse_args(argv)
    work, jsonl, needles = bench_lean.corpus(a, "mmap")
    path = os.path.join(work, "mmap.db")
    built = bench_lean.build(jsonl, path, {})
    terms = bench_peers.pick_terms(path, needles)
    runs = 3 if a.smoke else a.runs
    rows = measure(path, terms, runs)
    cmd = bench_lean.command("bench_mmap.py", argv, jsonl)
    corpus = bench_lean.corpus_line(jsonl, built)
    body = fmt(cmd, bench_index.machine_info(), corpus, rows, runs)
    print(body)
    if a.smoke:
        kinds = {r["what"].split(",")[0] for r in rows}
        if not {"`Archive.search` newest", "`Archive.search` relevance", "LIKE scan newest"} <= kinds:
            raise SystemExit(f"smoke: expected searches both ways and the LIKE scans, got {sorted(kinds)}")
        shutil.rmtree(work)
        print("smoke ok")
        return 0
    results.update_section(a.results, "mmap", body)
    bench_lean.log(f"wrote the mmap section of {a.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
