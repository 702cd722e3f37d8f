"""bench/RESULTS.md: one file, one section per benchmark, each rewritten by its own script.

A section lies between ``<!-- section:KEY -->`` and ``<!-- /section:KEY -->``;
``update_section`` replaces only that span, so each benchmark can be re-run on
its own without touching the others' numbers.
"""
from __future__ import annotations

import os
import time

# key -> heading, in file order.  Add new benchmarks here.
SECTIONS = {
    "index": "Index build time, index size and tokenizer throughput",
    "queries": "Query latency by query class and route, vs LIKE",
    "scaling": "Latency against archive size",
    "ingest": "Ingest rate with all triggers on, peak memory",
    "lean": "Default archive before and after: size, ingest, one character, bounded relevance",
    "peers": "This project beside sqlite-cjk-fts and Hermes Agent's search, over the same messages",
    "build": "cjk index build time against unicode61, under the archive's FTS5 settings",
    "page": "Bounded relevance: a MATCH per hit or one walk over the page's rowids",
    "mmap": "Reading the archive through a memory map, against reads by system call",
    "variants": "Han variant folding: recall, precision and cost",
    "import": "Import rate per source format",
    "fallback": "The scan route without the extension, against a LIKE scan",
}

HEADER = """# Benchmark results

Every number here is measured by a script in `bench/`, side by side in one run on one machine, and each
section states the machine, the SQLite and APSW versions and the exact command that produced it. Speed
claims are ratios from the same run, never timings from unit tests. Corpora come from `bench/generate.py`
(deterministic: the same size and seed give the same archive). A section that says *not measured yet* has
no numbers behind it.
"""


def _markers(key):
    return f"<!-- section:{key} -->", f"<!-- /section:{key} -->"


def _skeleton():
    parts = [HEADER]
    for key, title in SECTIONS.items():
        begin, end = _markers(key)
        parts.append(f"## {title}\n\n{begin}\n*Not measured yet.*\n{end}\n")
    return "\n".join(parts)


def now_stamp():
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


def update_section(path, key, body, stamp=None):
    """Replace section ``key`` of the Markdown file at ``path`` with ``body`` (created if missing).

    ``stamp``: when the numbers were measured (default: now)."""
    if key not in SECTIONS:
        raise KeyError(f"unknown RESULTS.md section {key!r}; add it to bench/results.py SECTIONS")
    text = open(path, encoding="utf-8").read() if os.path.exists(path) else _skeleton()
    begin, end = _markers(key)
    stamp = stamp or now_stamp()
    block = f"{begin}\n_Measured {stamp}._\n\n{body.rstrip()}\n{end}"
    if begin in text and end in text:
        i = text.index(begin)
        j = text.index(end) + len(end)
        text = text[:i] + block + text[j:]
    else:
        text = text.rstrip() + f"\n\n## {SECTIONS[key]}\n\n{block}\n"
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
