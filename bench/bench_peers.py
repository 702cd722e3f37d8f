"""This project beside the peers a user would pick instead, over the same messages in one run.

On one corpus from bench/generate.py (OpenAI-style JSONL), side by side:

  * this project: ``Archive(path)`` with today's defaults (the cjk index with
    ``unigrams 1`` + unicode61) filled by ``Archive.import_source(jsonl,
    format="openai")``; ``Archive.search(q, limit=20)`` by relevance and with
    ``sort="newest"``, and the raw FTS5 query ``Archive.explain`` names for it
    (ids only: ``ORDER BY rowid DESC`` and ``ORDER BY`` its bm25);
  * sqlite-cjk-fts 0.3.0 (its ``cjk_bigram`` tokenizer): the wheel is fetched
    with ``pip download`` into the cache, its shipped ``cjk_tokenizer.c`` is
    compiled with the system ``cc -O2 -shared -fPIC`` and loaded into APSW;
    an external-content FTS5 table over the same four text columns, queried
    as its documentation writes queries (the term itself as the MATCH string;
    here quoted and limited to the columns the others search by default:
    content, tool_name, tool_calls), top 20 by ``rank`` and by rowid;
  * Hermes Agent 0.19.0 as it ships (``pip install hermes-agent==0.19.0`` into
    a virtual environment in the cache): bench/hermes_worker.py writes a
    ``state.db`` through ``SessionDB.create_session`` / ``append_message`` from
    the first ``--hermes-mb`` MB of text of the same messages and times
    ``SessionDB.search_messages(q, limit=20)`` and ``sort="newest"``;
  * the baseline: a LIKE scan, top 20 newest first, over content, tool_name and
    tool_calls (the columns all three search by default).

Query classes, the same terms for every system: one CJK character (the two
most frequent and the 300th), a 2-character word, 3- and 4-character words, a
planted needle of 2 and of 4 characters, Latin words.  Reported: p50/p95 (ms)
per system and sort, and ratios from the same run (ours raw over the faster
peer; ``Archive.search`` over ``search_messages``, both returning hits with
snippets); the FTS5 build time
and index size per byte of text of cjk_unicode61 (as the archive creates it and
with the tokenizer's default options), unicode61, trigram and sqlite-cjk-fts
over the same text; each system's ingest.  Checked, not timed, for the CJK
terms: each system's newest 20 against the LIKE scan's newest 20 (Hermes: over
the messages it holds), and the number of matching messages where a system can
count them.  This project's newest 20 must equal LIKE's, or the run fails.

    python bench/generate.py --size 1GB -o /tmp/c1g.jsonl
    python bench/bench_peers.py --jsonl /tmp/c1g.jsonl --hermes-mb 200   # writes the "peers" section
    python bench/bench_peers.py --smoke --no-peers       # ~1 MB, offline, seconds; checks only, writes nothing

The peers are fetched and built once into ``--cache`` (~/.cache/cjk_tokenizer-bench).  Hermes' write goes
message by message, one transaction each, as Hermes writes: it is the slow part at a large ``--hermes-mb``.
The seconds each part took are logged at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

import apsw  # noqa: E402

from cjk_tokenizer import Archive, schema, search  # noqa: E402
from cjk_tokenizer.cli import _positive_int  # noqa: E402
from cjk_tokenizer.indexing import FTS_SETTINGS  # noqa: E402

import bench_index  # noqa: E402
import bench_lean  # noqa: E402
import bench_queries  # noqa: E402
import generate  # noqa: E402
import results  # noqa: E402
from bench_queries import cell as fmt_cell, log, ms  # noqa: E402
from timing import cell, paired_cells  # noqa: E402

CJKFTS = "sqlite-cjk-fts==0.3.0"
HERMES = "hermes-agent==0.19.0"
SEARCHED = schema.DEFAULT_COLUMNS
LIKE_WHERE = "(" + " OR ".join(f"{c} LIKE ?" for c in SEARCHED) + ")"
# name -> (label, tokenize=, FTS5 settings); each an external-content FTS5 table over the same text.
# The two "archive" builds are the indexes an import writes, as the archive configures them: the
# build target compares them, and they bound the ingest rate.
ARCHIVE_CJK = f"{schema.FTS_INDEXES['cjk'][1]} {schema.CJK_UNIGRAMS}"
TOKENIZERS = {
    "cjk_default": ("cjk_unicode61 as the archive creates it (unigrams 1)", ARCHIVE_CJK, None),
    "cjk_archive": ("the same, with the archive's FTS5 settings", ARCHIVE_CJK, FTS_SETTINGS),
    "cjk": ("cjk_unicode61, the tokenizer's default options", bench_index.VARIANTS["cjk"][0], None),
    "cjk_bigrams": ("cjk_unicode61 without unigrams (bigrams only), with the archive's FTS5 settings",
                    bench_index.VARIANTS["cjk"][0], FTS_SETTINGS),
    "unicode61": ("unicode61", bench_index.VARIANTS["unicode61"][0], None),
    "u61_archive": ("unicode61 with the archive's FTS5 settings", schema.FTS_INDEXES["unicode61"][1],
                    FTS_SETTINGS),
    "trigram": ("trigram", bench_index.VARIANTS["trigram"][0], None),
    "cjkfts": ("sqlite-cjk-fts (cjk_bigram)", "cjk_bigram", None),
}


# ---- peers, fetched and built at bench time into the cache -------------------

def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return p.stdout


def cjkfts_library(cache):
    """sqlite-cjk-fts's shipped C source compiled here; returns (path of the .so, compiler version)."""
    root = os.path.join(cache, CJKFTS.replace("==", "-"))
    lib = os.path.join(root, "libcjkfts.so")
    cc = run(["cc", "--version"]).splitlines()[0]
    if not os.path.exists(lib):
        os.makedirs(root, exist_ok=True)
        run([sys.executable, "-m", "pip", "download", "--no-deps", CJKFTS, "-d", root])
        wheel = next(f for f in os.listdir(root) if f.endswith(".whl"))
        with zipfile.ZipFile(os.path.join(root, wheel)) as z:
            z.extractall(root)
        # the wheel ships a macOS binary only; the C file beside it is the tokenizer's source
        source = os.path.join(root, "sqlite_cjk_fts", "cjk_tokenizer.c")
        run(["cc", "-O2", "-shared", "-fPIC", "-o", lib + ".tmp", source])
        os.replace(lib + ".tmp", lib)
    return lib, cc


def load_cjkfts(conn, lib):
    conn.enable_load_extension(True)
    conn.load_extension(lib, "sqlite3_cjkfts_init")


def hermes_python(cache):
    """The Python of a virtual environment with hermes-agent installed from the package index."""
    venv = os.path.join(cache, HERMES.replace("==", "-"))
    py = os.path.join(venv, "bin", "python")
    probe = [py, "-c", "import hermes_state, importlib.metadata as m; print(m.version('hermes-agent'))"]
    if os.path.exists(py) and subprocess.run(probe, capture_output=True).returncode == 0:
        return py
    log(f"creating {venv} and installing {HERMES} (once; kept in the cache)")
    run([sys.executable, "-m", "venv", venv])
    run([py, "-m", "pip", "install", "-q", HERMES])
    run(probe)
    return py


def run_hermes(py, jsonl, mb, terms, runs, work):
    home = tempfile.mkdtemp(prefix="hermes-home-", dir=work)
    spec = os.path.join(home, "spec.json")
    with open(spec, "w", encoding="utf-8") as f:
        json.dump({"jsonl": os.path.abspath(jsonl), "mb": mb, "home": home, "terms": [t for _, t in terms],
                   "runs": runs}, f, ensure_ascii=False)
    env = dict(os.environ, HERMES_HOME=home)
    env.pop("PYTHONPATH", None)  # the worker must not see this project's package
    # its progress goes straight to our stderr: writing a large state.db message by message takes a while
    p = subprocess.run([py, os.path.join(HERE, "hermes_worker.py"), spec], stdout=subprocess.PIPE, text=True,
                       cwd=home, env=env)
    if p.returncode:
        raise SystemExit(f"the Hermes worker exited {p.returncode}")
    shutil.rmtree(home)  # its state.db is several times the text it holds
    out = json.loads(p.stdout.strip().splitlines()[-1])
    if out["imported_cjk_tokenizer"]:
        raise SystemExit("the Hermes worker imported cjk_tokenizer: it must measure Hermes alone")
    return out


# ---- the same text under each tokenizer ---------------------------------------

def build_tokenizers(archive, path, lib, merge=False):
    """A copy of the archive's messages in ``path`` and one FTS5 build per tokenizer over it.

    Returns ({name: {"seconds", "bytes"}}, text bytes).  Only the sqlite-cjk-fts
    table is kept: the queries use it; with ``merge`` it is then merged into one
    segment (FTS5's 'optimize', its seconds as "merge_seconds")."""
    if os.path.exists(path):
        os.remove(path)
    conn = bench_index.connect(path)
    try:
        conn.execute(schema.SESSIONS_DDL)
        conn.execute(schema.MESSAGES_DDL)
        conn.execute("ATTACH ? AS a", (archive,))
        with conn:
            conn.execute("INSERT INTO sessions SELECT * FROM a.sessions")
            conn.execute("INSERT INTO messages SELECT * FROM a.messages")
        conn.execute("DETACH a")
        nbytes = bench_index.text_bytes(conn)[0]
        if lib:
            load_cjkfts(conn, lib)
        out = {}
        for name, (label, tokenize, settings) in TOKENIZERS.items():
            if name == "cjkfts" and not lib:
                continue
            seconds = bench_index.build_index(conn, name, variant=(tokenize, ""), settings=settings)
            out[name] = {"seconds": seconds, "bytes": bench_index.fts_size(conn, f"fts_{name}")}
            if name in ("cjk_default", "cjkfts"):
                out[name]["cjk_terms"] = cjk_terms(conn, f"fts_{name}")
            log(f"built {label}: {seconds:.1f} s, {out[name]['bytes'] / nbytes:.2f}x the text")
            if name != "cjkfts":
                conn.execute(f"DROP TABLE fts_{name}")
            elif merge:  # queried in the shape ours is: our import ended by merging its indexes
                t0 = time.perf_counter()
                with conn:
                    conn.execute("INSERT INTO fts_cjkfts(fts_cjkfts) VALUES ('optimize')")
                out[name]["merge_seconds"] = time.perf_counter() - t0
                log(f"merged {label} into one segment: {out[name]['merge_seconds']:.1f} s")
    finally:
        conn.close()
    return out, nbytes


def cjk_terms(conn, table):
    """Distinct terms of an index that start with a CJK character, by length (1, 2, 3 = three or more):
    what the tokenizer emits for CJK text."""
    conn.execute(f"CREATE VIRTUAL TABLE temp.v_terms USING fts5vocab(main, {table}, 'row')")
    try:
        got = dict(conn.execute("SELECT min(length(term), 3), count(*) FROM temp.v_terms "
                                "WHERE unicode(term) >= 0x2E80 GROUP BY 1"))
    finally:
        conn.execute("DROP TABLE temp.v_terms")
    return [got.get(n, 0) for n in (1, 2, 3)]


# ---- terms, truth, timings ----------------------------------------------------

def pick_terms(path, needles):
    """bench_lean's terms (1 char, 2 chars, Latin words, needles) plus bench_queries' 3- and 4-character words."""
    content = [n for n in needles if n["column"] == "content"]  # what a default search covers
    terms = bench_lean.pick_terms(path, content)
    with Archive(path, auto_catch_up=0) as ar:
        longer = bench_queries.pick_queries(ar.conn, content, step=7)["3-4-char"]
    threes, fours = ([w for w in longer if len(w) == n] for n in (3, 4))
    if threes:  # the less frequent of the two: the most frequent often lies inside the top 4-character one
        terms.append(("3 chars", threes[-1]))
    if fours:
        terms.append(("4 chars", fours[0]))
    order = ["1 char", "2 chars", "3 chars", "4 chars", "needle (cjk2)", "needle (cjk4)", "Latin word"]
    return sorted(terms, key=lambda kt: order.index(kt[0]))


def is_cjk_class(kind):
    return kind != "Latin word"


def like_newest(conn, term, max_id=None):
    bound = "" if max_id is None else f" AND id <= {int(max_id)}"
    return [r[0] for r in conn.execute(f"SELECT id FROM messages WHERE {LIKE_WHERE}{bound} ORDER BY id DESC LIMIT 20",
                                       (f"%{term}%",) * len(SEARCHED))]


def columns_match(term):
    """The MATCH string for ``term`` as one phrase in the columns every system searches by default."""
    return "{" + " ".join(SEARCHED) + "} : \"" + term.replace('"', '""') + '"'


def snippet_cells(ar, term, runs):
    """The newest 20 matches of ``term``'s cjk MATCH with their snippets, and nothing else: by ``cjk_match``
    as ``Archive.search`` calls it, and by FTS5's own ``snippet()`` (the best column, 64 tokens), the function
    a user of raw FTS5 has.  Each is timed on its own, not in alternation: ``snippet()`` re-tokenizes whole
    columns, and what it reads would evict what the other call reads next.  Returns their cells."""
    t = schema.fts_table("cjk")
    match = ar.explain(term, route="cjk")["match"]
    call, params = search._aux_call(search.SNIPPET_CHARS)
    page = f"FROM {t} WHERE {t} MATCH ? ORDER BY {t}.rowid DESC LIMIT 20"
    ours, fts5 = f"SELECT {t}.rowid, {call} {page}", f"SELECT {t}.rowid, snippet({t}, -1, '', '', '…', 64) {page}"
    a, got_a = cell(lambda: ar.conn.execute(ours, (*params, match)).fetchall(), runs)
    b, got_b = cell(lambda: ar.conn.execute(fts5, (match,)).fetchall(), runs)
    assert [row[0] for row in got_a] == [row[0] for row in got_b], term
    return a, b


def measure_ours(path, terms, runs):
    """Per term: Archive.search both sorts, the raw FTS5 query, the LIKE scan; the LIKE truth (untimed)."""
    out = {}
    with Archive(path, auto_catch_up=0) as ar:
        bench_queries.warm(ar)
        conn = ar.conn
        for kind, term in terms:
            r = {}
            hits, r["raw newest"] = None, None
            bare = bench_queries.cjk_sql(ar, term)  # {} when the plan is not one cjk MATCH
            for sort in ("relevance", "newest"):
                # Archive.search beside the statements it runs for its hits (with cjk_match's snippets), as
                # Archive.explain(sql=True) lists them, and newest first beside their bare MATCH too, timed
                # in alternation: the parts of the search's time (_split) come from the same moments
                sts = ar.explain(term, sort=sort, limit=20, sql=True)["sql"]
                fns = [lambda: ar.search(term, sort=sort, limit=20),
                       lambda: [conn.execute(st["sql"], st["params"]).fetchall() for st in sts]]
                if sort == "newest" and bare:
                    fns.append(bare["newest"])
                got = paired_cells(fns, runs)
                (r[f"search {sort}"], found), (r[f"statements {sort}"], _) = got[:2]
                if sort == "newest":
                    hits = found
                    r["raw newest"] = got[2][0] if len(got) == 3 else None
            r["raw relevance"] = bench_queries.cjk_sql_only(ar, term, runs, sorts=("relevance",)).get("relevance")
            r["snippets cjk_match"], r["snippets fts5"] = snippet_cells(ar, term, runs) if bare else (None, None)
            r["newest_ids"] = [h.message_id for h in hits]
            # what the snippets of those hits read: the searched columns' characters
            r["hit_chars"] = sum(conn.execute(
                f"SELECT {' + '.join(f'coalesce(length({c}), 0)' for c in SEARCHED)} FROM messages WHERE id = ?",
                (i,)).fetchone()[0] for i in r["newest_ids"])
            r["like newest"], r["like_ids"] = cell(lambda: like_newest(conn, term), runs)
            r["like_rows"] = conn.execute(f"SELECT count(*) FROM messages WHERE {LIKE_WHERE}",
                                          (f"%{term}%",) * len(SEARCHED)).fetchone()[0]
            match = ar.explain(term).get("match")  # None when the plan is not one cjk MATCH
            t = schema.fts_table("cjk")
            count = f"SELECT count(*) FROM {t} WHERE {t} MATCH ?"
            r["count all"] = r["raw_rows"] = r["walk bound"] = None
            if match:
                # one pass over every matching row: what FTS5's bm25 does first, to weigh each phrase
                r["count all"], got = cell(lambda: conn.execute(count, (match,)).fetchall(), runs)
                r["raw_rows"] = got[0][0]
                # the least a relevance search over more matches than the bound reads: the newest
                # relevance_bound of them, ids only, unscored
                walk = f"SELECT rowid FROM {t} WHERE {t} MATCH ? ORDER BY rowid DESC LIMIT {search.RELEVANCE_BOUND}"
                r["walk bound"], _ = cell(lambda: conn.execute(walk, (match,)).fetchall(), runs)
            if len(term) >= 3 and kind != "Latin word":  # the bigrams a longer CJK word is a phrase of
                pairs = [term[i:i + 2] for i in range(len(term) - 1)]
                r["bigram_rows"] = {p: conn.execute(count, (columns_match(p),)).fetchone()[0] for p in pairs}
            out[term] = r
            log(kind, term, f"search newest {ms(r['search newest']['p50'])} ms, LIKE {ms(r['like newest']['p50'])} ms,"
                f" {r['like_rows']:,} rows")
    return out


def measure_cjkfts(path, lib, terms, runs):
    """sqlite-cjk-fts: top 20 by rank and by rowid, and its count of matches (untimed)."""
    out = {}
    conn = apsw.Connection(path)
    try:
        load_cjkfts(conn, lib)
        t = "fts_cjkfts"
        for kind, term in terms:
            match = columns_match(term)
            sql = f"SELECT rowid FROM {t} WHERE {t} MATCH ? ORDER BY {{}} LIMIT 20"
            r = {}
            r["relevance"], _ = cell(lambda: conn.execute(sql.format("rank"), (match,)).fetchall(), runs)
            r["newest"], rows = cell(lambda: conn.execute(sql.format("rowid DESC"), (match,)).fetchall(), runs)
            r["newest_ids"] = [x[0] for x in rows]
            r["rows"] = conn.execute(f"SELECT count(*) FROM {t} WHERE {t} MATCH ?", (match,)).fetchone()[0]
            out[term] = r
            log(kind, term, f"sqlite-cjk-fts newest {ms(r['newest']['p50'])} ms, {r['rows']:,} rows")
    finally:
        conn.close()
    return out


def _against(got, want, count):
    """(of ``want`` found in ``got``, len(want), the system's own count of matches or None, ids not in want)."""
    return len(set(got) & set(want)), len(want), count, len(set(got) - set(want))


def recall(path, terms, ours, cjkfts, hermes):
    """For the CJK terms: each system's newest 20 against LIKE's, and its count of matches where it has one."""
    out = []
    with Archive(path, auto_catch_up=0) as ar:
        for kind, term in terms:
            if not is_cjk_class(kind):
                continue
            o = ours[term]
            want = o["like_ids"]
            row = {"kind": kind, "term": term, "like_rows": o["like_rows"],
                   "ours": _against(o["newest_ids"], want, o["raw_rows"]), "ours_equal": o["newest_ids"] == want}
            if cjkfts:
                row["cjkfts"] = _against(cjkfts[term]["newest_ids"], want, cjkfts[term]["rows"])
            if hermes:
                row["hermes"] = _against(hermes["queries"][term]["newest_ids"],
                                         like_newest(ar.conn, term, hermes["max_id"]), None)
            out.append(row)
    return out


# ---- report ---------------------------------------------------------------------

def _ratio(a, b):
    if not a or not b:
        return "n/a"
    r = a["p50"] / b["p50"]
    return f"{r:.2g}×" if r < 10 else f"{r:,.0f}×"


def fmt_classes(terms, ours, cjkfts, hermes):
    L = []
    for cls in dict.fromkeys(k for k, _ in terms):
        L += ["", f"**{cls}** — top 20, ms p50 / p95:", "",
              "| term | sort | LIKE rows | ours: `Archive.search` | ours: raw FTS5 | sqlite-cjk-fts | Hermes "
              "`search_messages` | LIKE scan | ours raw / best peer | ours search / Hermes search |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for kind, term in terms:
            if kind != cls:
                continue
            o = ours[term]
            for sort in ("newest", "relevance"):
                c = cjkfts[term][sort] if cjkfts else None
                h = hermes["queries"][term][sort] if hermes else None
                peers = [p for p in (c, h) if p]
                best = min(peers, key=lambda p: p["p50"]) if peers else None
                like = fmt_cell(o["like newest"]) if sort == "newest" else ""
                L.append(f"| {term} | {sort} | {o['like_rows']:,} | {fmt_cell(o['search ' + sort])} |"
                         f" {fmt_cell(o['raw ' + sort])} | {fmt_cell(c) if c else 'not run'} |"
                         f" {fmt_cell(h) if h else 'not run'} | {like} | {_ratio(o['raw ' + sort], best)} |"
                         f" {_ratio(o['search ' + sort], h)} |")
    return L


def fmt_tokenizers(builds, nbytes):
    u61 = builds["unicode61"]["seconds"]
    L = ["", f"FTS5 build over the same {nbytes / 1e6:,.1f} MB of text (content, reasoning, tool_name, tool_calls; "
         "external content, one 'rebuild' each, as bench/bench_index.py builds) and index size per byte of text:",
         "", "| tokenizer | build s | vs unicode61 | index MB | index / text |", "|---|---:|---:|---:|---:|"]
    for name, b in builds.items():
        L.append(f"| {TOKENIZERS[name][0]} | {b['seconds']:.1f} | {b['seconds'] / u61:.2f}× |"
                 f" {b['bytes'] / 1e6:,.1f} | {b['bytes'] / nbytes:.2f}× |")
    if "cjkfts" not in builds:
        L.append("| sqlite-cjk-fts (cjk_bigram) | not run | | | |")
    elif builds["cjkfts"].get("merge_seconds") is not None:
        L += ["", "sqlite-cjk-fts's table was then merged into one segment "
              f"({builds['cjkfts']['merge_seconds']:.1f} s), as our import merged ours, so both are queried in the "
              "same shape."]
    L += ["", "Distinct terms starting with a CJK character, of 1 / 2 / 3+ characters (fts5vocab): " + "; ".join(
        f"{TOKENIZERS[n][0]} " + " / ".join(f"{v:,}" for v in b["cjk_terms"]) for n, b in builds.items()
        if "cjk_terms" in b) + "."]
    return L


PEER_NOTES = """How the peers search, from their code as shipped (what the recall table measures):
- sqlite-cjk-fts: its Python layer hands the query to MATCH unchanged. A query of several CJK characters is
  an FTS5 phrase of the tokens above, and ASCII spaces and punctuation take no position, so a phrase also
  matches its characters with such a separator between them (its rows can exceed LIKE's).
- Hermes: `search_messages` indexes content, tool_name and tool_calls (not reasoning) and stores tool_calls as
  ASCII-escaped JSON, so CJK inside tool-call arguments is found by no path. A query with CJK goes to its
  trigram table when every CJK token has 3 or more characters, otherwise to a LIKE scan over those columns,
  newest first whatever `sort` says; other queries go to its unicode61 table. Every hit also reads the
  message before and after it in its session."""


def fmt_recall(rows, hermes):
    def frac(v):
        if v is None:
            return "not run"
        got, want, count, other = v
        if not want and not other:
            return "none in its messages"
        return (f"{got}/{want}" + (f" (+{other} not in LIKE's)" if other else "")
                + ("" if count is None else f"; {count:,} matched"))

    L = ["", "Checked (not timed), CJK terms: messages of the system's newest 20 that are among the LIKE scan's "
         "newest 20 (+N: its newest 20 holds N that LIKE's does not), and the rows the system's MATCH counts "
         "(LIKE rows: the scan's count over content, tool_name, "
         "tool_calls" + (f"; Hermes against the LIKE scan over the {hermes['messages']:,} messages it holds" if hermes
                         else "") + "):", "",
         "| class | term | LIKE rows | ours (`Archive.search` newest; raw MATCH) | sqlite-cjk-fts | Hermes |",
         "|---|---|---:|---|---|---|"]
    for r in rows:
        L.append(f"| {r['kind']} | {r['term']} | {r['like_rows']:,} | {frac(r['ours'])} | {frac(r.get('cjkfts'))} |"
                 f" {frac(r.get('hermes'))} |")
    return L


# Timed runs per query at most; a fast query gets this many within its second, so its p95 is not
# simply the slowest run or two.
RUNS = 100
# The targets this section checks (ms are p95 of a top 20).
NEWEST_MS, RAW_NEWEST_MS, RELEVANCE_MS, RARE_MS = 1.5, 0.5, 40.0, 0.3
MAX_FILE_RATIO, MIN_MSG_PER_S, MAX_BUILD_RATIO = 2.6, 4000, 2.0
RARE_KINDS = ("needle (cjk2)", "needle (cjk4)", "3 chars", "4 chars")


def _verdict(ok):
    return "met" if ok else "**MISSED**"


def _walk(o):
    """What reading a term's newest ``relevance_bound`` matches (ids only, unscored) took, at p50."""
    return (f"walking its newest {min(o['raw_rows'], search.RELEVANCE_BOUND):,} matches, ids only and unscored, "
            f"takes {ms(o['walk bound']['p50'])} ms") if o.get("walk bound") and o.get("raw_rows") else None


def _why_relevance(slow):
    """What the run measured about relevance searches over the target: the matches it must read."""
    parts = [f"`{t}` ({o['like_rows']:,} rows) {ms(o['search relevance']['p50'])} ms; {_walk(o)}"
             for t, o in slow if _walk(o)]
    if not parts:
        return []
    return ["  - Why: relevance reads the matches it ranks (the newest `relevance_bound` of them), once to find "
            "where they end and once to score them (p50s: " + "; ".join(parts) + ")."]


def _split(o):
    """``Archive.search`` newest first at p50, in parts: the bare MATCH (ids only), what the statements it
    runs add to it (the hits' snippets, by ``cjk_match``, and their other fields), and the rest (its Python
    layer)."""
    s, st, raw = o.get("search newest"), o.get("statements newest"), o.get("raw newest")
    if not (s and st and raw):
        return None
    return (f"{ms(s['p50'])} ms = the bare MATCH {ms(raw['p50'])} + the snippets and the hits' other fields "
            f"{ms(max(0, st['p50'] - raw['p50']))} + the Python layer {ms(max(0, s['p50'] - st['p50']))} (parsing, "
            "planning, the catalogue reads, checking `cjk_match`'s output, building the hits)")


def _why_rare(rows):
    """What the run measured about needles and 3+ character words over the target."""
    L = []
    split = [f"`{t}` {_split(o)}" for k, t, o in rows if k.startswith("needle") and _split(o)]
    fixed = sorted(o["search newest"]["p50"] - o["raw newest"]["p50"] for k, _, o in rows
                   if k.startswith("needle") and o.get("raw newest"))
    if split:
        L.append("  - Why, needles (one hit), newest first at p50: " + "; ".join(split) + ". The snippet "
                 "reads the whole message (`cjk_match`).")
    elif fixed:
        L.append(f"  - Why, needles (one hit): `Archive.search` takes {ms(fixed[0])}–{ms(fixed[-1])} ms over its "
                 "raw MATCH (p50): parsing and planning the query, the catalogue reads, and the hit with its "
                 "snippet (`cjk_match` reads the whole message).")
    words = [(t, o) for k, t, o in rows if not k.startswith("needle")]
    if words:
        common = min(o["like_rows"] for _, o in words) >= 1000
        L.append("  - Why, 3+ character words: " + ("these are common words, not rare ones" if common else
                                                      "at p50") + " (" + "; ".join(
            f"`{t}` {o['like_rows']:,} rows: relevance {ms(o['search relevance']['p50'])} ms, newest "
            f"{ms(o['search newest']['p50'])} ms" for t, o in words) + ").")
        walks = [(t, o) for t, o in words if _walk(o)]
        if walks:
            over = all(o["walk bound"]["p50"] * 1000 > RARE_MS for _, o in walks)
            L.append(f"    Their relevance ranks the newest {search.RELEVANCE_BOUND:,} matches (`relevance_bound`): "
                     + "; ".join(f"`{t}`: {_walk(o)}" for t, o in walks)
                     + (f"; each over {RARE_MS} ms before any ranking." if over else "."))
        splits = [f"`{t}` {_split(o)}" for t, o in words if _split(o)]
        if splits:
            L.append("    Their newest first pays the 20 hits' snippets: " + "; ".join(splits) + ".")
        snips = [(t, o) for t, o in words if o.get("snippets cjk_match") and o.get("snippets fts5")]
        if snips:
            L.append("    The 20 snippets alone (the MATCH's newest 20 rows with a snippet each, nothing else; p50): "
                     + "; ".join(f"`{t}` by `cjk_match` {ms(o['snippets cjk_match']['p50'])} ms, by FTS5's own "
                                 f"`snippet()` (64 tokens) {ms(o['snippets fts5']['p50'])} ms" for t, o in snips)
                     + ".")
    return L


def fmt_targets(b, builds, terms, ours):
    """One line per target, from this run's numbers; a missed one says what the run measured about why."""
    def worst(key, kinds=None):
        cells = [(ours[t][key]["p95"], t, k) for k, t in terms if (kinds is None or k in kinds) and ours[t].get(key)]
        return max(cells) if cells else None

    L = ["", "Targets (p95 of a top 20 at this size; the worst term of the classes named):", ""]
    w = worst("search newest")
    if w:
        p95, term, kind = w
        o = ours[term]
        L.append(f"- `Archive.search` newest first <= {NEWEST_MS} ms for every class: {ms(p95)} ms ({kind} `{term}`)"
                 f" — {_verdict(p95 * 1000 <= NEWEST_MS)}")
        if p95 * 1000 > NEWEST_MS:
            def snippets(o2):  # what the hits and snippets add to the bare MATCH
                base = o2.get("statements newest") or o2["search newest"]
                return base["p50"] - (o2["raw newest"] or {"p50": 0})["p50"]
            rate = sorted(snippets(o2) / o2["hit_chars"] * 1000 for o2 in (ours[t] for _, t in terms)
                          if o2.get("hit_chars") and snippets(o2) > 0) or [0]  # s per 1,000 chars
            head = (f"at p50, {_split(o)}" if _split(o) else
                    f"its raw MATCH takes {ms((o['raw newest'] or {'p95': 0})['p95'])} ms")
            L.append(f"  - Why: {head}. The 20 hits' snippets read {o['hit_chars']:,} characters of their text: "
                     "the one snippet rule shows the stretch with the most matches, so `cjk_match` places every "
                     "match of each hit: a word of CJK letters by finding its text in the hit (reading all of "
                     "it), any other term by re-tokenizing the hit up to its last match (counting the tokens "
                     "before them, not emitting them); it then counts characters up to the last match and reads "
                     "a little past the snippet. Over every term, the "
                     f"snippets cost {ms(rate[len(rate) // 2])} ms per 1,000 "
                     "characters of hit text (median), so the target holds where the newest 20 hits are short.")
    w = worst("raw newest")
    if w:
        L.append(f"- raw SQL newest first <= {RAW_NEWEST_MS} ms: {ms(w[0])} ms ({w[2]} `{w[1]}`) — "
                 f"{_verdict(w[0] * 1000 <= RAW_NEWEST_MS)}")
        slow = [(t, ours[t]) for _, t in terms if ours[t].get("raw newest") and
                ours[t]["raw newest"]["p95"] * 1000 > RAW_NEWEST_MS and ours[t].get("bigram_rows")]
        if slow:
            L.append("  - Why: a word of n CJK characters is a phrase of its n-1 bigrams, and FTS5 walks their "
                     "position lists together to find the rows where they stand in order; the newest 20 such rows "
                     "cost more the more often the bigrams occur elsewhere (" + "; ".join(
                         f"`{t}` {o['like_rows']:,} rows, its bigrams in " + ", ".join(
                             f"{n:,}" for n in o["bigram_rows"].values()) for t, o in slow) + ").")
    w = worst("search relevance")
    if w:
        L.append(f"- `Archive.search` by relevance <= {RELEVANCE_MS:g} ms for any single term: {ms(w[0])} ms "
                 f"({w[2]} `{w[1]}`) — {_verdict(w[0] * 1000 <= RELEVANCE_MS)}")
        if w[0] * 1000 > RELEVANCE_MS:
            L += _why_relevance([(t, ours[t]) for _, t in terms if ours[t]["search relevance"]["p95"] * 1000 >
                                 RELEVANCE_MS])
    rare = [(max(ours[t]["search newest"]["p95"], ours[t]["search relevance"]["p95"]), t, k)
            for k, t in terms if k in RARE_KINDS]
    if rare:
        p95, term, kind = max(rare)
        L.append(f"- needles and 3+ character words <= {RARE_MS} ms (either sort): {ms(p95)} ms ({kind} `{term}`)"
                 f" — {_verdict(p95 * 1000 <= RARE_MS)}")
        if p95 * 1000 > RARE_MS:
            L += _why_rare([(k, t, ours[t]) for k, t in terms if k in RARE_KINDS])
    ratio = b["file"] / b["text"]
    parts = ", ".join(f"{name} {size / b['text']:.2f}×" for name, size in sorted(b["parts"].items(),
                                                                              key=lambda kv: -kv[1]))
    L.append(f"- default archive file <= {MAX_FILE_RATIO}× its text: {ratio:.2f}× (parts: {parts}) — "
             f"{_verdict(ratio <= MAX_FILE_RATIO)}")
    L.append(f"- ingest with the default indexes >= {MIN_MSG_PER_S:,} msg/s: {b['msg_per_s']:,.0f} — "
             f"{_verdict(b['msg_per_s'] >= MIN_MSG_PER_S)}")
    r = None
    pair = ("cjk_archive", "u61_archive") if "cjk_archive" in builds else ("cjk_default", "unicode61")
    if all(n in builds for n in pair):
        cjk_s, u61_s = (builds[n]["seconds"] for n in pair)
        r = cjk_s / u61_s
        how = ("both as the archive creates them (its FTS5 settings)" if pair[0] == "cjk_archive" else
               "with FTS5's default settings")
        L.append(f"- cjk index build (unigrams included) <= {MAX_BUILD_RATIO:g}× unicode61's time: {r:.2f}× "
                 f"{how} — {_verdict(r <= MAX_BUILD_RATIO)}")
        if pair[0] == "cjk_archive" and b["msg_per_s"] < MIN_MSG_PER_S:
            if b.get("aside") == "cjk":  # the cjk build ran on the second core: the slower build bounds the rate
                bound = b["messages"] / max(cjk_s, u61_s)
                how = (f"the import built the cjk index on the second core while the first read the source and "
                       f"wrote the messages and the unicode61 index; the cjk build below alone takes {cjk_s:.1f} s "
                       f"for these {b['messages']:,} messages (unicode61's {u61_s:.1f} s)")
                rest = ("reading and checking the source, the messages table, the merge and the copy of the "
                        "index")
            else:  # every imported message goes through both builds: their time alone bounds the rate
                bound = b["messages"] / (cjk_s + u61_s)
                how = (f"the import writes these two indexes, and their builds below alone take {cjk_s:.1f} + "
                       f"{u61_s:.1f} s for these {b['messages']:,} messages")
                rest = "reading the source, the messages table, the merge"
            L.append(f"  - Why (ingest): {how}: at most {bound:,.0f} msg/s even if nothing else ({rest}) took any "
                     "time, " + ("so the target cannot be met with both indexes on this machine."
                                 if bound < MIN_MSG_PER_S else "so the rest of the import is what misses it."))
    if r is not None and r > MAX_BUILD_RATIO:
        L.append("  - Why (build): the `build` section measures FTS5 alone indexing the cjk token stream "
                 "(tokenized beforehand, through its cheapest tokenizer) against unicode61: most of the cost is "
                 "FTS5's writes for a bigram per CJK character plus its unigram, not the tokenizer.")
        if pair[0] == "cjk_archive" and "cjk_bigrams" in builds:
            bi = builds["cjk_bigrams"]["seconds"] / builds["u61_archive"]["seconds"]
            L.append(f"    Without any unigram the bigrams alone take {bi:.2f}× unicode61's build under the same "
                     f"settings; the unigrams add {r - bi:.2f}×. They are what makes raw `MATCH '\"X\"'` find "
                     "every occurrence of a character, which only a term in the cjk table itself can do (FTS5 "
                     "reads a prefix index only for `\"X\"*`). Indexing characters instead of bigrams "
                     "(sqlite-cjk-fts's way) builds faster (its row in the build table below) and answers "
                     "2+ character words by chaining characters (its raw MATCH beside ours in the tables below).")
    ones = [(t, ours[t]) for k, t in terms if k == "1 char"]
    if ones:
        same = all(o["raw_rows"] == o["like_rows"] for _, o in ones)
        L.append("- raw `MATCH '\"X\"'` finds the rows a LIKE scan finds, for one character: " + ", ".join(
            f"`{t}` {o['raw_rows'] if o['raw_rows'] is None else format(o['raw_rows'], ',')} / {o['like_rows']:,}"
            for t, o in ones) + f" — {_verdict(same)}")
    return L


def _import_how(b) -> str:
    """How our import went, for its row: the index it built on the second core, the merge."""
    how = [f"it built the {b['aside']} index on the second core"] if b.get("aside") else []
    how += [f"it then {b['merged']}"] if b.get("merged") else []
    return f" ({'; '.join(how)})" if how else ""


def fmt(cmd, info, ours_build, builds, nbytes, terms, ours, cjkfts, hermes, rows, peers):
    b = ours_build
    L = [f"Command: `{cmd}`  ",
         f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory']} RAM; {info['os']}; load average at "
         f"start/end {peers['load']:.1f} / {peers.get('load_end', os.getloadavg()[0]):.1f}"
         + (f"; a Python loop of 10^6 additions takes {peers['loop_ms'][0]:.0f} / {peers['loop_ms'][1]:.0f} ms at "
            "start/end (`bench_index.loop_ms`: compare runs by it)" if peers.get("loop_ms") else "") + "  ",
         f"Versions: SQLite {info['sqlite']}, APSW {info['apsw']}, Python {info['python']}, cjk_tokenizer "
         f"{info['cjk_tokenizer']}; {peers['cjkfts']}; {peers['hermes']}  ",
         f"Corpus: `{os.path.basename(peers['jsonl'])}`, {b['messages']:,} messages, {b['text'] / 1e6:,.1f} MB of "
         "text. This project and sqlite-cjk-fts hold every message"
         + (f"; Hermes the first {hermes['messages']:,} ({hermes['text_bytes'] / 1e6:,.1f} MB of text, "
            f"`--hermes-mb {peers['hermes_mb']:g}`): its timings are on the smaller archive." if hermes else "."),
         "", "Ingest through each system's own writer:", "",
         "| system | messages | seconds | msg/s | file / text |", "|---|---:|---:|---:|---:|",
         f"| ours: `Archive.import_source`{_import_how(b)} |"
         f" {b['messages']:,} | {b['seconds']:.1f} | {b['msg_per_s']:,.0f} |"
         f" {b['file'] / b['text']:.2f}× |"]
    if hermes:
        fts = ", ".join(f"{k} {v / hermes['text_bytes']:.2f}×" for k, v in hermes["fts_bytes"].items())
        L.append(f"| Hermes: `SessionDB.append_message` per message | {hermes['messages']:,} |"
                 f" {hermes['write_seconds']:.1f} | {hermes['messages'] / hermes['write_seconds']:,.0f} |"
                 f" {hermes['file_bytes'] / hermes['text_bytes']:.2f}× ({fts}) |")
    L += ["", "Query latency. ours: `Archive.search` returns hits with snippets; raw FTS5 is the one MATCH "
          "`Archive.explain` names, ids only. sqlite-cjk-fts: raw FTS5, ids only. Hermes: `search_messages` as it "
          "ships (snippets plus one message of context before and after each hit). LIKE scan: ids, newest first. "
          "Ratios of p50s, below 1 where ours is faster: ours raw over the faster peer (whatever it returns), "
          "and `Archive.search` over `search_messages` (both return hits with snippets). Each cell is the p50 / "
          f"p95 of as many timed runs as fit in about 1 s (at least 3, at most {peers.get('runs', 15)}), after one "
          "untimed run; a call over 0.5 s gets 2. `Archive.search` keeps the parses of the queries it has seen "
          "(`query.parse`), so only the untimed run parses the query; a query seen for the first time also "
          "pays its parse."]
    L += fmt_targets(b, builds, terms, ours)
    L += fmt_classes(terms, ours, cjkfts, hermes)
    L += fmt_tokenizers(builds, nbytes)
    L += fmt_recall(rows, hermes)
    L += ["", PEER_NOTES]
    return "\n".join(L)


# ---- run ------------------------------------------------------------------------

def shared_args(ap, workdir, json_name):
    """The options every peer benchmark takes: runs, workdir, the peers' cache, RESULTS.md, --report."""
    ap.add_argument("--runs", type=_positive_int, default=RUNS,
                    help="timed runs per query at most: each gets as many as fit in about 1 s, 3 at least "
                    f"(default {RUNS}: a p95 of 15 runs is their slowest but one)")
    ap.add_argument("--workdir", default=workdir)
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/cjk_tokenizer-bench"),
                    help="where the peers are downloaded and built (kept between runs)")
    ap.add_argument("--results", default=os.path.join(HERE, "RESULTS.md"), help="Markdown file to update")
    ap.add_argument("--report", metavar="JSON", help="measure nothing: write the section again from the "
                    f"{json_name} a run left in its workdir (after a change to the report's layout)")


def load_report(path, json_name, render_fn):
    """(data, section text) from a run's saved JSON; a file that is not one is a one-line exit naming it."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return data, render_fn(data)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise SystemExit(f"--report {path}: not the {json_name} a run of this script wrote "
                         f"({type(exc).__name__}: {exc})") from None


def _parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jsonl", help="a corpus written by bench/generate.py (required unless --smoke)")
    ap.add_argument("--hermes-mb", type=float, default=200, help="MB of text Hermes gets (default 200)")
    shared_args(ap, os.path.join(HERE, "out"), "peers.json")
    ap.add_argument("--no-peers", action="store_true", help="this project only (offline)")
    ap.add_argument("--smoke", action="store_true", help="~1 MB corpus in a temp dir; checks only, writes nothing")
    return ap


def render(data):
    """The section's text from a run's measurements (as main saves them in the workdir's peers.json)."""
    terms = [tuple(t) for t in data["terms"]]
    return fmt(data["cmd"], data["info"], data["ours_build"], data["builds"], data["nbytes"], terms, data["ours"],
               data["cjkfts"], data["hermes"], data["rows"], data["peers"])


def main(argv=None):
    a = _parser().parse_args(argv)
    if a.report:
        data, body = load_report(a.report, "peers.json", render)
        results.update_section(a.results, "peers", body, stamp=data.get("measured"))
        log(f"wrote the peers section of {a.results} from {a.report}")
        return 0
    if not a.jsonl and not a.smoke:
        raise SystemExit("--jsonl is required (a corpus from bench/generate.py), or --smoke")
    load0, loop0 = os.getloadavg()[0], bench_index.loop_ms()
    work = tempfile.mkdtemp() if a.smoke else a.workdir
    os.makedirs(work, exist_ok=True)
    jsonl = a.jsonl
    if jsonl is None:
        jsonl = os.path.join(work, "peers-smoke.jsonl")
        corpus = generate.Corpus(1_000_000, seed=1)
        generate.write_jsonl(corpus, jsonl)
        with open(jsonl + ".needles.json", "w", encoding="utf-8") as f:
            json.dump(corpus.needle_manifest(), f, ensure_ascii=False)
    needles = []  # generate.py writes the manifest beside the corpus; without it there is no needle class
    if os.path.exists(jsonl + ".needles.json"):
        with open(jsonl + ".needles.json", encoding="utf-8") as f:
            needles = json.load(f)
    runs = 3 if a.smoke else a.runs
    clock = {}

    def part(name, fn, *args):
        t0 = time.perf_counter()
        out = fn(*args)
        clock[name] = time.perf_counter() - t0
        return out

    archive = os.path.join(work, "peers-ours.db")
    ours_build = part("ours: import", bench_lean.build, jsonl, archive, {})
    terms = pick_terms(archive, needles)
    ours = part("ours: queries", measure_ours, archive, terms, runs)
    lib, cc = part("sqlite-cjk-fts: fetch and compile", cjkfts_library, a.cache) if not a.no_peers else (None, None)
    builds, nbytes = part("tokenizer builds", build_tokenizers, archive, os.path.join(work, "peers-fts.db"), lib,
                          bool(ours_build.get("merged")))
    cjkfts = part("sqlite-cjk-fts: queries", measure_cjkfts, os.path.join(work, "peers-fts.db"), lib, terms,
                  runs) if lib else None
    hermes = None
    if not a.no_peers:
        py = part("Hermes: venv", hermes_python, a.cache)
        hermes = part("Hermes: write and queries", run_hermes, py, jsonl, a.hermes_mb, terms, runs, work)
    rows = recall(archive, terms, ours, cjkfts, hermes)
    log("time per part: " + ", ".join(f"{k} {v:.0f} s" for k, v in clock.items()))
    wrong = [r["term"] for r in rows if not r["ours_equal"]]
    peers = {"load": load0, "jsonl": jsonl, "hermes_mb": a.hermes_mb, "runs": runs,
             "cjkfts": f"sqlite-cjk-fts 0.3.0 built with {cc}" if lib else "sqlite-cjk-fts not run (--no-peers)",
             "hermes": (f"hermes-agent {hermes['hermes_agent']} on Python {hermes['python']} with SQLite "
                        f"{hermes['sqlite']}") if hermes else "Hermes not run (--no-peers)"}
    cmd = bench_lean.command("bench_peers.py", argv, jsonl)
    peers["load_end"], peers["loop_ms"] = os.getloadavg()[0], [loop0, bench_index.loop_ms()]
    data = {"measured": results.now_stamp(), "cmd": cmd, "info": bench_index.machine_info(),
            "ours_build": ours_build, "builds": builds, "nbytes": nbytes, "terms": terms, "ours": ours,
            "cjkfts": cjkfts, "hermes": hermes, "rows": rows, "peers": peers}
    with open(os.path.join(work, "peers.json"), "w", encoding="utf-8") as f:  # --report renders it again
        json.dump(data, f, ensure_ascii=False)
    body = render(data)
    print(body)
    if wrong:
        raise SystemExit(f"Archive.search newest-first differs from the LIKE scan for {wrong}")
    if a.smoke:
        with open(os.path.join(work, "peers.json"), encoding="utf-8") as f:
            if render(json.load(f)) != body:
                raise SystemExit("--report would not write the section this run wrote")
        shutil.rmtree(work)
        print("smoke ok")
        return 0
    results.update_section(a.results, "peers", body, stamp=data["measured"])
    log(f"wrote the peers section of {a.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
