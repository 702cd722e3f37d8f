"""cjk_rank(): bm25's order without bm25's count of a lone phrase's rows (csrc/cjk_rank.h).

Contract: cjk_rank(tbl, weights...) = FTS5's bm25(tbl, weights...) divided by
the sum of the query phrases' IDFs (so -bm25/cjk_rank is that sum, the same
for every row of a query, and the order is bm25's); a one-phrase query's
value is its term-frequency part alone, between -(k1 + 1) and 0.
"""
from __future__ import annotations

import math
import os
import random
import sqlite3
import sys

import apsw
import pytest

import cjk_tokenizer
from cjk_tokenizer import Archive

sys.path.insert(0, os.path.dirname(__file__))
from _plugin_hosts import require_loading  # noqa: E402

K1, B = 1.2, 0.75
WEIGHTS = (10.0, 2.0, 3.0, 3.0)
WORDS = ["alpha", "beta", "gamma", "delta", "部署", "项目", "管理", "服务器", "エラー", "파일"]


def _corpus(n=300, seed=7):
    """Rows of four columns; each word's count per row varies, and so do the rows' lengths."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        cols = []
        for c in range(4):
            k = rng.choice((0, 1, 2, 5, 12)) if c < 2 else rng.choice((0, 1, 3))
            cols.append(" ".join(rng.choice(WORDS[: 4 + c * 2]) for _ in range(k)))
        rows.append(cols)
    return rows


@pytest.fixture(scope="module")
def db():
    conn = apsw.Connection(":memory:")
    cjk_tokenizer.load(conn)
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(a, b, c, d, tokenize='cjk_unicode61 unigrams 1')")
    conn.execute("CREATE VIRTUAL TABLE u USING fts5(a, b, c, d)")  # unicode61: one token per word
    for name in ("t", "u"):
        with conn:
            conn.executemany(f"INSERT INTO {name} VALUES (?, ?, ?, ?)", _corpus())
    yield conn
    conn.close()


QUERIES = ["alpha", '"部署"', "项目", "服务器", "alpha AND beta", "alpha OR 部署", "gamma NOT delta",
           "a: beta", "NEAR(alpha beta, 3)", "alp*", '"管理" 项目', "エラー OR 파일 OR delta"]


def _ranked(conn, table, fn, query, weights=WEIGHTS):
    args = "".join(f", {w}" for w in weights)
    return conn.execute(f"SELECT rowid, {fn}({table}{args}) AS s FROM {table} WHERE {table} MATCH ? "
                        "ORDER BY s, rowid DESC", (query,)).fetchall()


@pytest.mark.parametrize("table", ["t", "u"])
@pytest.mark.parametrize("query", QUERIES)
def test_orders_every_query_as_bm25_does_and_differs_by_one_factor_per_query(db, table, query):
    ours, theirs = _ranked(db, table, "cjk_rank", query), _ranked(db, table, "bm25", query)
    assert len(ours) > 3, "the corpus must give each query several rows to order"
    assert [r for r, _ in ours] == [r for r, _ in theirs]
    factors = {r: b / c for (r, c), (_, b) in zip(ours, theirs)}
    first = next(iter(factors.values()))
    assert first > 0 and all(math.isclose(f, first, rel_tol=1e-9) for f in factors.values())


def test_rows_bm25_scores_alike_tie_and_come_newest_first():
    # phrases in half the rows or more share bm25's floor IDF: rows with different phrases
    # then score bit for bit alike in bm25, and must here too (the newer first)
    rng = random.Random(1)
    words = ["大别山", "项目", "管理", "error", "deploy", "失败", "部署", "the", "foo", "bar", "服务", "系统", "测试"]

    def text(n):
        return " ".join(rng.choice(words) for _ in range(n)) if n else None

    with Archive(":memory:") as ar:
        for i in range(300):
            ar.add_message(f"s{i % 7}", rng.choice(["user", "assistant", "tool"]), text(rng.randint(0, 12)),
                           reasoning=text(rng.randint(0, 6)), tool_name=rng.choice([None, "deploy", "foo_bar"]),
                           tool_calls=rng.choice([None, [{"name": "x", "arguments": text(3)}]]),
                           timestamp=rng.choice([1000, 2000, 3000 + i]))
        t = "messages_fts_cjk"
        ties = 0
        for query in ["error OR 部署 OR 大别山", "失败 OR the", "项目 OR foo OR 系统", "deploy 测试"]:
            match = ar.explain(query, include_reasoning=True)["match"]
            bm = dict(ar.conn.execute(f"SELECT rowid, bm25({t}, {', '.join(map(str, WEIGHTS))}) FROM {t} "
                                      f"WHERE {t} MATCH ?", (match,)))
            got = [h.message_id for h in ar.search(query, include_reasoning=True, limit=500, relevance_bound=None)]
            assert got == sorted(bm, key=lambda r: (bm[r], -r)), query
            ties += len(bm) - len(set(bm.values()))
        assert ties > 0  # the corpus has such rows


def _idf(conn, table, phrase):
    n = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    hits = conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (phrase,)).fetchone()[0]
    return max(1e-6, math.log((n - hits + 0.5) / (hits + 0.5)))


@pytest.mark.parametrize("query,phrases", [("alpha AND beta", ["alpha", "beta"]),
                                           ("服务器 OR エラー OR 파일", ["服务器", "エラー", "파일"])])
def test_the_factor_is_the_sum_of_the_phrases_idfs(db, query, phrases):
    ours, theirs = _ranked(db, "t", "cjk_rank", query), _ranked(db, "t", "bm25", query)
    total = sum(_idf(db, "t", p) for p in phrases)
    assert all(math.isclose(b / c, total, rel_tol=1e-9) for (_, c), (_, b) in zip(ours, theirs))


def _expected_one_word(rows, word, weights):
    """The term-frequency part of bm25 for one word, from the unicode61 table's tokens (one per word)."""
    sizes = [sum(len(col.split()) for col in row) for row in rows]
    avgdl = sum(sizes) / len(rows)
    out = {}
    for rowid, (row, size) in enumerate(zip(rows, sizes), start=1):
        f = sum(w * col.split().count(word) for w, col in zip(weights, row))
        if f:
            out[rowid] = -(f * (K1 + 1)) / (f + K1 * (1 - B + B * size / avgdl))
    return out


@pytest.mark.parametrize("weights", [WEIGHTS, (1.0, 2.0), (), (0.5, 0.5, 0.5, 0.5, 99.0)])
@pytest.mark.parametrize("word", ["alpha", "delta", "部署"])
def test_one_word_scores_are_its_term_frequency_part_of_bm25(db, word, weights):
    # missing weights count 1.0 and extra ones are ignored, as in bm25
    full = tuple(weights[:4]) + (1.0,) * (4 - len(weights[:4]))
    expected = _expected_one_word(_corpus(), word, full)
    got = dict(_ranked(db, "u", "cjk_rank", word, weights))
    assert got.keys() == expected.keys()
    assert all(math.isclose(got[r], expected[r], rel_tol=1e-12) for r in got)
    assert all(-(K1 + 1) < v < 0 for v in got.values())


def test_a_word_in_most_rows_still_ranks_while_bm25s_idf_collapses(db):
    # alpha is in most rows: bm25's IDF is floored at 1e-6 and its scores shrink with it
    n = db.execute("SELECT count(*) FROM u").fetchone()[0]
    assert db.execute("SELECT count(*) FROM u WHERE u MATCH 'alpha'").fetchone()[0] > n / 2
    ours, theirs = _ranked(db, "u", "cjk_rank", "alpha"), _ranked(db, "u", "bm25", "alpha")
    assert [r for r, _ in ours] == [r for r, _ in theirs]
    assert abs(theirs[0][1]) < 1e-5 < abs(ours[0][1])


def test_archive_ranks_by_cjk_rank_with_bm25s_order_and_explain_names_it(tmp_path):
    ar = Archive(str(tmp_path / "a.db"))
    msgs = [{"session_id": f"s{i % 5}", "role": "assistant", "content": text, "timestamp": 1_700_000_000 + i}
            for i, text in enumerate(" ".join(row[:2]) for row in _corpus(120, seed=3))]
    ar.bulk_import(msgs)
    for query in ("部署", "alpha", "alpha 部署"):
        exp = ar.explain(query, sql=True)
        assert exp["rank"].startswith("cjk_rank(") and "bm25(" not in exp["sql"][0]["sql"]
        # the rank explain names is relevance's, whatever the sort asked for
        assert ar.explain(query, sql=True, sort="newest")["rank"] == exp["rank"] == ar.explain(query)["rank"]
        hits = ar.search(query, limit=50)
        t = exp["rank"].split("(", 1)[1].split(",", 1)[0]
        rows = ar._conn.execute(f"SELECT rowid, bm25({t}, {', '.join(map(str, WEIGHTS))}) AS s FROM {t} "
                                f"WHERE {t} MATCH ? ORDER BY s, rowid DESC LIMIT 50", (exp["match"],)).fetchall()
        assert [h.message_id for h in hits] == [r for r, _ in rows]
        assert all(0 < h.score < K1 + 1 for h in hits)
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True)
    ar.close()


def test_without_the_extension_relevance_is_ranked_by_fts5s_bm25(tmp_path):
    path = tmp_path / "n.db"
    with Archive(path) as ar:
        for i, text in enumerate(["deploy the deploy server", "deploy once", "nothing here", "deploy deploy"]):
            ar.add_message("s", "user", text, timestamp=1000.0 + i)
    with Archive(path, extension=False) as ar:
        exp = ar.explain("deploy", sql=True)
        st = exp["sql"][0]
        assert exp["rank"].startswith("bm25(messages_fts_u61, ") and "cjk_rank" not in st["sql"]
        hits = ar.search("deploy")
        rows = ar._conn.execute("SELECT rowid, bm25(messages_fts_u61, 10.0, 2.0, 3.0, 3.0) AS s FROM messages_fts_u61 "
                                "WHERE messages_fts_u61 MATCH ? ORDER BY s, rowid DESC", (st["params"][0],)).fetchall()
        assert len(rows) == 3 and [(h.message_id, h.score) for h in hits] == [(r, -s) for r, s in rows]


def test_stdlib_sqlite3_ranks_alike():
    """Debian's SQLite 3.40 through stdlib sqlite3 (tests/run_all.sh's debian stage, where a skip fails)."""
    require_loading()
    conn = sqlite3.connect(":memory:")
    cjk_tokenizer.load(conn)
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(a, b, c, d, tokenize='cjk_unicode61')")
    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", _corpus(80))
    for query in ("部署", "alpha OR 项目"):
        ours = conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY cjk_rank(t, 10.0, 2.0), rowid DESC",
                            (query,)).fetchall()
        theirs = conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t, 10.0, 2.0), rowid DESC",
                              (query,)).fetchall()
        assert ours == theirs and len(ours) > 3


def _pages_read(path, sql, query):
    conn = apsw.Connection(str(path))
    cjk_tokenizer.load(conn)
    try:
        conn.execute(sql, (query,)).fetchall()
        return conn.status(apsw.SQLITE_DBSTATUS_CACHE_MISS)[0]
    finally:
        conn.close()


def test_one_phrase_reads_only_the_rows_it_scores_where_bm25_reads_every_match(tmp_path):
    path = tmp_path / "r.db"
    conn = apsw.Connection(str(path))
    cjk_tokenizer.load(conn)
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(a, b, tokenize='cjk_unicode61')")
    with conn:
        conn.executemany("INSERT INTO t VALUES (?, ?)", ((f"部署 alpha filler{i}", "beta") for i in range(40_000)))
    conn.execute("INSERT INTO t(t) VALUES ('optimize')")
    conn.close()
    newest = "SELECT rowid, {}(t, 10.0, 2.0) AS s FROM t WHERE t MATCH ? AND rowid > 39990 ORDER BY s"
    plain = "SELECT rowid, 0 AS s FROM t WHERE t MATCH ? AND rowid > 39990"
    for query in ("部署", "alpha"):
        base = _pages_read(path, plain, query)  # the walk itself, with no ranking
        ours, theirs = (_pages_read(path, newest.format(fn), query) - base for fn in ("cjk_rank", "bm25"))
        # bm25 counts the term's 40,000 rows first (its doclist spans many pages); cjk_rank reads the
        # ten rows' sizes
        assert theirs > 5 * max(ours, 1), (query, ours, theirs)
    # two phrases: both count each phrase's rows, for the IDFs that weigh them
    ours, theirs = (_pages_read(path, newest.format(fn), "部署 beta") for fn in ("cjk_rank", "bm25"))
    assert ours == theirs
