"""Han variant folding (``fold_variants 1``): recall and precision on a
Traditional/Simplified parallel sample, and what the option costs.

Method
------
Parallel sample.  Simplified sentences are drawn from jieba's word-frequency
list (bench/generate.py's Chinese vocabulary: real words at their corpus
frequencies, joined at random with Chinese punctuation), normalised to
Simplified with OpenCC's phrase-level ``t2s`` converter; each gets a
Traditional twin from OpenCC's phrase-level ``s2t`` converter (the ``opencc``
package, which picks 頭髮 vs 發展 and 以後 vs 皇后 by word, not by character).
Both twins are indexed, in one table per setting.

Queries.  Substrings of 1-4 characters are drawn from the Simplified sentences;
each is asked in both scripts: as it stands, and as the aligned substring of
the Traditional twin (OpenCC's conversion keeps lengths, so positions align;
sentences where it does not are skipped).

Truth.  A document is relevant to a query when its Traditional twin contains
the query's Traditional form: the phrase-level converter decides which
character a text means, so a query for 髮 (hair) is not answered by 發 (to
send) even though both are 发 in Simplified.  Retrieved = the rows the cjk
index returns for the query as a phrase.  Recall and precision are
micro-averaged over the queries, apart for 1-character queries (where a
one-to-many fold costs most) and longer ones; "differing" queries are those
whose two forms are not the same string (where folding can matter at all).
The sentences join random words, so a word boundary can make OpenCC convert a
character differently than inside a word (以后+来 -> 以後來 but 后来 ->
後來 elsewhere); such pairs show up as false hits or misses, as they would
in real text that splits the same way.

Cost.  The cjk index over bench/generate.py's archive corpus is built with
and without ``fold_variants 1`` (same text, rotated order, least of
--repeat), as in bench_index.py: build time and index size.  Build time is
this process's CPU time (the machine is shared: wall time would measure the
neighbours), wall time alongside.

    python bench/bench_variants.py                     # writes the "variants" section of bench/RESULTS.md
    python bench/bench_variants.py --smoke             # small, seconds; sanity checks only
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import apsw  # noqa: E402

import cjk_tokenizer  # noqa: E402
from cjk_tokenizer import schema  # noqa: E402

import bench_index  # noqa: E402
import generate  # noqa: E402
import results  # noqa: E402

PUNCT = ["，", "。", "、", "；", "？"]
TOKENIZE = {
    "cjk": schema.FTS_INDEXES["cjk"][1],
    "cjk fold_variants 1": schema.FTS_INDEXES["cjk"][1] + " fold_variants 1",
}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def _opencc():
    try:
        import opencc
    except ImportError as exc:
        raise SystemExit(f"bench_variants needs OpenCC's converter ({exc}): pip install opencc "
                         "(or pip install -e '.[bench]')") from None
    return opencc.OpenCC("t2s"), opencc.OpenCC("s2t"), getattr(opencc, "__version__", "?")


def parallel_sample(n: int, seed: int):
    """[(simplified, traditional)] of n sentences of equal length."""
    t2s, s2t, _ = _opencc()
    words = generate.Vocab(generate.load_jieba_words())
    rng = random.Random(seed)
    out, skipped = [], 0
    while len(out) < n:
        parts = []
        for _ in range(rng.randint(2, 4)):
            parts.append("".join(words.sample(rng, rng.randint(3, 8))))
            parts.append(rng.choice(PUNCT))
        simp = t2s.convert("".join(parts))
        trad = s2t.convert(simp)
        if len(trad) != len(simp):
            skipped += 1
            continue
        out.append((simp, trad))
    return out, skipped


def make_queries(pairs, k: int, seed: int):
    """[(simplified form, traditional form)] of k distinct aligned substrings (1-4 Han characters)."""
    rng = random.Random(seed + 1)
    seen, out = set(), []
    tries = 0
    while len(out) < k and tries < 50 * k:
        tries += 1
        simp, trad = rng.choice(pairs)
        n = rng.choice((1, 2, 2, 3, 3, 4))
        if len(simp) < n:
            continue
        i = rng.randrange(0, len(simp) - n + 1)
        qs, qt = simp[i:i + n], trad[i:i + n]
        if not all(cjk_tokenizer.is_cjk(c) for c in qs + qt) or qs in seen:
            continue
        seen.add(qs)
        out.append((qs, qt))
    return out


def _length_class(q):
    return "1" if len(q) == 1 else "2-4"


def recall_precision(pairs, queries):
    """{(setting, script, length class, subset): counts}; subset "all" or "differing"."""
    conn = cjk_tokenizer.load(apsw.Connection(":memory:"))
    docs = [s for s, _ in pairs] + [t for _, t in pairs]  # rowid i and i + n are twins
    n = len(pairs)
    for name, tok in TOKENIZE.items():
        t = "t_" + name.replace(" ", "_")
        conn.execute(f"CREATE VIRTUAL TABLE {t} USING fts5(body, tokenize='{tok}')")
        with conn:
            conn.executemany(f"INSERT INTO {t}(rowid, body) VALUES (?, ?)", enumerate(docs, 1))
    out = {}
    for name in TOKENIZE:
        t = "t_" + name.replace(" ", "_")
        for script in ("simplified", "traditional"):
            for lc in ("1", "2-4"):
                for subset in ("all", "differing"):
                    out[(name, script, lc, subset)] = {"tp": 0, "fp": 0, "fn": 0, "queries": 0}
        for qs, qt in queries:
            relevant = {i for i, (_, trad) in enumerate(pairs, 1) if qt in trad}
            relevant |= {i + n for i in relevant}
            for script, q in (("simplified", qs), ("traditional", qt)):
                expr = f'"{q}"*' if len(q) == 1 else f'"{q}"'  # as the product asks: X* finds every X
                got = {r[0] for r in conn.execute(f"SELECT rowid FROM {t} WHERE {t} MATCH ?", (expr,))}
                for subset in ("all", "differing"):
                    if subset == "differing" and qs == qt:
                        continue
                    c = out[(name, script, _length_class(qs), subset)]
                    c["queries"] += 1
                    c["tp"] += len(got & relevant)
                    c["fp"] += len(got - relevant)
                    c["fn"] += len(relevant - got)
    conn.close()
    return out


def _examples(pairs, queries, limit, misses: bool):
    """Aligned spellings behind the errors of fold_variants 1, as (Traditional query, spelling, sentences).

    misses: where a sentence's Traditional twin holds the query, the Simplified spelling there that
    does not fold like the query.  Otherwise (false hits): where a Simplified sentence holds the
    query's Simplified form, another Traditional spelling there that folds like the query."""
    from cjk_tokenizer._native import fold

    ex = []
    for qs, qt in queries:
        if misses and qs == qt:
            continue
        want = fold(qt, True)
        found = {}
        for simp, trad in pairs:
            hay, other_side, needle = (trad, simp, qt) if misses else (simp, trad, qs)
            i = hay.find(needle)
            while i >= 0:
                other = other_side[i:i + len(needle)]
                if (fold(other, True) != want) if misses else (other != qt and fold(other, True) == want):
                    found[other] = found.get(other, 0) + 1
                i = hay.find(needle, i + 1)
        if found:
            other, k = max(found.items(), key=lambda kv: kv[1])
            ex.append((qt, other, k))
        if len(ex) >= limit:
            break
    return ex


def tokenizer_cost(pairs, repeat: int, passes: int = 20):
    """CPU seconds to tokenize the parallel sample (both twins, ``passes`` times) with each setting,
    through APSW's Connection.fts5_tokenizer: the tokenizer alone, where the fold is a larger share."""
    conn = cjk_tokenizer.load(apsw.Connection(":memory:"))
    data = [d.encode("utf-8") for pair in pairs for d in pair]
    toks = {name: conn.fts5_tokenizer("cjk_unicode61", tok.split()[1:]) for name, tok in TOKENIZE.items()}
    times = {name: [] for name in TOKENIZE}
    order = list(TOKENIZE)
    for r in range(repeat):
        for name in order[r % 2:] + order[:r % 2]:
            tok = toks[name]
            c0 = time.process_time()
            for _ in range(passes):
                for d in data:
                    tok(d, apsw.FTS5_TOKENIZE_DOCUMENT, None)
            times[name].append(time.process_time() - c0)
    toks.clear()
    conn.close()
    return {"times": times, "bytes": sum(map(len, data)) * passes}


def build_cost(size: int, seed: int, repeat: int, workdir: str):
    os.makedirs(workdir, exist_ok=True)
    base = os.path.join(workdir, f"variants-{size}-{seed}.db")
    if not os.path.exists(base):
        log(f"generating {size / 1e6:.0f} MB corpus -> {base}")
        bench_index.build_base(base, size, seed)
    conn = bench_index.connect(base)
    text, rows, cjk = bench_index.text_bytes(conn)
    times = {name: [] for name in TOKENIZE}
    wall = {name: [] for name in TOKENIZE}
    sizes = {}
    cols = ", ".join(schema.FTS_COLUMNS)
    order = list(TOKENIZE)
    for r in range(repeat):
        for name in order[r % 2:] + order[:r % 2]:
            t = "fts_" + name.replace(" ", "_")
            conn.execute(f"DROP TABLE IF EXISTS {t}")
            conn.execute(f"CREATE VIRTUAL TABLE {t} USING fts5({cols}, content='messages', content_rowid='id', "
                         f"tokenize='{TOKENIZE[name]}')")
            t0, c0 = time.perf_counter(), time.process_time()
            with conn:
                conn.execute(f"INSERT INTO {t}({t}) VALUES ('rebuild')")
            times[name].append(time.process_time() - c0)
            wall[name].append(time.perf_counter() - t0)
            sizes[name] = bench_index.fts_size(conn, t)
            log(f"  {name}: {times[name][-1]:.2f} s CPU, {wall[name][-1]:.1f} s wall, {sizes[name] / 1e6:.1f} MB")
    conn.close()
    return {"text": text, "rows": rows, "cjk": cjk, "times": times, "wall": wall, "sizes": sizes}


def _pct(a, b):
    return f"{100 * a / b:.1f}%" if b else "n/a"


def report(cmd, info, args, n_pairs, skipped, n_queries, n_diff, rp, examples, misses, cost, cc_version):
    lines = [
        f"Command: `{cmd}`  ",
        f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory']} RAM; {info['os']}  ",
        f"Versions: SQLite {info['sqlite']}, APSW {info['apsw']}, Python {info['python']}, "
        f"cjk_tokenizer {info['cjk_tokenizer']}, OpenCC {cc_version}",
        "",
        "### Recall and precision on a Traditional/Simplified parallel sample",
        "",
        f"Sample: {n_pairs:,} Simplified sentences (jieba's words at their frequencies, seed {args.seed}) and their "
        f"Traditional twins from OpenCC's phrase-level `s2t` ({skipped} sentences skipped where the conversion "
        f"changed the length); {n_queries:,} queries of 1-4 characters, each asked in both scripts, "
        f"{n_diff:,} of them written differently in the two. Truth: the rows whose Traditional twin contains the "
        "query's Traditional form (both twins of such a sentence are relevant). The method is in the script's "
        "docstring.",
        "",
        "| table | query script | query length | queries (differing) | recall (all) | precision (all) | "
        "recall (differing) | precision (differing) |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for name in TOKENIZE:
        for script in ("simplified", "traditional"):
            for lc in ("1", "2-4"):
                a, d = rp[(name, script, lc, "all")], rp[(name, script, lc, "differing")]
                lines.append(
                    f"| {name} | {script} | {lc} | {a['queries']:,} ({d['queries']:,}) | "
                    f"{_pct(a['tp'], a['tp'] + a['fn'])} | {_pct(a['tp'], a['tp'] + a['fp'])} | "
                    f"{_pct(d['tp'], d['tp'] + d['fn'])} | {_pct(d['tp'], d['tp'] + d['fp'])} |"
                )
    lines += [
        "",
        "Misses under fold_variants 1 (Traditional query -> the Simplified spelling of a relevant sentence that "
        "does not fold to the same form, sentences): characters OpenCC converts by word but whose Traditional "
        "form the character table keeps as a character of its own, and word-boundary effects of the sample.",
        "",
    ]
    lines += [f"- {q} -> {o} ({k})" for q, o, k in misses] or ["- none in this sample"]
    lines += [
        "",
        "False hits under fold_variants 1 (Traditional query -> another Traditional spelling in the sample that "
        "folds to the same form, sentences): one-to-many folds merging characters the text tells apart.",
        "",
    ]
    lines += [f"- {q} -> {o} ({k})" for q, o, k in examples] or ["- none in this sample"]
    t, s = cost["times"], cost["sizes"]
    base, fold_ = "cjk", "cjk fold_variants 1"
    lines += [
        "",
        "### What the option costs",
        "",
        f"Corpus: bench/generate.py v{generate.GENERATOR_VERSION}, seed {args.seed}, "
        f"{cost['text'] / 1e6:.1f} MB of indexed text, {cost['rows']:,} messages, CJK ≈ "
        f"{100 * cost['cjk'] / max(1, cost['text']):.0f}% of the bytes. Build = 'rebuild' of an external-content "
        f"index over the archive's four columns, {args.repeat}× in rotated order, least CPU time shown (this "
        "process's; the machine is shared); size = its shadow tables' pages (dbstat).",
        "",
        "| index | build CPU s | vs cjk | index MB | vs cjk |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in (base, fold_):
        lines.append(f"| {name} | {min(t[name]):.2f} | {min(t[name]) / min(t[base]):.3f}× | "
                     f"{s[name] / 1e6:.1f} | {s[name] / s[base]:.4f}× |")
    lines += ["", "All builds, CPU s (wall s): " + "; ".join(
        f"{name} " + ", ".join(f"{x:.2f} ({w:.1f})" for x, w in zip(t[name], cost["wall"][name]))
        for name in TOKENIZE)]
    tt = cost["tokenizer"]["times"]
    mb = cost["tokenizer"]["bytes"] / 1e6
    lines += [
        "",
        f"The tokenizer alone (the parallel sample, all Han text, {mb:.0f} MB through APSW's "
        f"`fts5_tokenizer`, {args.repeat}× rotated, least CPU time): "
        + ", ".join(f"{name} {min(tt[name]):.2f} s ({mb / min(tt[name]):.1f} MB/s)" for name in TOKENIZE)
        + f" — fold_variants 1 costs {min(tt[fold_]) / min(tt[base]):.3f}× here, where every character is "
        "looked up; on the archive mix the build figure above is the one that counts.",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sentences", type=int, default=4000, help="parallel sentences (default 4000)")
    ap.add_argument("--queries", type=int, default=3000, help="queries (default 3000)")
    ap.add_argument("--size", default="100MB", help="corpus for the build cost (default 100MB)")
    ap.add_argument("--repeat", type=int, default=3, help="builds per setting (default 3)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workdir", default=os.path.join(HERE, "out"), help="databases go here (default bench/out)")
    ap.add_argument("--results", help="Markdown file to update (default bench/RESULTS.md; with --smoke: none)")
    ap.add_argument("--smoke", action="store_true", help="small sample, 2 MB corpus; sanity checks, no results")
    args = ap.parse_args(argv)
    if args.smoke:
        args.sentences, args.queries, args.size, args.repeat = 300, 200, "2MB", 1
    cmd = " ".join(["python bench/bench_variants.py", *(sys.argv[1:] if argv is None else argv)])
    _, _, cc_version = _opencc()
    pairs, skipped = parallel_sample(args.sentences, args.seed)
    queries = make_queries(pairs, args.queries, args.seed)
    n_diff = sum(1 for s, t in queries if s != t)
    log(f"{len(pairs)} sentence pairs, {len(queries)} queries ({n_diff} differing)")
    rp = recall_precision(pairs, queries)
    examples = _examples(pairs, queries, 8, misses=False)
    misses = _examples(pairs, queries, 8, misses=True)
    cost = build_cost(generate.parse_size(args.size), args.seed, args.repeat, args.workdir)
    cost["tokenizer"] = tokenizer_cost(pairs, args.repeat, passes=2 if args.smoke else 20)
    text = report(cmd, bench_index.machine_info(), args, len(pairs), skipped, len(queries), n_diff, rp, examples,
                  misses, cost, cc_version)
    print(text)
    # sanity: folding never loses what the plain table finds, and finds more across scripts
    for script in ("simplified", "traditional"):
        plain = [rp[("cjk", script, lc, "differing")] for lc in ("1", "2-4")]
        fv = [rp[("cjk fold_variants 1", script, lc, "differing")] for lc in ("1", "2-4")]
        assert all(f["tp"] >= p["tp"] for p, f in zip(plain, fv)), (script, plain, fv)
        assert sum(f["tp"] for f in fv) > sum(p["tp"] for p in plain) or n_diff == 0, (script, plain, fv)
    if args.results or not args.smoke:
        results.update_section(args.results or os.path.join(HERE, "RESULTS.md"), "variants", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
