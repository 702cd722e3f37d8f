"""Latency and size against archive size: this project beside sqlite-cjk-fts and a LIKE scan, 0.1 to 4 GB.

One corpus from bench/generate.py is cut into slices at the sizes named
(UTF-8 bytes of message text) and imported slice after slice into one archive,
as a history grows: ``Archive.import_source(slice, format="openai")`` with
today's defaults, including its rule of merging the indexes after an import
that at least doubles the archive.  sqlite-cjk-fts (built as
bench/bench_peers.py builds it) indexes a copy of the same messages, grown by
the same rows after each slice and merged (FTS5's 'optimize') whenever ours
was, so both are measured with their indexes in the same shape.  Hermes Agent
0.19.0 as it ships writes the first slice through its own ``SessionDB`` (its
writer takes minutes per 100 MB, so it has the first size only).

After each slice, the same terms (picked on the first slice as
bench/bench_peers.py picks them: 1-3 CJK characters, 3- and 4-character words,
planted needles present from the first slice on, Latin words) are timed, top
20: ``Archive.search`` by relevance and newest first (hits with snippets), the
raw FTS5 query ``Archive.explain`` names (ids only), sqlite-cjk-fts's MATCH by
rank and by rowid (ids only), and a LIKE scan newest first.  This project's
newest 20 must equal the LIKE scan's at every size, or the run fails.

    python bench/generate.py --size 4GB --seed 1 -o c4g.jsonl
    python bench/bench_scaling.py --jsonl c4g.jsonl       # writes the "scaling" section and latency_vs_size.png
    python bench/bench_scaling.py --smoke --no-peers      # a few MB, offline; checks only, writes nothing
    python bench/bench_scaling.py --report bench/out/scaling/scaling.json   # the section again, measuring nothing

Disk: about 4x the largest size's text for this project's archive and the copy sqlite-cjk-fts indexes.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from cjk_tokenizer import Archive, indexing, schema  # noqa: E402

import bench_index  # noqa: E402
import bench_lean  # noqa: E402
import bench_peers  # noqa: E402
import bench_queries  # noqa: E402
import generate  # noqa: E402
import results  # noqa: E402
from bench_queries import log, ms  # noqa: E402
from timing import cell  # noqa: E402

SEARCHED = schema.DEFAULT_COLUMNS
TEXT_FIELDS = schema.FTS_COLUMNS  # what the archive counts as text (Indexes.sizes()["text"])
# (key in a term's measurements, label, line style) for the plot and the tables
SERIES = [("search newest", "ours: Archive.search, newest", "o-"),
          ("search relevance", "ours: Archive.search, relevance", "s-"),
          ("raw newest", "ours: raw FTS5, newest", "o:"),
          ("raw relevance", "ours: raw FTS5, relevance", "s:"),
          ("cjkfts newest", "sqlite-cjk-fts, newest", "^-"),
          ("cjkfts relevance", "sqlite-cjk-fts, relevance", "v-"),
          ("like newest", "LIKE scan, newest", "x--")]


# ---- the corpus, cut into slices ------------------------------------------------

def line_text_bytes(line: str) -> int:
    """UTF-8 bytes of a JSONL message's indexed text, as the archive will store it."""
    obj = json.loads(line)
    n = 0
    for k in TEXT_FIELDS:
        v = obj.get(k)
        if v is None:
            continue
        n += len((v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)).encode("utf-8"))
    return n


def cut(jsonl, sizes, work):
    """Slices of ``jsonl`` ending where the text reaches each size; returns [(path, lines so far)].

    The corpus must reach the largest size (within 1%)."""
    out, k, total, lines, f = [], 0, 0, 0, None
    with open(jsonl, encoding="utf-8") as src:
        for line in src:
            if f is None:
                path = os.path.join(work, f"slice-{k + 1}.jsonl")
                f = open(path, "w", encoding="utf-8")
            f.write(line)
            lines += 1
            total += line_text_bytes(line)
            if total >= sizes[k]:
                f.close()
                f = None
                out.append((path, lines))
                k += 1
                if k == len(sizes):
                    break
    if f is not None:
        f.close()
        if total >= 0.99 * sizes[k]:
            out.append((path, lines))
    if len(out) < len(sizes):
        raise SystemExit(f"{jsonl} holds {total / 1e9:.2f} GB of text, less than the {sizes[-1] / 1e9:g} GB asked for")
    return out


def needles_within(jsonl, lines):
    """The corpus's planted needles that occur in its first ``lines`` messages, fewest occurrences first."""
    path = jsonl + ".needles.json"
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        needles = json.load(f)
    # generate.py: line N of the corpus holds message id N
    return sorted((n for n in needles if n["column"] == "content" and min(n["ids"]) <= lines),
                  key=lambda n: len(n["ids"]))


# ---- growing both indexes ---------------------------------------------------------

def grow_ours(path, slice_path):
    """Import one slice; returns what it did and what the archive then holds."""
    t0 = time.perf_counter()
    with Archive(path) as ar:
        report = ar.import_source(slice_path, format="openai")
        seconds = time.perf_counter() - t0
        ar.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        sizes = ar.indexes.sizes()
        return {"added": report.messages, "seconds": seconds,
                "merged": sorted(r for r, what in report.optimized.items() if what == "merged"),
                "messages": ar.conn.execute("SELECT max(id) FROM messages").fetchone()[0],
                "file": os.path.getsize(path), "text": sizes["text"], "cjk": sizes.get("cjk", 0),
                "unicode61": sizes.get("unicode61", 0), "cjk_segments": ar.indexes.segments()["cjk"]}


def grow_cjkfts(path, lib, ours, merge):
    """Copy the messages ours gained and index them with sqlite-cjk-fts; merge its index when ``merge``."""
    conn = bench_index.connect(path)
    t = "fts_cjkfts"
    cols = ", ".join(schema.FTS_COLUMNS)
    try:
        bench_peers.load_cjkfts(conn, lib)
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'messages'").fetchone():
            conn.execute(schema.SESSIONS_DDL)
            conn.execute(schema.MESSAGES_DDL)
            conn.execute(f"CREATE VIRTUAL TABLE {t} USING fts5({cols}, content='messages', content_rowid='id', "
                         "tokenize='cjk_bigram')")
        last = conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0]
        conn.execute("ATTACH ? AS a", (ours,))
        with conn:
            conn.execute("INSERT OR REPLACE INTO sessions SELECT * FROM a.sessions")
            conn.execute("INSERT INTO messages SELECT * FROM a.messages WHERE id > ?", (last,))
        conn.execute("DETACH a")
        t0 = time.perf_counter()
        with conn:
            conn.execute(f"INSERT INTO {t}(rowid, {cols}) SELECT id, {cols} FROM messages WHERE id > ?", (last,))
        out = {"seconds": time.perf_counter() - t0, "merge_seconds": None}
        if merge:
            t0 = time.perf_counter()
            with conn:
                conn.execute(f"INSERT INTO {t}({t}) VALUES ('optimize')")
            out["merge_seconds"] = time.perf_counter() - t0
        out["bytes"] = bench_index.fts_size(conn, t)
        out["segments"] = indexing.fts_segments(conn, t)
        return out
    finally:
        conn.close()


# ---- one size's queries ------------------------------------------------------------

def measure(path, fts_path, lib, terms, runs):
    """Per term: ours (search and raw, both sorts), sqlite-cjk-fts (both sorts), LIKE newest; ours' rows."""
    out = {}
    with Archive(path, auto_catch_up=0) as ar:
        bench_queries.warm(ar)
        t = schema.fts_table("cjk")
        for kind, term in terms:
            r = {}
            r["search relevance"], _ = cell(lambda: ar.search(term, limit=20), runs)
            r["search newest"], hits = cell(lambda: ar.search(term, sort="newest", limit=20), runs)
            raw = bench_queries.cjk_sql_only(ar, term, runs)
            r["raw relevance"], r["raw newest"] = raw.get("relevance"), raw.get("newest")
            r["like newest"], like_ids = cell(lambda: bench_peers.like_newest(ar.conn, term), runs)
            # a LIKE scan finds a Latin word inside others ("the" in "other"): the check is for CJK terms
            r["equal"] = [h.message_id for h in hits] == like_ids or not bench_peers.is_cjk_class(kind)
            match = ar.explain(term).get("match")
            r["rows"] = ar.conn.execute(f"SELECT count(*) FROM {t} WHERE {t} MATCH ?", (match,)).fetchone()[0] \
                if match else None
            out[term] = r
    if lib:
        got = bench_peers.measure_cjkfts(fts_path, lib, terms, runs)
        for term, c in got.items():
            out[term]["cjkfts relevance"], out[term]["cjkfts newest"] = c["relevance"], c["newest"]
    return out


# ---- report ------------------------------------------------------------------------

def _p50(c):
    return ms(c["p50"]) if c else ""


def fmt(data):
    info, points, terms, hermes = data["info"], data["points"], [tuple(t) for t in data["terms"]], data["hermes"]
    first = points[0]
    L = [f"Command: `{data['cmd']}`  ",
         f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory']} RAM; {info['os']}; load average at "
         f"start/end {data['load'][0]:.1f} / {data['load'][1]:.1f}  ",
         f"Versions: SQLite {info['sqlite']}, APSW {info['apsw']}, Python {info['python']}, cjk_tokenizer "
         f"{info['cjk_tokenizer']}; {data['cjkfts']}; {data['hermes_label']}  ",
         f"Corpus: `{os.path.basename(data['jsonl'])}` cut into {len(points)} slices, imported one after another "
         "into one archive (today's defaults: the cjk index with unigrams and unicode61; an import that at least "
         "doubles the archive ends by merging its indexes)."
         + (" sqlite-cjk-fts indexes a copy of the same messages, grown by the same rows and merged whenever ours "
            "was." if first.get("cjkfts") else "")
         + (f" Hermes holds the first slice only ({first['ours']['messages']:,} messages)." if hermes else ""),
         "", "Growth, after each slice (import seconds include the merge where there was one):", "",
         "| GB of text | messages | slice imported s | msg/s | merged | file / text | cjk index / text | cjk segments "
         "| sqlite-cjk-fts: insert s | merge s | its index / text | its segments |",
         "|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for p in points:
        o, c = p["ours"], p.get("cjkfts")
        cf = (f"{c['seconds']:.1f} | {'' if c['merge_seconds'] is None else format(c['merge_seconds'], '.1f')} | "
              f"{c['bytes'] / o['text']:.2f}× | {c['segments']}") if c else "not run | | |"
        L.append(f"| {o['text'] / 1e9:.2f} | {o['messages']:,} | {o['seconds']:.1f} | {o['added'] / o['seconds']:,.0f}"
                 f" | {', '.join(o['merged']) or 'no'} | {o['file'] / o['text']:.2f}× | {o['cjk'] / o['text']:.2f}× |"
                 f" {o['cjk_segments']} | {cf} |")
    unmerged = [p for p in points if not p["ours"]["merged"]]
    if unmerged:
        L += ["", "Where a slice added fewer messages than the archive held, the import did not merge: at " + ", ".join(
            f"{p['ours']['text'] / 1e9:.2f} GB ({p['ours']['cjk_segments']} cjk segments)" for p in unmerged)
            + " the indexes are as FTS5's automerge left them, and each query term is looked up once per segment "
            "(compare those rows' raw FTS5 columns with their neighbours')."]
    L += ["", "Top 20, p50 ms per size; `Archive.search` returns hits with snippets, the other columns ids only "
          "(raw FTS5 is the MATCH `Archive.explain` names). Rows: the messages our MATCH counts (equal to a LIKE "
          "scan's for CJK terms, as the `peers` section checks). Hermes' `search_messages` (snippets and context) "
          "on the first slice: " + ("; ".join(
              f"`{t}` {_p50(hermes['queries'][t]['newest'])} newest, {_p50(hermes['queries'][t]['relevance'])} "
              "relevance" for _, t in terms) + "." if hermes else "not run.")
          + " `Archive.search` keeps the parses of the queries it has seen (`query.parse`): only a query's first "
          "run parses it."]
    for kind in dict.fromkeys(k for k, _ in terms):
        L += ["", f"**{kind}**", "", "| term | GB | rows | " + " | ".join(label for _, label, _ in SERIES) + " |",
              "|---|---:|---:|" + "---:|" * len(SERIES)]
        for k, term in terms:
            if k != kind:
                continue
            for p in points:
                r = p["queries"][term]
                rows = "" if r["rows"] is None else f"{r['rows']:,}"
                L.append(f"| {term} | {p['ours']['text'] / 1e9:.2f} | {rows} | " +
                         " | ".join(_p50(r.get(key)) for key, _, _ in SERIES) + " |")
    L += ["", "The worst p95 of `Archive.search` at each size (the `peers` section's targets are read at 1 GB):", "",
          "| GB | newest first, any term | by relevance, any term | needles and 3-4 character words, either sort |",
          "|---:|---|---|---|"]
    for p in points:
        def worst(keys, kinds=None):
            c = [(p["queries"][t][key]["p95"], t) for k, t in terms for key in keys
                 if (kinds is None or k in kinds) and p["queries"][t].get(key)]
            w = max(c)
            return f"{ms(w[0])} (`{w[1]}`)"
        L.append(f"| {p['ours']['text'] / 1e9:.2f} | {worst(['search newest'])} | {worst(['search relevance'])} |"
                 f" {worst(['search newest', 'search relevance'], bench_peers.RARE_KINDS)} |")
    L += ["", "![latency against archive size](latency_vs_size.png)"]
    return "\n".join(L)


def plot(data, path):
    plt = bench_queries._plt()
    terms = [tuple(t) for t in data["terms"]]
    kinds = list(dict.fromkeys(k for k, _ in terms))
    cols = 4
    rows = (len(kinds) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(13, 3.3 * rows), dpi=80, squeeze=False)
    gbs = [p["ours"]["text"] / 1e9 for p in data["points"]]
    for ax, kind in zip(axes.flat, kinds):
        term = next(t for k, t in terms if k == kind)  # the class's first term
        for key, label, style in SERIES:
            ys = [p["queries"][term].get(key) for p in data["points"]]
            if all(ys):
                ax.plot(gbs, [y["p50"] * 1000 for y in ys], style, label=label, ms=4)
        if data["hermes"]:
            h = data["hermes"]["queries"][term]
            ax.plot([gbs[0]], [h["newest"]["p50"] * 1000], "P", color="black", label="Hermes search_messages, newest")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{kind} (its first term in the tables)", fontsize=9)  # CJK glyphs: not in the default font
        ax.set_xlabel("GB of text (log)", fontsize=8)
        ax.grid(alpha=0.3, which="both")
    for ax in list(axes.flat)[len(kinds):]:
        ax.axis("off")
    axes[0][0].set_ylabel("p50 latency, ms (log)")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower right", ncol=2)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ---- run -------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jsonl", help="a corpus written by bench/generate.py at least as large as the largest size")
    ap.add_argument("--sizes", default="100MB,500MB,1GB,2GB,4GB", help="archive sizes, ascending (text bytes)")
    bench_peers.shared_args(ap, os.path.join(HERE, "out", "scaling"), "scaling.json")  # --report: the plot too
    ap.add_argument("--no-peers", action="store_true", help="this project and LIKE only (offline)")
    ap.add_argument("--smoke", action="store_true", help="a few MB in a temp dir; checks only, writes nothing")
    a = ap.parse_args(argv)
    if a.report:
        data, body = bench_peers.load_report(a.report, "scaling.json", fmt)
        plot(data, os.path.join(os.path.dirname(os.path.abspath(a.results)), "latency_vs_size.png"))
        results.update_section(a.results, "scaling", body, stamp=data.get("measured"))
        log(f"wrote the scaling section of {a.results} from {a.report}")
        return 0
    sizes = [generate.parse_size(s) for s in a.sizes.split(",")]
    if sizes != sorted(sizes):
        raise SystemExit(f"--sizes must ascend: {a.sizes}")
    load0 = os.getloadavg()[0]
    work = tempfile.mkdtemp() if a.smoke else a.workdir
    os.makedirs(work, exist_ok=True)
    jsonl = a.jsonl
    if a.smoke:
        sizes = [300_000, 1_000_000, 2_000_000]
        jsonl = os.path.join(work, "smoke.jsonl")
        corpus = generate.Corpus(2_300_000, seed=1)
        generate.write_jsonl(corpus, jsonl)
        with open(jsonl + ".needles.json", "w", encoding="utf-8") as f:
            json.dump(corpus.needle_manifest(), f, ensure_ascii=False)
    elif not jsonl:
        raise SystemExit("--jsonl is required (a corpus from bench/generate.py), or --smoke")
    runs = 3 if a.smoke else a.runs
    ours, fts = os.path.join(work, "scaling-ours.db"), os.path.join(work, "scaling-cjkfts.db")
    for p in (ours, fts):
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(p + suffix):
                os.remove(p + suffix)
    t_start = time.perf_counter()
    slices = cut(jsonl, sizes, work)
    log(f"cut {jsonl} into {len(slices)} slices in {time.perf_counter() - t_start:.0f} s")
    lib = cc = None
    if not a.no_peers:
        lib, cc = bench_peers.cjkfts_library(a.cache)
    points, terms, hermes = [], None, None
    for k, (slice_path, lines) in enumerate(slices):
        p = {"ours": grow_ours(ours, slice_path)}
        log(f"slice {k + 1}: {p['ours']['text'] / 1e9:.2f} GB, imported in {p['ours']['seconds']:.0f} s, "
            f"merged: {p['ours']['merged'] or 'no'}")
        if lib:
            p["cjkfts"] = grow_cjkfts(fts, lib, ours, bool(p["ours"]["merged"]))
        if terms is None:
            terms = bench_peers.pick_terms(ours, needles_within(jsonl, lines))
            log("terms: " + ", ".join(f"{k_}: {t}" for k_, t in terms))
            if not a.no_peers:
                py = bench_peers.hermes_python(a.cache)
                hermes = bench_peers.run_hermes(py, slice_path, 1e9, terms, runs, work)
        p["queries"] = measure(ours, fts, lib, terms, runs)
        wrong = [t for t, r in p["queries"].items() if not r["equal"]]
        if wrong:
            raise SystemExit(f"at {p['ours']['text'] / 1e9:.2f} GB, Archive.search newest-first differs from the "
                             f"LIKE scan for {wrong}")
        points.append(p)
        os.remove(slice_path)  # imported; the corpus is the copy to keep
        log(f"slice {k + 1} measured; {time.perf_counter() - t_start:.0f} s so far")
    cmd = bench_lean.command("bench_scaling.py", argv, jsonl)
    data = {"measured": results.now_stamp(), "cmd": cmd, "info": bench_index.machine_info(), "jsonl": jsonl,
            "load": [load0, os.getloadavg()[0]], "terms": terms, "points": points, "hermes": hermes,
            "cjkfts": f"sqlite-cjk-fts 0.3.0 built with {cc}" if lib else "sqlite-cjk-fts not run (--no-peers)",
            "hermes_label": (f"hermes-agent {hermes['hermes_agent']} on Python {hermes['python']} with SQLite "
                             f"{hermes['sqlite']}") if hermes else "Hermes not run (--no-peers)"}
    with open(os.path.join(work, "scaling.json"), "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    body = fmt(data)
    print(body)
    log(f"{time.perf_counter() - t_start:.0f} s in all")
    if a.smoke:
        plot(data, os.path.join(work, "latency_vs_size.png"))
        with open(os.path.join(work, "scaling.json"), encoding="utf-8") as f:
            if fmt(json.load(f)) != body:
                raise SystemExit("--report would not write the section this run wrote")
        shutil.rmtree(work)
        print("smoke ok")
        return 0
    plot(data, os.path.join(os.path.dirname(os.path.abspath(a.results)), "latency_vs_size.png"))
    results.update_section(a.results, "scaling", body, stamp=data["measured"])
    log(f"wrote the scaling section of {a.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
