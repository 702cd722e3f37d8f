"""The scan route beside a LIKE scan: what a search costs where no index can serve it.

An archive opened without the extension (``Archive(extension=False)``, as on a
host that cannot load it) cannot search its cjk index, and the default archive
has no trigram index, so every CJK term takes the scan route: instr() on each
searched column's raw text, and the Python fold (``cjk_fold``) only for the
rows whose raw text may hide the term: those holding a variation selector, and
for a term with characters written more than one way (half-width forms, voiced
marks) those holding a spelling of a piece of it.  This script times, on one
default archive, for each class of CJK term of the peers section plus a
katakana word (each of its characters has a half-width form), and for Latin
words, which take the unicode61 index and a Python check for the word glued to
CJK text:

  * ``Archive.search``, top 20, opened without the extension: newest first,
    and for Latin words by relevance too (the scan route orders by relevance
    newest first: it has no index to score with);
  * the LIKE scan newest first over the same columns, the baseline;
  * ``Archive.search`` with the extension (the cjk index), for scale;
  * for Latin words newest first, the search with first stretches of several
    sizes (search.WALK_FIRST's choice);
  * for one needle, the scan's walk as one statement (search.WALK_FIRST: a
    search walks messages in stretches of ids) with its selector test as a
    GLOB alone, which reads every row character by character; for one Latin
    word newest first, its walk as one stretch over every message, whose
    lookup reads the word's whole doclist; for one Latin word by relevance,
    one statement over every message, each scored row first.

Newest first, each search must return the messages the cjk index returns,
and each other shape the rows of the search it stands beside, or the run fails.

    python bench/generate.py --size 1GB -o c1g.jsonl
    python bench/bench_fallback.py --jsonl c1g.jsonl   # writes the "fallback" section of bench/RESULTS.md
    python bench/bench_fallback.py --smoke             # ~1 MB, seconds; checks only, writes nothing
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
import bench_peers  # noqa: E402
import generate  # noqa: E402
import results  # noqa: E402
from bench_queries import fmt_setup, ms  # noqa: E402
from timing import cell  # noqa: E402

from cjk_tokenizer import Archive, compiler, router, schema, search, spellings  # noqa: E402


def katakana_word(ar):
    """The generator's katakana word with the fewest matches (at least one) that has no character
    written one way only: its scan looks for the spellings of a piece of it."""
    t = schema.fts_table("cjk")
    counts = []
    for word in generate.JA_KATAKANA:
        if any(spellings.is_stable(c) for c in word):
            continue
        n = ar.conn.execute(f"SELECT count(*) FROM {t} WHERE {t} MATCH ?", (f'"{word}"',)).fetchone()[0]
        if n:
            counts.append((n, word))
    return min(counts)[1] if counts else None


SWEEP = (500, 2_000, 10_000, 50_000)  # first stretches tried beside search.WALK_FIRST's default


def with_first(first, fn):
    """``fn()`` with search.WALK_FIRST set to ``first`` (the search walks messages in stretches of ids,
    each reading only its own)."""
    saved = search.WALK_FIRST
    search.WALK_FIRST = first
    try:
        return fn()
    finally:
        search.WALK_FIRST = saved


def whole_walk(bare, term):
    """The statement of a newest-first search as one stretch over every message (an explained dict)."""
    return with_first(2**62, lambda: bare.explain(term, sort="newest", limit=20, sql=True)["sql"][0])


def glob_alone(st):
    """The statement ``st`` (an explained dict) with each column's selector test as a GLOB alone."""
    sql = st["sql"]
    for c in schema.FTS_COLUMNS:
        sql = sql.replace(compiler._has_selector(f"m.{c}"), f"m.{c} GLOB ?")
    return sql, tuple(st["params"])


def one_statement(explained):
    """The first statement of a combined relevance search (the scored rows that match; ``explained``:
    its Archive.explain with sql=True) as one statement over every message, each scored row first: the
    expression runs on every row, so its lookups read every rowid, not only those above the floor."""
    st, floor = explained["sql"][0], explained.get("rank_floor")
    params = list(st["params"])
    for i in range(len(params) - 1):
        if floor is not None and params[i:i + 2] == [floor + 1, router.MAX_ROWID]:
            params[i] = router.MIN_ROWID
    sql = st["sql"]
    for a, b in ((") SELECT m.id, NULL, sc.score FROM sc JOIN messages m ON m.id = sc.id WHERE ",
                  ") SELECT m.id, NULL, sc.score FROM messages m LEFT JOIN sc ON sc.id = m.id WHERE "),
                 (" ORDER BY sc.score, m.id DESC ", " ORDER BY ifnull(sc.score, 0.0), m.id DESC ")):
        if a not in sql:
            raise SystemExit(f"not the scored statement of a combined search: {sql[:200]}")
        sql = sql.replace(a, b)
    return sql, tuple(params)


def _ids(found):
    return [h.message_id for h in found]


def shape_cell(conn, sql, params, want, what, runs):
    """The cell of another shape of a search's statement, after checking it returns ``want``'s ids."""
    got, ids = cell(lambda: [r[0] for r in conn.execute(sql, params)], runs)
    if ids != want:
        raise SystemExit(f"{what} returns other rows than the search: {ids[:5]} against {want[:5]}")
    return got


def measure(path, needles, runs):
    """Rows of {"kind", "term", "sort", "route", "n", "scan", "like", "index", "glob"?, "one"?} (cells, each
    checked)."""
    with Archive(path, auto_catch_up=0) as ar:
        terms = bench_peers.pick_terms(path, needles)
        word = katakana_word(ar)
        if word:
            terms.append(("katakana word", word))
    rows = []
    with Archive(path, auto_catch_up=0, extension=False) as bare, Archive(path, auto_catch_up=0) as ar:
        if bare.extension_loaded:
            raise SystemExit("Archive(extension=False) loaded the extension: nothing to compare")
        glob_done = one_done = whole_done = False
        for kind, term in terms:
            route = bare.explain(term)["route"]
            like, _ = cell(lambda: bench_peers.like_newest(ar.conn, term), runs)
            # a CJK term's scan has nothing to rank by: by relevance it runs the same newest-first walk
            for sort in ("newest",) if bench_peers.is_cjk_class(kind) else ("newest", "relevance"):
                scan, got = cell(lambda: bare.search(term, sort=sort, limit=20), runs)
                index, want = cell(lambda: ar.search(term, sort=sort, limit=20), runs)
                # newest first both are the same messages; by relevance each ranks by its own index's bm25
                if (_ids(got) != _ids(want) if sort == "newest" else
                        len(got) != len(want) or not all(h.matched_in for h in got)):
                    raise SystemExit(f"{path}: without the extension, {sort} {term!r} disagrees with the cjk index")
                row = {"kind": kind, "term": term, "sort": sort, "route": route, "scan": scan, "like": like,
                       "index": index, "n": len(got)}
                if sort == "relevance" and not one_done:
                    sql, params = one_statement(bare.explain(term, limit=20, sql=True))
                    row["one"] = shape_cell(bare.conn, sql, params, _ids(got), f"one statement for {term!r}", runs)
                    one_done = True
                if sort == "newest" and route != "scan":  # the first stretch's size, by measurement
                    row["sweep"] = {}
                    for first in SWEEP:
                        row["sweep"][first], other = with_first(
                            first, lambda: cell(lambda: bare.search(term, sort=sort, limit=20), runs))
                        if _ids(other) != _ids(got):
                            raise SystemExit(f"a first stretch of {first} finds other rows for {term!r}")
                if sort == "newest" and route != "scan" and not whole_done:
                    st = whole_walk(bare, term)
                    row["whole"] = shape_cell(bare.conn, st["sql"], tuple(st["params"]), _ids(got),
                                              f"one stretch for {term!r}", runs)
                    whole_done = True
                if kind.startswith("needle") and not glob_done:
                    st = whole_walk(bare, term)
                    sql, params = glob_alone(st)
                    if sql == st["sql"]:
                        raise SystemExit(f"no selector test found in the scan's statement for {term!r}")
                    row["glob"] = shape_cell(bare.conn, sql, params, _ids(got), f"the GLOB for {term!r}", runs)
                    glob_done = True
                rows.append(row)
                bench_lean.log(f"{kind} {term} {sort} ({route}): no extension {ms(scan['p50'])} ms, LIKE "
                               f"{ms(like['p50'])} ms, index {ms(index['p50'])} ms"
                               + (f", GLOB {ms(row['glob']['p50'])} ms" if "glob" in row else "")
                               + (f", one stretch {ms(row['whole']['p50'])} ms" if "whole" in row else "")
                               + (f", one statement {ms(row['one']['p50'])} ms" if "one" in row else ""))
    return rows


def fmt(cmd, info, corpus, rows, runs, loops=None):
    L = [*fmt_setup(info, cmd).splitlines(),
         *([f"Speed: a Python loop of 10^6 additions takes {loops[0]:.0f} / {loops[1]:.0f} ms at start/end "
            "(`bench_index.loop_ms`: compare runs by it)  "] if loops else []),
         f"Corpus: {corpus}. The default archive (cjk and unicode61 indexes, no trigram), opened with "
         "`extension=False` and as usual. Each call: one warm-up run, up to "
         f"{runs} timed runs within about a second (2 for a call over 0.5 s, 1 over 3 s). `Archive.search`, top "
         "20, newest first, and by relevance for Latin words; the LIKE scan: ids, newest first, over content, "
         "tool_name and tool_calls (for a Latin word it also finds the word inside others, \"the\" in \"other\": a "
         "baseline of time only). Newest first, the search without the extension returned the messages the "
         "cjk index returns for every term; by relevance each ranks by its own index's bm25. ms p50 / p95:",
         "",
         "| term | class | sort | route without the extension | rows | without the extension | LIKE scan, newest | "
         "ratio | cjk index |",
         "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        s, lk, ix = r["scan"], r["like"], r["index"]
        ratio = f"{s['p50'] / lk['p50']:.2f}×" if r["sort"] == "newest" else ""
        L.append(f"| {r['term']} | {r['kind']} | {r['sort']} | {r['route']} | {r['n']} | "
                 f"{ms(s['p50'])} / {ms(s['p95'])} | {ms(lk['p50'])} / {ms(lk['p95'])} | {ratio} | "
                 f"{ms(ix['p50'])} / {ms(ix['p95'])} |")
    sweep = [r for r in rows if "sweep" in r]
    if sweep:
        L += ["", f"Choosing `search.WALK_FIRST` (default {search.WALK_FIRST:,}; each next stretch "
              f"{search.WALK_GROWTH}× as long): newest first without the extension, top 20, ms p50 / p95, by the "
              "first stretch's ids:", "",
              "| term | " + " | ".join(f"{f:,}" for f in SWEEP) + " |",
              "|---|" + "---:|" * len(SWEEP)]
        for r in sweep:
            L.append(f"| {r['term']} | " + " | ".join(f"{ms(r['sweep'][f]['p50'])} / {ms(r['sweep'][f]['p95'])}"
                                                     for f in SWEEP) + " |")
    L += ["", _reading(rows)]
    return "\n".join(L) + "\n"


def _reading(rows):
    """What the table shows, in figures from it."""
    cjk = [r for r in rows if r["route"] == "scan"]
    ratio = {id(r): r["scan"]["p50"] / r["like"]["p50"] for r in cjk}
    full = [r for r in cjk if r["n"] < 20]  # fewer than a page: both read every message
    page = [r for r in cjk if r["n"] == 20]
    out = ["What this shows: without the extension a CJK term takes the scan route;"]
    if full:
        lo, hi = min(ratio[id(r)] for r in full), max(ratio[id(r)] for r in full)
        worst = max(full, key=lambda r: r["scan"]["p50"])
        out.append(f"where it has fewer than 20 matches, the scan and the LIKE scan both read every message, the "
                   f"scan in {lo:.2f}-{hi:.2f}× the time ({worst['term']}: {ms(worst['scan']['p50'])} ms against "
                   f"{ms(worst['like']['p50'])} ms): it tests each column for the term (or each spelling of a piece "
                   "of it) and for the two bytes a variation selector starts with, a pass each where LIKE makes one "
                   "in all.")
    if page:
        lo, hi = min(ratio[id(r)] for r in page), max(ratio[id(r)] for r in page)
        out.append(f"Where the newest 20 come early, both stop there, and the search's time ({lo:.2f}-{hi:.2f}× "
                   "the LIKE scan's) is mostly its 20 hits with snippets, built in Python without the extension; "
                   "the LIKE scan returns ids.")
    glob = next((r for r in rows if "glob" in r), None)
    if glob:
        out.append(f"Its walk as one statement with the selector test as a GLOB alone takes "
                   f"{ms(glob['glob']['p50'])} ms for {glob['term']}, {glob['glob']['p50'] / glob['scan']['p50']:.1f}× "
                   "the scan route's: GLOB reads every row character by character, so the scan route runs it only "
                   "on the rows holding those two bytes.")
    words = [r for r in rows if r["route"] != "scan"]
    for sort in ("newest", "relevance"):
        got = [r["scan"]["p50"] for r in words if r["sort"] == sort]
        if got:
            out.append(f"A Latin word takes the unicode61 index, plus a Python check of the non-ASCII rows it does "
                       f"not find (for the word glued to CJK text): newest first, {ms(min(got))}-{ms(max(got))} ms, "
                       f"walking the messages in stretches of ids ({search.WALK_FIRST:,} first) whose index lookups "
                       "read only their own rowids." if sort == "newest" else
                       f"By relevance {ms(min(got))}-{ms(max(got))} ms: the rows unicode61 scores come first (their "
                       "lookups read only the rowids above the bound's floor), and when they fill the page no other "
                       "row is checked.")
    whole = next((r for r in rows if "whole" in r), None)
    if whole:
        out.append(f"The same walk as one stretch over every message takes {ms(whole['whole']['p50'])} ms for "
                   f"{whole['term']}, {whole['whole']['p50'] / whole['scan']['p50']:.1f}× the search: its lookup "
                   "reads the word's whole doclist into a list before the first row.")
    one = next((r for r in rows if "one" in r), None)
    if one:
        out.append(f"One statement over every message, each scored row first, takes {ms(one['one']['p50'])} ms for "
                   f"{one['term']} by relevance, against {ms(one['scan']['p50'])} ms for the search "
                   f"({one['one']['p50'] / one['scan']['p50']:.1f}×): it checks every row before it sorts.")
    out.append("The cjk index answers the same searches in the last column, which is why an archive loads the "
               "extension whenever the host can.")
    return " ".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    bench_lean.corpus_args(ap, runs=15)
    a = ap.parse_args(argv)
    work, jsonl, needles = bench_lean.corpus(a, "fallback")
    path = os.path.join(work, "fallback.db")
    built = bench_lean.build(jsonl, path, {})
    runs = 3 if a.smoke else a.runs
    loop0 = bench_index.loop_ms()
    rows = measure(path, needles, runs)
    loops = (loop0, bench_index.loop_ms())
    cmd = bench_lean.command("bench_fallback.py", argv, jsonl)
    corpus = bench_lean.corpus_line(jsonl, built)
    body = fmt(cmd, bench_index.machine_info(), corpus, rows, runs, loops)
    print(body)
    if a.smoke:
        kinds = {(r["kind"], r["sort"], r["route"]) for r in rows}
        want = {("2 chars", "newest", "scan"), ("katakana word", "newest", "scan"),
                ("Latin word", "relevance", "unicode61")}
        if not want <= kinds or not all(any(k in r for r in rows) for k in ("glob", "one", "whole")):
            raise SystemExit(f"smoke: expected {sorted(want)}, the GLOB, the one statement and the one stretch, "
                             f"got {sorted(kinds)}")
        shutil.rmtree(work)
        print("smoke ok")
        return 0
    results.update_section(a.results, "fallback", body)
    bench_lean.log(f"wrote the fallback section of {a.results}")
    os.remove(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
