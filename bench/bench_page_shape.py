"""Bounded relevance: meeting the page's hits again by a MATCH per hit, or by one walk over their rowids.

A relevance search over more matches than ``relevance_bound`` ranks the
newest of them, then meets its page's hits a second time (``cjk_match``
builds their snippets inside FTS5): either by one walk of the MATCH over the
page's rowid range (which holds about the bound's matches, each tested) or by
a MATCH per hit on its rowid (FTS5 seeks each term there, once in every
segment of the index).  search._seeks_hits picks the per-hit MATCH on an
index of one segment without prefix terms, from a bound of
search.SEEK_MIN_BOUND on (this script's bound sweep is where that comes
from).  It measures both statements, side by side in one run, on the same
messages imported two ways:

  * merged:   one import into an empty archive (it ends by merging each index
              into one segment);
  * appended: the same messages in ``--slices`` imports with
              ``optimize=False`` (FTS5's own merging leaves several segments,
              as an archive that grows by appends has).

For each term of ``bench_lean.pick_terms`` that matches more rows than the
default bound, both statements' p50 / p95, checked to return the same rows
(the run fails if they do not); then, on the merged archive, the same for
two frequent terms at each bound of ``SWEEP``.

    python bench/generate.py --size 100MB -o c100.jsonl
    python bench/bench_page_shape.py --jsonl c100.jsonl     # writes the "page" section of bench/RESULTS.md
    python bench/bench_page_shape.py --smoke                # ~1 MB, seconds; checks only, writes nothing
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import bench_index  # noqa: E402
import bench_lean  # noqa: E402
import bench_scaling  # noqa: E402
import results  # noqa: E402

from cjk_tokenizer import Archive  # noqa: E402
from cjk_tokenizer.search import SEEK_MIN_BOUND, _prepare, _seeks_hits, id_statements  # noqa: E402


SWEEP = (50, 200, 500, 1000, 2000, 5000)  # relevance_bound values for the merged archive's sweep


def build_appended(jsonl, path, slices, work):
    """The corpus imported in ``slices`` parts of equal text (bench_scaling.cut) without the final merge;
    returns the cjk index's segments."""
    with open(jsonl, encoding="utf-8") as f:
        total = sum(bench_scaling.line_text_bytes(line) for line in f)
    with Archive(path) as ar:
        for part, _ in bench_scaling.cut(jsonl, [total * (i + 1) // slices for i in range(slices)], work):
            ar.import_source(part, format="openai", optimize=False)
            os.remove(part)
        return ar.indexes.segments()["cjk"]


def both_shapes(ar, term, bound="default"):
    """(walk, seek, chosen) statements of the bounded relevance page for ``term`` (None if it is not bounded)."""
    conn = ar.conn
    prep = _prepare(conn, term, ar.indexes.live(), cjk_unigrams=True, relevance_bound=bound)
    if prep.floor is None or not prep.aux:
        return None
    kw = dict(sort="relevance", limit=20, filters=("", ()), aux=True, floor=prep.floor, bound=prep.bound,
              rank=prep.rank)
    walk = id_statements(prep.plan, **kw, seek_hits=False)[0]
    seek = id_statements(prep.plan, **kw, seek_hits=True)[0]
    return walk, seek, _seeks_hits(conn, prep.plan, prep.bound)


def measure(path, terms, runs, bounds=("default",)):
    out = []
    with Archive(path, auto_catch_up=0) as ar:
        conn = ar.conn
        for (kind, term), bound in ((t, b) for t in terms for b in bounds):
            shapes = both_shapes(ar, term, bound)
            if shapes is None:
                continue
            walk, seek, chosen = shapes
            rows = [conn.execute(st.sql, st.params).fetchall() for st in (walk, seek)]
            if rows[0] != rows[1]:
                raise SystemExit(f"{path}: the two page shapes disagree for {term!r}")
            row = {"kind": kind, "term": term, "chosen": "seek" if chosen else "walk", "rows": len(rows[0]),
                   "bound": bound}
            for name, st in (("walk", walk), ("seek", seek)):
                row[name] = bench_lean.timed(lambda: conn.execute(st.sql, st.params).fetchall(), runs)
            out.append(row)
            bench_lean.log(f"{os.path.basename(path)} {term} bound {bound}: walk {row['walk'][0]:.2f} ms, "
                           f"seek {row['seek'][0]:.2f} ms")
    return out


def fmt(cmd, info, sides, sweep, runs):
    L = [f"Command: `{cmd}`  ",
         f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory']} RAM; {info['os']}  ",
         f"Versions: SQLite {info['sqlite']}, APSW {info['apsw']}, Python {info['python']}, "
         f"cjk_tokenizer {info['cjk_tokenizer']}  ",
         f"The page statement of a bounded relevance search (top 20, `relevance_bound` default), both shapes "
         f"run on each archive ({runs} timed runs after one untimed, ms p50 / p95); each pair returned the "
         "same rows.",
         "",
         "| archive | cjk segments | class | term | walk over the range | MATCH per hit | per hit / walk | "
         "`Archive.search` takes |",
         "|---|---:|---|---|---:|---:|---:|---|"]
    for name, side in sides.items():
        for r in side["rows"]:
            w, s = r["walk"], r["seek"]
            L.append(f"| {name} | {side['segments']} | {r['kind']} | {r['term']} | {w[0]:.2f} / {w[1]:.2f} | "
                     f"{s[0]:.2f} / {s[1]:.2f} | {s[0] / w[0]:.2f}× | {r['chosen']} |")
    L += ["", "The same on the merged archive by `relevance_bound` (the walk's range holds about that many "
          "matches; the hits to meet are 20 whatever the bound):", "",
          "| term | bound | walk over the range | MATCH per hit | per hit / walk | `Archive.search` takes |",
          "|---|---:|---:|---:|---:|---|"]
    for r in sweep:
        w, s = r["walk"], r["seek"]
        L.append(f"| {r['term']} | {r['bound']:,} | {w[0]:.2f} / {w[1]:.2f} | {s[0]:.2f} / {s[1]:.2f} | "
                 f"{s[0] / w[0]:.2f}× | {r['chosen']} |")
    L += ["", _reading(sides, sweep)]
    return "\n".join(L) + "\n"


def _ratios(rows):
    return [r["seek"][0] / r["walk"][0] for r in rows]


def _reading(sides, sweep):
    """What the tables show, in figures from them."""
    spans = []
    for name, side in sides.items():
        got = _ratios(side["rows"])
        if got:
            spans.append(f"{min(got):.2f}-{max(got):.2f}× on the {name} archive (cjk segments: {side['segments']})")
    # the smallest swept bound from which the MATCH per hit is the cheaper for every term
    cross = None
    for bound in sorted({r["bound"] for r in sweep}, reverse=True):
        if max(_ratios([r for r in sweep if r["bound"] == bound])) >= 1:
            break
        cross = bound
    where = (f"from a bound of {cross:,} on, every term's MATCH per hit is the cheaper" if cross is not None
             else "at no bound swept is the MATCH per hit the cheaper for every term")
    return ("What this shows: meeting the page's 20 hits by a MATCH each costs, against the walk over the "
            f"default bound's range, {'; '.join(spans)}. `Archive.search` takes it on an index of one segment "
            "(what an import that doubles the archive, or `optimize()`, leaves) when the bound is at least "
            f"`search.SEEK_MIN_BOUND` ({SEEK_MIN_BOUND:,}). By bound, on the merged archive, {where}; a "
            "shorter range makes the walk the cheaper. A prefix term is never met per hit (FTS5 would merge the "
            "prefix again for each). The page statement is most of a bounded relevance search (the floor's "
            "walk and the Python layer are the rest); the `peers` section measures whole searches at 1 GB, "
            "where the index is one segment.")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    bench_lean.corpus_args(ap, runs=30)
    ap.add_argument("--slices", type=int, default=10)
    a = ap.parse_args(argv)
    work, jsonl, needles = bench_lean.corpus(a, "page")
    merged, appended = os.path.join(work, "page-merged.db"), os.path.join(work, "page-appended.db")
    for path in (merged, appended):
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
    bench_lean.build(jsonl, merged, {})
    with Archive(merged) as ar:
        ar.indexes.optimize()  # what the import's own merge does when it doubles the archive
        merged_segments = ar.indexes.segments()["cjk"]
    appended_segments = build_appended(jsonl, appended, a.slices, work)
    terms = bench_lean.pick_terms(merged, needles)
    runs = 3 if a.smoke else a.runs
    if a.smoke:  # every term is over a bound this small, so both shapes run on each
        import cjk_tokenizer.search as search

        search.RELEVANCE_BOUND = 5
    sides = {"merged": {"segments": merged_segments, "rows": measure(merged, terms, runs)},
             "appended": {"segments": appended_segments, "rows": measure(appended, terms, runs)}}
    frequent = [t for t in terms if t[1] in ("the", "一")]
    sweep = measure(merged, frequent, runs, SWEEP if not a.smoke else (2, 4))
    cmd = bench_lean.command("bench_page_shape.py", argv, jsonl)
    body = fmt(cmd, bench_index.machine_info(), sides, sweep, runs)
    print(body)
    if a.smoke:
        if merged_segments != 1 or appended_segments < 2 or not all(s["rows"] for s in sides.values()):
            raise SystemExit(f"smoke: expected one segment merged ({merged_segments}), several appended "
                             f"({appended_segments}), and bounded terms on both")
        shutil.rmtree(work)
        print("smoke ok")
        return 0
    results.update_section(a.results, "page", body)
    bench_lean.log(f"wrote the page section of {a.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
