"""The default archive before and after: size, ingest, one-character and frequent-term queries.

Side by side in one run, on one corpus from bench/generate.py, two archives
built with the public API (``Archive`` + ``Archive.import_source``):

  * before: ``indexes=("cjk", "unicode61", "trigram"), cjk_unigrams=False``
    (what earlier versions created by default), searched with
    ``relevance_bound=None`` (every match scored, as earlier versions did);
  * after:  ``Archive(path)`` with today's defaults (cjk with the tokenizer
    option ``unigrams 1`` + unicode61; bm25 among the newest
    ``search.RELEVANCE_BOUND`` matches).

Reported: import time and messages/s, file size per part relative to the
text, and p50/p95 (ms) of top-20 ``Archive.search`` by relevance and newest
first for frequent one- and two-character CJK terms, frequent Latin words and
planted needles, plus the raw FTS5 newest-first query for one character
(``"X"*`` before, ``"X"`` after).  Checked, not timed: newest-first ids are
equal on both archives, and after's raw ``MATCH '"X"'`` equals a LIKE scan.
Last, the after archive's relevance latency for each bound in ``SWEEP`` (the
measurement behind ``search.RELEVANCE_BOUND``).

    python bench/generate.py --size 100MB -o /tmp/c100.jsonl
    python bench/bench_lean.py --jsonl /tmp/c100.jsonl              # writes the "lean" section of RESULTS.md
    python bench/bench_lean.py --smoke                              # ~1 MB, seconds, checks only
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import apsw  # noqa: E402

from cjk_tokenizer import Archive, search  # noqa: E402
from cjk_tokenizer._native import split_cjk  # noqa: E402

import generate  # noqa: E402
import results  # noqa: E402

SIDES = {
    "before": dict(open=dict(indexes=("cjk", "unicode61", "trigram"), cjk_unigrams=False), bound=None),
    "after": dict(open=dict(), bound="default"),
}
COLS = ("content", "reasoning", "tool_name", "tool_calls")


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


def build(jsonl, path, opts):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    t0 = time.perf_counter()
    with Archive(path, **opts) as ar:
        report = ar.import_source(jsonl, format="openai")
        seconds = time.perf_counter() - t0
        ar.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        parts = collections.Counter()
        for name, size in ar.conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
            part = next((r for r in ("cjk", "u61", "tri") if name.startswith(f"messages_fts_{r}")), None)
            parts[part or ("messages" if name == "messages" else "other")] += size
        text = ar.indexes.sizes()["text"]
    return {"messages": report.messages, "seconds": seconds, "msg_per_s": report.messages / seconds,
            "file": os.path.getsize(path), "text": text, "parts": dict(parts), "merged": report.merged(),
            "aside": report.built_aside}


def timed(fn, runs):
    fn()  # warm
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]


def pick_terms(path, needles):
    """Frequent CJK characters and bigrams and Latin words of a text sample, plus planted needles."""
    chars, pairs = collections.Counter(), collections.Counter()
    with Archive(path, auto_catch_up=0) as ar:
        for (text,) in ar.conn.execute("SELECT content FROM messages WHERE id % 7 = 0 AND content IS NOT NULL "
                                       "LIMIT 20000"):
            for is_cjk, run in split_cjk(text):
                if is_cjk:
                    chars.update(c for c in run if "\u4e00" <= c <= "\u9fff")  # Han: no width/voice folding
                    pairs.update(run[i:i + 2] for i in range(len(run) - 1))
    terms = [("1 char", c) for c, _ in chars.most_common(2)] + [("1 char", chars.most_common(300)[-1][0])]
    terms += [("2 chars", p) for p, _ in pairs.most_common(2)]
    terms += [("Latin word", w) for w in ("the", "error")]
    for kind in ("cjk2", "cjk4"):
        hit = next((n for n in needles if n.get("kind") == kind), None)
        if hit:
            terms.append((f"needle ({kind})", hit["text"]))
    return terms


def measure(paths, terms, runs):
    rows = []
    for kind, term in terms:
        row = {"kind": kind, "term": term}
        ids = {}
        for side, path in paths.items():
            bound = SIDES[side]["bound"]
            with Archive(path, auto_catch_up=0) as ar:
                kw = {} if bound == "default" else {"relevance_bound": bound}
                hits = ar.search(term, limit=20, **kw)
                row[f"{side} ranked_among"] = hits.ranked_among
                row[f"{side} relevance"] = timed(lambda: ar.search(term, limit=20, **kw), runs)
                row[f"{side} newest"] = timed(lambda: ar.search(term, sort="newest", limit=20), runs)
                ids[side] = [h.message_id for h in ar.search(term, sort="newest", limit=20)]
                if kind == "1 char":
                    match = f'"{term}"' if side == "after" else f'"{term}"*'
                    sql = ("SELECT rowid FROM messages_fts_cjk WHERE messages_fts_cjk MATCH ? "
                           "ORDER BY rowid DESC LIMIT 20")
                    row[f"{side} raw newest"] = timed(lambda: ar.conn.execute(sql, (match,)).fetchall(), runs)
                    row["matches"] = ar.conn.execute(
                        "SELECT count(*) FROM messages_fts_cjk WHERE messages_fts_cjk MATCH ?", (match,)).fetchone()[0]
        if ids["before"] != ids["after"]:
            raise SystemExit(f"newest-first ids differ for {term!r}: {ids['before'][:5]} vs {ids['after'][:5]}")
        rows.append(row)
        log(kind, term, {k: v for k, v in row.items() if k not in ("kind", "term")})
    return rows


SWEEP = (2_000, 5_000, 10_000, 20_000, None)


def sweep(path, terms, runs):
    """Relevance top 20 on the after archive for each bound, for the terms with the most matches."""
    out = []
    with Archive(path, auto_catch_up=0) as ar:
        for kind, term in terms:
            if kind not in ("1 char", "2 chars", "Latin word"):
                continue
            match = ar.explain(term)["match"]
            row = {"term": term, "matches": ar.conn.execute(
                "SELECT count(*) FROM messages_fts_cjk WHERE messages_fts_cjk MATCH ?", (match,)).fetchone()[0]}
            for bound in SWEEP:
                row[bound] = timed(lambda: ar.search(term, limit=20, relevance_bound=bound), runs)
            out.append(row)
            log("sweep", row)
    return out


def check_like(path, terms):
    """after: raw MATCH '"X"' returns exactly the rows a LIKE scan returns."""
    out = {}
    with Archive(path, auto_catch_up=0) as ar:
        for kind, term in terms:
            if kind != "1 char":
                continue
            got = {r[0] for r in ar.conn.execute(
                "SELECT rowid FROM messages_fts_cjk WHERE messages_fts_cjk MATCH ?", (f'"{term}"',))}
            like = " OR ".join(f"{c} LIKE ?" for c in COLS)
            want = {r[0] for r in ar.conn.execute(f"SELECT id FROM messages WHERE {like}", (f"%{term}%",) * 4)}
            if got != want:
                raise SystemExit(f"MATCH '\"{term}\"' != LIKE: {len(got)} vs {len(want)} rows")
            out[term] = len(got)
    return out


def fmt(cmd, load, info, builds, rows, like, swept):
    def x(n, text):
        return f"{n / text:.2f}x"

    out = [f"Command: `{cmd}`  ", f"Machine: {info}; load average at start/end: {load[0]} / {load[1]} "
           "(compare the two columns of one run: absolute times move with the machine's load between runs).", ""]
    out += ["| archive | messages | import s | msg/s | file / text | messages table | cjk | unicode61 | trigram |"
            " other |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for side, b in builds.items():
        p, t = b["parts"], b["text"]
        out.append(f"| {side} | {b['messages']:,} | {b['seconds']:.1f} | {b['msg_per_s']:,.0f} | {x(b['file'], t)} |"
                   f" {x(p.get('messages', 0), t)} | {x(p.get('cjk', 0), t)} | {x(p.get('u61', 0), t)} |"
                   f" {x(p.get('tri', 0), t)} | {x(p.get('other', 0), t)} |")
    out += ["", "Top 20 via `Archive.search`, ms p50 / p95 (relevance: before scores every match, after ranks "
            f"the newest {search.RELEVANCE_BOUND:,} when more match):", "",
            "| class | term | matches | relevance before | relevance after | ranked_among | newest before |"
            " newest after | raw SQL newest before (`\"X\"*`) | raw SQL newest after (`\"X\"`) |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def c(v):
        return "" if v is None else f"{v[0]:.2f} / {v[1]:.2f}"

    for r in rows:
        out.append(f"| {r['kind']} | {r['term']} | {r.get('matches', '')} | {c(r['before relevance'])} |"
                   f" {c(r['after relevance'])} | {r['after ranked_among'] or ''} | {c(r['before newest'])} |"
                   f" {c(r['after newest'])} | {c(r.get('before raw newest'))} | {c(r.get('after raw newest'))} |")
    out += ["", "Choosing `relevance_bound` (after archive): relevance top 20, ms p50 / p95, by bound:", "",
            "| term | matches | " + " | ".join(f"{b:,}" if b else "every match" for b in SWEEP) + " |",
            "|---|---:|" + "---:|" * len(SWEEP)]
    for r in swept:
        out.append(f"| {r['term']} | {r['matches']:,} | " + " | ".join(c(r[b]) for b in SWEEP) + " |")
    out += ["", "Checked in the same run: newest-first ids are equal on both archives for every term; on the "
            "after archive raw `MATCH '\"X\"'` returns exactly the rows of a LIKE scan over the four columns ("
            + ", ".join(f"{k}: {v:,} rows" for k, v in like.items()) + ")."]
    return "\n".join(out)


def command(script, argv, jsonl):
    """The command line a section shows: ``python bench/<script>`` and its arguments (``argv``, None:
    this process's), the corpus by its file name, since where it lay on the measuring machine means
    nothing to a reader."""
    args = argv if argv is not None else sys.argv[1:]
    return f"python bench/{script} " + " ".join(os.path.basename(x) if x == jsonl else x for x in args)


def corpus_line(jsonl, built):
    """The corpus as a section names it: file, messages, text and archive size (``built``: build's)."""
    return (f"`{os.path.basename(jsonl)}`, {built['messages']:,} messages, {built['text'] / 1e6:,.1f} MB of text, "
            f"archive {built['file'] / 1e6:,.0f} MB")


def corpus_args(ap, runs):
    """Add the arguments of a benchmark over one corpus to the parser ``ap`` (``runs``: --runs' default)."""
    ap.add_argument("--jsonl", help="a corpus written by bench/generate.py (default: generate --size)")
    ap.add_argument("--size", default="2MB")
    ap.add_argument("--runs", type=int, default=runs)
    ap.add_argument("--workdir", default=os.path.join(HERE, "out"))
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"))
    ap.add_argument("--smoke", action="store_true", help="~1 MB corpus in a temp dir; checks only, writes nothing")


def corpus(a, name):
    """(work folder, corpus path, needles) for the arguments ``a`` (corpus_args): the corpus is --jsonl,
    or one of --size (about 1 MB with --smoke) generated as ``name``-SIZE.jsonl into the work folder (a
    temporary one with --smoke) with its needle manifest beside it."""
    work = tempfile.mkdtemp() if a.smoke else a.workdir
    os.makedirs(work, exist_ok=True)
    jsonl = a.jsonl
    if jsonl is None:
        jsonl = os.path.join(work, f"{name}-{a.size}.jsonl")
        made = generate.Corpus(1_000_000 if a.smoke else generate.parse_size(a.size), seed=1)
        generate.write_jsonl(made, jsonl)
        with open(jsonl + ".needles.json", "w", encoding="utf-8") as f:
            json.dump(made.needle_manifest(), f, ensure_ascii=False)
    needles = []
    if os.path.exists(jsonl + ".needles.json"):
        with open(jsonl + ".needles.json", encoding="utf-8") as f:
            needles = json.load(f)
    return work, jsonl, needles


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    corpus_args(ap, runs=15)
    a = ap.parse_args(argv)
    load0 = os.getloadavg()[0]
    work, jsonl, needles = corpus(a, "lean")
    paths = {side: os.path.join(work, f"lean-{side}.db") for side in SIDES}
    builds = {}
    for side in SIDES:
        log("building", side)
        builds[side] = build(jsonl, paths[side], SIDES[side]["open"])
        log(side, builds[side])
    terms = pick_terms(paths["after"], needles)
    rows = measure(paths, terms, 3 if a.smoke else a.runs)
    like = check_like(paths["after"], terms)
    swept = sweep(paths["after"], terms, 3 if a.smoke else a.runs)
    if a.smoke:
        print("smoke ok", json.dumps({s: round(b["file"] / b["text"], 2) for s, b in builds.items()}))
        return 0
    cmd = "python bench/bench_lean.py " + " ".join(argv if argv is not None else sys.argv[1:])
    info = (f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"SQLite {apsw.sqlite_lib_version()}, APSW {apsw.apsw_version()}")
    body = fmt(cmd, (f"{load0:.1f}", f"{os.getloadavg()[0]:.1f}"), info, builds, rows, like, swept)
    results.update_section(a.results, "lean", body)
    print(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
