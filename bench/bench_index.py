"""Index build time, index size and tokenizer throughput: cjk_unicode61 vs unicode61 vs trigram.

The index targets, measured side by side in one process on one
generated corpus (bench/generate.py):

  * FTS5 index build time ('rebuild' of an external-content index over the
    archive's messages table, the four indexed columns of cjk_tokenizer.schema)
    per GB of text, and its ratio to unicode61's;
  * index size (pages of the FTS shadow tables, from dbstat) per byte of text;
  * tokenizer throughput through APSW's Connection.fts5_tokenizer (includes
    APSW's per-token Python objects, the same cost per token for every
    tokenizer: read it as a floor, the FTS5 build rate as the real figure);
  * cjk_unicode61 with FTS5 prefix='1': its extra size and build time, and the
    latency of 1-character queries ("X"*) with and without it;
  * a correctness check: every planted needle is found by the cjk index in
    exactly the messages the generator put it in.

    python bench/bench_index.py --size 300MB          # full run, writes bench/RESULTS.md
    python bench/bench_index.py --smoke               # ~2 MB, seconds; checks sanity, not speed

Timings are never asserted; --smoke asserts only that the numbers are sane.
Only the public API is used: cjk_tokenizer.load(apsw.Connection(...)).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import apsw  # noqa: E402

import cjk_tokenizer  # noqa: E402
from cjk_tokenizer import schema  # noqa: E402

import generate  # noqa: E402
import results  # noqa: E402


# name -> (tokenize= argument, extra FTS5 options)
VARIANTS = {
    "unicode61": (schema.FTS_INDEXES["unicode61"][1], ""),
    "cjk": (schema.FTS_INDEXES["cjk"][1], ""),
    "cjk_prefix1": (schema.FTS_INDEXES["cjk"][1], ", prefix='1'"),
    "trigram": (schema.FTS_INDEXES["trigram"][1], ""),
}
SHADOW = ("data", "idx", "docsize", "config")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def connect(path):
    conn = cjk_tokenizer.load(apsw.Connection(path))
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-262144")  # 256 MiB
    conn.execute("PRAGMA temp_store=MEMORY")
    return conn


# ---- corpus -> base database (cached) -------------------------------------

def build_base(path, size, seed, langs=None):
    """Generate the corpus into a messages table; returns (summary, needles)."""
    tmp = path + ".tmp"
    if os.path.exists(tmp):
        os.remove(tmp)
    conn = connect(tmp)
    conn.execute(schema.SESSIONS_DDL)
    conn.execute(schema.MESSAGES_DDL)
    conn.execute("CREATE TABLE bench_meta(key TEXT PRIMARY KEY, value TEXT)")
    corpus = generate.Corpus(size, seed, langs=langs)
    t0 = time.perf_counter()
    sql_s = "INSERT INTO sessions(id, title, source, started_at, metadata) VALUES (?, ?, ?, ?, ?)"
    sql_m = ("INSERT INTO messages(id, session_id, role, content, reasoning, tool_name, tool_calls, "
             "tool_call_id, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
    tcj = generate.tool_calls_json
    with conn:
        for s in corpus.sessions():
            conn.execute(sql_s, (s.id, s.title, s.source, s.started_at, json.dumps({"lang": s.lang})))
            conn.executemany(sql_m, [(m["id"], m["session_id"], m["role"], m["content"], m["reasoning"],
                                      m["tool_name"], tcj(m) or None, m["tool_call_id"], m["timestamp"])
                                     for m in s.messages])
    gen_s = time.perf_counter() - t0
    with conn:  # the archive's secondary indexes, when the schema module names them
        for stmt in getattr(schema, "INDEXES_DDL", ()):
            if " ON messages(" in stmt:
                conn.execute(stmt)
    summary = corpus.summary()
    summary["generate_and_insert_seconds"] = round(gen_s, 1)
    needles = corpus.needle_manifest()
    with conn:
        conn.execute("INSERT INTO bench_meta VALUES ('summary', ?), ('needles', ?)",
                     (json.dumps(summary), json.dumps(needles, ensure_ascii=False)))
    conn.close()
    os.replace(tmp, path)
    return summary, needles


def load_base(path):
    conn = apsw.Connection(path)
    try:
        meta = dict(conn.execute("SELECT key, value FROM bench_meta"))
        return json.loads(meta["summary"]), json.loads(meta["needles"])
    finally:
        conn.close()


# ---- measurements -------------------------------------------------------

def text_bytes(conn, source="messages"):
    """(UTF-8 bytes of the indexed columns, rows, approx. bytes of CJK text) of a table or view.

    CJK bytes are estimated as 1.5 x (bytes - characters): nearly every
    non-ASCII character in the generated corpus is a 3-byte CJK letter."""
    nb = " + ".join(f"coalesce(length(CAST({c} AS BLOB)), 0)" for c in schema.FTS_COLUMNS)
    nc = " + ".join(f"coalesce(length({c}), 0)" for c in schema.FTS_COLUMNS)
    b, n, extra = conn.execute(f"SELECT sum({nb}), count(*), sum({nb}) - sum({nc}) FROM {source}").fetchone()
    return b or 0, n, int(1.5 * (extra or 0))


def fts_size(conn, table):
    names = [f"{table}_{s}" for s in SHADOW]
    q = ",".join("?" * len(names))
    return conn.execute(f"SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name IN ({q})", names).fetchone()[0]


def build_index(conn, name, table=None, content="messages", variant=None, settings=None):
    """Create and fill ``table`` (default fts_NAME); returns the seconds of the fill.

    ``variant``: (tokenize=, extra FTS5 options) for a tokenizer not in VARIANTS;
    ``settings``: FTS5 configuration options set before the fill, as the
    archive sets ``indexing.FTS_SETTINGS`` on its tables."""
    tokenize, extra = variant or VARIANTS[name]
    table = table or f"fts_{name}"
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    cols = ", ".join(schema.FTS_COLUMNS)
    conn.execute(f"CREATE VIRTUAL TABLE {table} USING fts5({cols}, content='{content}', "
                 f"content_rowid='id', tokenize='{tokenize}'{extra})")
    for key, value in (settings or {}).items():
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES (?, ?)", (key, value))
    t0 = time.perf_counter()
    with conn:
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('rebuild')")
    return time.perf_counter() - t0


def vocab_stats(conn, name):
    table = f"fts_{name}"
    conn.execute(f"CREATE VIRTUAL TABLE temp.v_{name} USING fts5vocab(main, {table}, 'row')")
    terms, tokens = conn.execute(f"SELECT count(*), sum(cnt) FROM temp.v_{name}").fetchone()
    conn.execute(f"DROP TABLE temp.v_{name}")
    return terms, tokens or 0


def tokenizer_throughput(conn, limit_bytes):
    """MB/s and tokens/s of each tokenizer over the first ``limit_bytes`` of text."""
    docs = []
    total = 0
    for row in conn.execute("SELECT content, reasoning, tool_name, tool_calls FROM messages ORDER BY id"):
        for v in row:
            if v:
                b = v.encode("utf-8")
                docs.append(b)
                total += len(b)
        if total >= limit_bytes:
            break
    out = {}
    for name in ("unicode61", "cjk", "trigram"):
        tokenize = VARIANTS[name][0].split()
        tok = conn.fts5_tokenizer(tokenize[0], tokenize[1:])
        try:
            best = None
            for _ in range(2):
                ntok = 0
                t0 = time.perf_counter()
                flags = apsw.FTS5_TOKENIZE_DOCUMENT
                for d in docs:
                    ntok += len(tok(d, flags, None, include_offsets=False, include_colocated=True))
                dt = time.perf_counter() - t0
                best = dt if best is None else min(best, dt)
        finally:
            tok = None  # release before the connection closes (a tokenizer object must not outlive it)
        out[name] = {"bytes": total, "seconds": best, "tokens": ntok,
                     "MB_per_s": total / 1e6 / best, "Mtokens_per_s": ntok / 1e6 / best}
    return out


def timeit(conn, sql, args, runs):
    conn.execute(sql, args).fetchall()  # warm-up
    ts = []
    rows = None
    for _ in range(runs):
        t0 = time.perf_counter()
        rows = conn.execute(sql, args).fetchall()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), rows


def pick_chars(conn, sample_bytes=20_000_000):
    """1-character queries: Han by corpus rank (1, 10, 100, 1000), plus a kana and a Hangul."""
    from collections import Counter

    cnt = Counter()
    got = 0
    for (c,) in conn.execute("SELECT content FROM messages ORDER BY id"):
        if c:
            cnt.update(ch for ch in c if "\u4e00" <= ch <= "\u9fff" or "\u3040" <= ch <= "\u30ff" or "\uac00" <= ch <= "\ud7a3")
            got += len(c)
            if got > sample_bytes:
                break
    han = [ch for ch, _ in cnt.most_common() if "\u4e00" <= ch <= "\u9fff"]
    kana = [ch for ch, _ in cnt.most_common() if "\u3040" <= ch <= "\u30ff"]
    hang = [ch for ch, _ in cnt.most_common() if "\uac00" <= ch <= "\ud7a3"]
    picks = []
    for rank in (1, 10, 100, 1000):
        if len(han) >= rank:
            picks.append((f"Han #{rank}", han[rank - 1]))
    if kana:
        picks.append(("kana #1", kana[0]))
    if hang:
        picks.append(("Hangul #1", hang[0]))
    return picks


def one_char_queries(conn, picks, runs, check_instr):
    res = []
    for label, ch in picks:
        q = f'"{ch}"*'
        row = {"label": label, "char": ch}
        for name in ("cjk", "cjk_prefix1"):
            t = f"fts_{name}"
            tc, rows = timeit(conn, f"SELECT count(*) FROM {t} WHERE {t} MATCH ?", (q,), runs)
            tr, _ = timeit(conn, f"SELECT rowid FROM {t} WHERE {t} MATCH ? ORDER BY rank LIMIT 20", (q,), runs)
            tn, _ = timeit(conn, f"SELECT rowid FROM {t} WHERE {t} MATCH ? ORDER BY rowid DESC LIMIT 20", (q,), runs)
            row[name] = {"count": rows[0][0], "count_ms": tc * 1e3, "rank20_ms": tr * 1e3, "newest20_ms": tn * 1e3}
        if check_instr:
            cond = " OR ".join(f"instr({c}, ?) > 0" for c in schema.FTS_COLUMNS)
            row["instr_count"] = conn.execute(f"SELECT count(*) FROM messages WHERE {cond}",
                                              (ch,) * len(schema.FTS_COLUMNS)).fetchone()[0]
        res.append(row)
    return res


def needle_check(conn, needles, runs):
    """Each needle's phrase on the cjk index must return exactly its ids."""
    out = []
    for n in needles:
        q = '"' + n["text"] + '"'
        dt, rows = timeit(conn, "SELECT rowid FROM fts_cjk WHERE fts_cjk MATCH ? ORDER BY rowid", (q,), runs)
        got = [r[0] for r in rows]
        out.append({"text": n["text"], "kind": n["kind"], "column": n["column"], "want": n["ids"], "got": got,
                    "ok": got == n["ids"], "ms": dt * 1e3})
    return out


def per_language(conn, langs, repeat):
    """unicode61 vs cjk on the sessions of each language alone (external content = a view)."""
    out = []
    for lang in langs:
        view = f"v_lang_{lang}"
        conn.execute(f"DROP VIEW IF EXISTS {view}")
        conn.execute(f"CREATE VIEW {view} AS SELECT * FROM messages WHERE session_id IN "
                     f"(SELECT id FROM sessions WHERE json_extract(metadata, '$.lang') = '{lang}')")
        nbytes, nrows, cjk = text_bytes(conn, view)
        if not nrows:
            continue
        row = {"lang": lang, "bytes": nbytes, "rows": nrows, "cjk_bytes": cjk}
        for name in ("unicode61", "cjk"):
            table = f"fts_lang_{name}"
            row[name] = min(build_index(conn, name, table, view) for _ in range(repeat))
            row[name + "_size"] = fts_size(conn, table)
            conn.execute(f"DROP TABLE {table}")
        conn.execute(f"DROP VIEW {view}")
        out.append(row)
    return out


def _vlen(v):
    n = 1
    while v >= 128:
        v >>= 7
        n += 1
    return n


def _token_class(t):
    if t == "\x1e":
        return "gap token (between CJK runs)"
    if not t.isascii() and ord(t[0]) >= 0x1100:
        return "CJK unigram (run-final, colocated)" if len(t) == 1 else "CJK bigram"
    if t.isdigit():
        return "number"
    if len(t) >= 8 and all(ch in "0123456789abcdef" for ch in t):
        return "hex id (8+ hex digits)"
    return "other word (Latin, identifiers, ...)"


def class_breakdown(conn, sample_bytes):
    """Where the cjk index's bytes go, by token class, on the first ``sample_bytes`` of text.

    Builds a cjk index over that prefix and walks it with fts5vocab 'instance',
    costing each (term, document) entry as FTS5 stores it: rowid delta,
    position-list size, column markers and position deltas (varints), plus the
    term itself.  Page and b-tree overhead are left out (the estimate's total is
    shown next to the measured size)."""
    nb = " + ".join(f"coalesce(length(CAST({c} AS BLOB)), 0)" for c in schema.FTS_COLUMNS)
    cut = conn.execute(f"SELECT id FROM (SELECT id, sum({nb}) OVER (ORDER BY id) AS cum FROM messages) "
                       "WHERE cum >= ? LIMIT 1", (sample_bytes,)).fetchone()
    cut = cut[0] if cut else conn.execute("SELECT max(id) FROM messages").fetchone()[0]
    conn.execute("DROP VIEW IF EXISTS v_sample")
    conn.execute(f"CREATE VIEW v_sample AS SELECT * FROM messages WHERE id <= {int(cut)}")
    nbytes, _, cjk = text_bytes(conn, "v_sample")
    build_index(conn, "cjk", "fts_sample", "v_sample")
    measured = fts_size(conn, "fts_sample")
    conn.execute("CREATE VIRTUAL TABLE temp.v_inst USING fts5vocab(main, fts_sample, 'instance')")
    colno = {c: i for i, c in enumerate(schema.FTS_COLUMNS)}
    stats = {}
    cur_term = cur_doc = None
    prev_rowid = posbytes = prev_col = prev_off = 0
    st = None

    def close_doc():
        st[3] += _vlen(max(1, cur_doc - prev_rowid)) + _vlen(posbytes * 2) + posbytes

    for term, doc, col, off in conn.execute("SELECT term, doc, col, offset FROM temp.v_inst"):
        if term != cur_term:
            if cur_term is not None:
                close_doc()
            cur_term, cur_doc, prev_rowid = term, None, 0
            st = stats.setdefault(_token_class(term), [0, 0, 0, 0])
            st[0] += 1
            st[3] += len(term.encode())
        if doc != cur_doc:
            if cur_doc is not None:
                close_doc()
                prev_rowid = cur_doc
            cur_doc, posbytes, prev_col, prev_off = doc, 0, 0, 0
            st[1] += 1
        c = colno[col]
        if c != prev_col:
            posbytes += 1 + _vlen(c)
            prev_col, prev_off = c, 0
        posbytes += _vlen(off - prev_off + 2)
        prev_off = off
        st[2] += 1
    if cur_term is not None:
        close_doc()
    conn.execute("DROP TABLE temp.v_inst")
    conn.execute("DROP TABLE fts_sample")
    conn.execute("DROP VIEW v_sample")
    return {"bytes": nbytes, "cjk_bytes": cjk, "measured": measured, "classes": stats}


# ---- machine ----------------------------------------------------------------

def loop_ms(rounds: int = 5) -> float:
    """Median ms of a pure-Python loop of 10**6 additions: how fast this shared machine runs at the
    moment, so that runs of one command on different days can be told apart from the code's changes."""
    times = []
    for _ in range(rounds):
        t0, total = time.perf_counter(), 0
        for i in range(1_000_000):
            total += i
        times.append((time.perf_counter() - t0) * 1000)
    return sorted(times)[rounds // 2]


def machine_info():
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "unknown"
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f"{kb / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    try:
        rev = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", HERE, "status", "--porcelain", "--", "csrc", "cjk_tokenizer"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        if rev and dirty:
            rev += " (+ uncommitted changes in csrc/ or cjk_tokenizer/)"
    except (OSError, subprocess.SubprocessError):
        rev = "unknown"
    return {
        "cpu": cpu, "cores": os.cpu_count(), "memory": mem, "os": platform.platform(),
        "python": platform.python_version(), "sqlite": apsw.sqlite_lib_version(), "apsw": apsw.apsw_version(),
        "cjk_tokenizer": f"{cjk_tokenizer.__version__} at {rev or 'unknown'}",
    }


# ---- report ---------------------------------------------------------------------

def fmt_report(cmd, info, summary, m):
    """Markdown for RESULTS.md from the measurements ``m``."""
    L = _report_corpus(cmd, info, summary, m)
    for section in (_report_builds, _report_languages, _report_classes, _report_tokenizers, _report_one_char):
        section(L, m)
    return "\n".join(L)


def _report_corpus(cmd, info, summary, m):
    L = []
    nbytes, nrows = m["nbytes"], m["nrows"]
    L.append(f"Command: `{cmd}`  ")
    L.append(f"Machine: {info['cpu']}, {info['cores']} cores, {info['memory']} RAM; {info['os']}  ")
    L.append(f"Versions: SQLite {info['sqlite']}, APSW {info['apsw']}, Python {info['python']}, "
             f"cjk_tokenizer {info['cjk_tokenizer']}  ")
    L.append(f"Corpus: bench/generate.py v{summary['generator_version']}, seed {summary['seed']}, "
             f"{nbytes / 1e6:.1f} MB of indexed text (content + reasoning + tool_name + tool_calls), "
             f"{nrows:,} messages in {summary['sessions']:,} sessions; the messages table takes "
             f"{m['base_bytes'] / 1e6:.1f} MB.  ")
    f = summary["pct_bytes_by_role"]
    L.append(f"Mix by bytes: tool output {f['tool']}%, assistant {f['assistant']}%, user {f['user']}%; "
             f"reasoning {summary['pct_bytes_by_field']['reasoning']}% of the bytes, on "
             f"{summary['pct_rows_with_reasoning']}% of the rows; CJK text ≈ {100 * m['cjk_bytes'] / nbytes:.0f}% "
             f"of the bytes; sessions by language {summary['sessions_by_lang']}.")
    L.append("")
    return L


def _report_builds(L, m):
    nbytes, builds, sizes, vocab = m["nbytes"], m["builds"], m["sizes"], m["vocab"]
    gb = nbytes / 1e9
    u61 = min(builds["unicode61"])
    cjk_b = min(builds["cjk"])
    L.append("### Build time and size")
    L.append("")
    L.append("Build = `INSERT INTO fts(fts) VALUES('rebuild')` of an external-content FTS5 table over the "
             "messages table (columns content, reasoning, tool_name, tool_calls; tokenize= as in "
             "`cjk_tokenizer/schema.py`), one transaction, journal_mode=OFF, synchronous=OFF, 256 MiB page "
             f"cache, page size 4096, default FTS5 settings. Each index was built {len(builds['unicode61'])}× in "
             "rotated order; the fastest build is shown. Size = pages of the shadow tables (_data, _idx, "
             "_docsize, _config) from dbstat. Terms and tokens from fts5vocab.")
    L.append("")
    L.append("| index | build s | s per GB of text | build MB/s | vs unicode61 | index MB | index / text | distinct terms | tokens |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in VARIANTS:
        b = min(builds[name])
        terms, tokens = vocab[name]
        L.append(f"| {name} | {b:.1f} | {b / gb:.1f} | {nbytes / 1e6 / b:.1f} | {b / u61:.2f}× | "
                 f"{sizes[name] / 1e6:.1f} | {sizes[name] / nbytes:.3f}× | {terms:,} | {tokens:,} |")
    L.append("")
    L.append("All build times (s): " + "; ".join(f"{n} " + ", ".join(f"{t:.2f}" for t in builds[n]) for n in VARIANTS))
    L.append("")
    L.append("Targets:")
    r = cjk_b / u61
    L.append(f"- cjk build ≤ 1.25× unicode61's time: **{r:.2f}×** — {'met' if r <= 1.25 else 'MISSED'}")
    r = sizes["cjk"] / nbytes
    L.append(f"- cjk index ≤ 0.55× the text: **{r:.3f}×** — {'met' if r <= 0.55 else 'MISSED'}")
    L.append(f"- trigram for comparison (≈ 2.3× expected): **{sizes['trigram'] / nbytes:.2f}×**")
    L.append(f"- FTS5 prefix='1' on the cjk index costs {(sizes['cjk_prefix1'] - sizes['cjk']) / 1e6:.1f} MB "
             f"(+{100 * (sizes['cjk_prefix1'] / sizes['cjk'] - 1):.0f}% of the index, "
             f"{sizes['cjk_prefix1'] / nbytes:.3f}× the text) and "
             f"{100 * (min(builds['cjk_prefix1']) / cjk_b - 1):+.0f}% build time.")
    L.append("")
    tr = vocab["cjk"][1] / vocab["unicode61"][1]
    dr = vocab["cjk"][0] / vocab["unicode61"][0]
    why = (f"Why: on this corpus the cjk index receives {tr:.2f}× the tokens and {dr:.2f}× the distinct terms "
           "that unicode61 does (unicode61 makes one token of a whole CJK run, cjk_unicode61 one bigram per "
           "character), and FTS5's in-memory hash, flush and segment merges grow with both; the index stores "
           "a (term, document) entry for nearly every bigram, so CJK text costs more index bytes than it has "
           "text bytes (see the two tables below). Both ratios therefore depend on the share of CJK text: ")
    en = [r for r in m.get("langs", ()) if r["lang"] == "en"]
    if en:
        r = en[0]
        why += (f"on the English-language sessions alone (≈{100 * r['cjk_bytes'] / r['bytes']:.0f}% CJK) the build "
                f"ratio is {r['cjk'] / r['unicode61']:.2f}× and the cjk index {r['cjk_size'] / r['bytes']:.3f}× "
                "their text.")
    else:
        why += "see the per-language table."
    L.append(why)


def _report_languages(L, m):
    if not m.get("langs"):
        return
    L.append("")
    L.append("### By session language")
    L.append("")
    L.append("The same two builds over the sessions of one language at a time (external content = a view "
             "of those sessions' messages; fastest of the builds). CJK share ≈ 1.5 × (bytes − characters) / bytes.")
    L.append("")
    L.append("| sessions | text MB | CJK share | unicode61 s | cjk s | cjk / unicode61 | unicode61 index / text | cjk index / text |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in m["langs"]:
        L.append(f"| {row['lang']} | {row['bytes'] / 1e6:.1f} | {100 * row['cjk_bytes'] / row['bytes']:.0f}% | "
                 f"{row['unicode61']:.2f} | {row['cjk']:.2f} | {row['cjk'] / row['unicode61']:.2f}× | "
                 f"{row['unicode61_size'] / row['bytes']:.3f}× | {row['cjk_size'] / row['bytes']:.3f}× |")


def _report_classes(L, m):
    cb = m.get("classes")
    if not cb:
        return
    L.append("")
    L.append("### Where the cjk index's bytes go")
    L.append("")
    tot = sum(v[3] for v in cb["classes"].values())
    L.append(f"A cjk index over the first {cb['bytes'] / 1e6:.1f} MB of text (CJK ≈ "
             f"{100 * cb['cjk_bytes'] / cb['bytes']:.0f}%), walked with fts5vocab 'instance'; each (term, "
             "document) entry costed as FTS5 encodes it (rowid delta, position-list size, column markers, "
             "position deltas) plus the term's bytes. The estimate totals "
             f"{tot / 1e6:.1f} MB against {cb['measured'] / 1e6:.1f} MB measured (the rest is page and b-tree "
             "overhead).")
    L.append("")
    L.append("| token class | distinct terms | (term, doc) entries | tokens | est. MB | share |")
    L.append("|---|---:|---:|---:|---:|---:|")
    for k, v in sorted(cb["classes"].items(), key=lambda kv: -kv[1][3]):
        L.append(f"| {k} | {v[0]:,} | {v[1]:,} | {v[2]:,} | {v[3] / 1e6:.2f} | {100 * v[3] / tot:.0f}% |")
    cjk_est = sum(v[3] for k, v in cb["classes"].items() if k.startswith(("CJK", "gap")))
    other_est = tot - cjk_est
    scale = cb["measured"] / tot
    cjk_text = cb["cjk_bytes"]
    other_text = cb["bytes"] - cjk_text
    if cjk_text and other_text:
        a = scale * cjk_est / cjk_text
        b = scale * other_est / other_text
        L.append("")
        L.append(f"Scaled to the measured size, CJK text costs ≈ **{a:.2f}×** its own bytes in the index "
                 f"(bigrams, run-final unigrams, gap tokens) and everything else ≈ **{b:.2f}×**, so the "
                 f"cjk index / text ratio is about {b:.2f} + {a - b:.2f} × (CJK share of the bytes): "
                 f"0.55× is reached at a CJK share of about "
                 f"{max(0.0, (0.55 - b) / (a - b)) * 100:.0f}% on this mix.")


def _report_tokenizers(L, m):
    tok = m["tok"]
    L.append("")
    L.append("### Tokenizer throughput")
    L.append("")
    L.append(f"Through APSW `Connection.fts5_tokenizer`, DOCUMENT mode, over the first {tok['cjk']['bytes'] / 1e6:.0f} MB "
             "of text, best of 2. This includes APSW building one Python object per token (the same cost per token "
             "for every tokenizer), so it under-states the C tokenizers; the build rate above is the real figure.")
    L.append("")
    L.append("| tokenizer | MB/s | M tokens/s | tokens per KB of text |")
    L.append("|---|---:|---:|---:|")
    for name, t in tok.items():
        L.append(f"| {name} | {t['MB_per_s']:.1f} | {t['Mtokens_per_s']:.2f} | {t['tokens'] / (t['bytes'] / 1e3):.0f} |")
    L.append("")


def _report_one_char(L, m):
    L.append("### 1-character queries with and without prefix='1'")
    L.append("")
    L.append("`\"X\"*` on the cjk index (median of the timed runs after a warm-up; rows = messages matched in any of "
             "the four columns; top-20 by bm25 `rank`, and newest-first by rowid). Characters by their rank in the corpus.")
    L.append("")
    L.append("| char | rows | count(*) ms | with prefix='1' | top-20 by rank ms | with prefix='1' | newest-20 ms | with prefix='1' |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in m["onechar"]:
        a, b = r["cjk"], r["cjk_prefix1"]
        L.append(f"| {r['char']} ({r['label']}) | {a['count']:,} | {a['count_ms']:.2f} | {b['count_ms']:.2f} | "
                 f"{a['rank20_ms']:.2f} | {b['rank20_ms']:.2f} | {a['newest20_ms']:.2f} | {b['newest20_ms']:.2f} |")
    nd = m["needles"]
    ok = sum(n["ok"] for n in nd)
    L.append("")
    L.append(f"Check: {ok}/{len(nd)} planted needles were found by the cjk index (phrase query over all columns) in "
             f"exactly the messages the generator planted them in (median {statistics.median(n['ms'] for n in nd):.2f} ms, "
             f"max {max(n['ms'] for n in nd):.2f} ms per query).")


def measure(base, args, summary, needles) -> dict:
    """Every measurement, on a copy of the generated base database."""
    run = os.path.join(args.workdir, f"run-{os.getpid()}.db")
    shutil.copyfile(base, run)
    conn = connect(run)
    m = {}
    try:
        m["nbytes"], m["nrows"], m["cjk_bytes"] = text_bytes(conn)
        m["base_bytes"] = conn.execute("SELECT sum(pgsize) FROM dbstat WHERE name='messages'").fetchone()[0]
        conn.execute("SELECT count(*) FROM messages WHERE content LIKE '%zz%'").fetchone()  # warm the OS cache

        names = list(VARIANTS)
        builds = {n: [] for n in names}
        for r in range(args.repeat):
            order = names[r % len(names):] + names[: r % len(names)]
            for name in order:
                dt = build_index(conn, name)
                builds[name].append(dt)
                log(f"  build {name}: {dt:.2f} s ({m['nbytes'] / 1e6 / dt:.1f} MB/s)")
        m["builds"] = builds
        m["sizes"] = {n: fts_size(conn, f"fts_{n}") for n in names}
        m["vocab"] = {n: vocab_stats(conn, n) for n in names}
        log("tokenizer throughput ...")
        m["tok"] = tokenizer_throughput(conn, int(args.tok_mb * 1e6))
        log("1-character queries ...")
        m["onechar"] = one_char_queries(conn, pick_chars(conn), args.runs, check_instr=args.smoke)
        m["needles"] = needle_check(conn, needles, args.runs)
        for n in names:
            cnt = conn.execute(f"SELECT count(*) FROM fts_{n}_docsize").fetchone()[0]
            if cnt != m["nrows"]:
                raise SystemExit(f"index {n} holds {cnt} rows, messages has {m['nrows']}")
        for n in names:  # free the space before the extra builds
            conn.execute(f"DROP TABLE fts_{n}")
        if not args.no_langs:
            log("per-language builds ...")
            m["langs"] = per_language(conn, list(summary["sessions_by_lang"]), max(1, min(2, args.repeat)))
        if args.classes_mb > 0:
            log("index bytes by token class ...")
            m["classes"] = class_breakdown(conn, int(args.classes_mb * 1e6))
    finally:
        conn.close()
        if not args.keep:
            os.remove(run)
    return m


def sanity_problems(m) -> list:
    """What is wrong with the measurements' shape (never the timings)."""
    problems = []
    sizes, nbytes = m["sizes"], m["nbytes"]
    for n in VARIANTS:
        ratio = sizes[n] / nbytes
        if not 0.01 < ratio < 10:
            problems.append(f"{n} index/text ratio {ratio:.3f} is not sane")
        if not all(b > 0 for b in m["builds"][n]):
            problems.append(f"{n} build time not positive")
    if not sizes["trigram"] > sizes["cjk"] > 0:
        problems.append("expected trigram index > cjk index > 0")
    if not sizes["cjk_prefix1"] > sizes["cjk"]:
        problems.append("prefix='1' index is not larger than the plain one")
    for r in m["onechar"]:
        if r["cjk"]["count"] != r["cjk_prefix1"]["count"]:
            problems.append(f"1-char {r['char']}: prefix index count differs")
        if "instr_count" in r and r["instr_count"] != r["cjk"]["count"]:
            problems.append(f"1-char {r['char']}: index found {r['cjk']['count']} rows, instr() {r['instr_count']}")
    if not m["onechar"]:
        problems.append("no 1-character queries (no CJK in the corpus?)")
    for n in m["needles"]:
        if not n["ok"]:
            problems.append(f"needle {n['text']!r} ({n['kind']}): want ids {n['want']}, got {n['got']}")
    if not m["needles"]:
        problems.append("no needles were planted")
    if m.get("langs") and sum(r["rows"] for r in m["langs"]) != m["nrows"]:
        problems.append("per-language views do not cover every message")
    return problems


def _parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="300MB", help="bytes of text (default 300MB)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--langs", help="session language weights for the generator, e.g. zh=0.45,en=0.25,ja=0.15,ko=0.15")
    ap.add_argument("--repeat", type=int, default=2, help="builds per index, order rotated (default 2)")
    ap.add_argument("--tok-mb", type=float, default=64, help="MB of text for the APSW tokenizer throughput (default 64)")
    ap.add_argument("--classes-mb", type=float, default=20,
                    help="MB of text for the index-bytes-by-token-class walk (default 20; 0 skips it)")
    ap.add_argument("--no-langs", action="store_true", help="skip the per-language builds")
    ap.add_argument("--runs", type=int, default=5, help="timed runs per query (default 5)")
    ap.add_argument("--workdir", default=os.path.join(HERE, "out"), help="databases go here (default bench/out)")
    ap.add_argument("--results", help="Markdown file to update (default bench/RESULTS.md; with --smoke: none)")
    ap.add_argument("--smoke", action="store_true", help="~2 MB, one build each, seconds; checks sanity, writes no results")
    ap.add_argument("--keep", action="store_true", help="keep the run database")
    ap.add_argument("--render", metavar="JSON",
                    help="only re-render the RESULTS.md section from a saved bench/out/index-results-SIZE.json")
    return ap


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.render:
        with open(args.render, encoding="utf-8") as f:
            saved = json.load(f)
        report = fmt_report(saved["cmd"], saved["info"], saved["summary"], saved["m"])
        print(report)
        if args.results or not args.smoke:
            results.update_section(args.results or os.path.join(HERE, "RESULTS.md"), "index", report,
                                   saved.get("stamp"))
        return 0
    if args.smoke:
        args.size, args.repeat, args.tok_mb, args.runs, args.classes_mb = "2MB", 1, 2, 2, 1
    results_path = args.results or (None if args.smoke else os.path.join(HERE, "RESULTS.md"))
    size = generate.parse_size(args.size)
    langs = generate.parse_langs(args.langs)
    os.makedirs(args.workdir, exist_ok=True)
    cmd = "python bench/bench_index.py " + " ".join(argv if argv is not None else sys.argv[1:])

    tag = "" if langs is None else "-" + "-".join(f"{k}{v:g}" for k, v in sorted(langs.items()))
    base = os.path.join(args.workdir, f"base-{size}-s{args.seed}{tag}-g{generate.GENERATOR_VERSION}.db")
    if os.path.exists(base):
        summary, needles = load_base(base)
        log(f"reusing {base}")
    else:
        log(f"generating {size / 1e6:.0f} MB corpus into {base} ...")
        summary, needles = build_base(base, size, args.seed, langs)
        log(f"  done in {summary['generate_and_insert_seconds']} s")
    m = measure(base, args, summary, needles)

    saved = {"cmd": cmd, "info": machine_info(), "summary": summary, "m": m, "stamp": results.now_stamp()}
    with open(os.path.join(args.workdir, f"index-results-{size}.json"), "w", encoding="utf-8") as f:
        json.dump(saved, f, ensure_ascii=False, indent=1)
    report = fmt_report(cmd, saved["info"], summary, m)
    print(report)

    problems = sanity_problems(m)
    if problems:
        print("\nSANITY CHECK FAILED:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1

    if results_path:
        results.update_section(results_path, "index", report, saved["stamp"])
        log(f"wrote the index section of {results_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
