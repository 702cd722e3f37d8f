"""explain(sql=True): the statements a search runs, which a user can run as they are.

Each statement comes back with its parameters and as one literal statement;
run through APSW (the Python functions registered where the statement needs
them) or pasted into the sqlite3 shell, it gives the same message ids, in
the same order, as ``Archive.search`` with the same arguments.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import apsw
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import _search_corpus as corpus  # noqa: E402

import cjk_tokenizer  # noqa: E402
from cjk_tokenizer import Archive  # noqa: E402
from cjk_tokenizer.search import ensure_functions, explain  # noqa: E402

ROWS = corpus.messages(seed=5, n=160)


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    path = tmp_path_factory.mktemp("explain") / "a.db"
    ar = Archive(path, indexes=("cjk", "unicode61", "trigram"))
    sessions = {sid: ar.add_session(sid) for sid in sorted({r["session_id"] for r in ROWS})}
    for r in ROWS:
        ar.add_message(sessions[r["session_id"]], r["role"], r["content"], reasoning=r["reasoning"],
                       tool_name=r["tool_name"], tool_calls=json.loads(r["tool_calls"]) if r["tool_calls"] else None,
                       timestamp=r["timestamp"])
    yield ar
    ar.close()


@pytest.fixture(scope="module")
def reader(archive):
    """A connection of its own, as a user would open one: extension loaded, Python functions registered."""
    conn = cjk_tokenizer.load(apsw.Connection(str(archive.path)))
    ensure_functions(conn)
    yield conn
    conn.close()


def _run(conn, statements, literal: bool = False) -> list[int]:
    rows = []
    for st in statements:
        rows += conn.execute(st["literal"]).fetchall() if literal else conn.execute(st["sql"], st["params"]).fetchall()
    return [r[0] for r in rows]


# (query, search arguments): each plan kind and route, exclusions, sorts, filters, paging
CASES = [
    ("部署", {}),
    ("大", {}),
    ("数据库 OR 服务器", {"sort": "newest"}),
    ("python", {"include_reasoning": True}),
    ("python -error", {}),
    ("youer文", {}),
    ("カタカナ", {"route": "trigram"}),
    ("hello", {"route": "unicode61", "relevance_bound": 3}),
    ("黄冈市", {"route": "trigram"}),
    ("hello", {"route": "unicode61", "sort": "oldest"}),
    ("数据", {"route": "scan", "roles": ["user", "assistant"]}),
    ("-python", {"limit": 5}),
    ("大 python", {"route": "scan"}),
    ("data*", {"offset": 3, "limit": 4}),
    ("a", {"after": 1_700_000_000 + 60 * 40, "before": 1_700_000_000 + 60 * 120}),
]


@pytest.mark.parametrize("query, args", CASES, ids=[q for q, _ in CASES])
def test_the_explained_sql_finds_what_search_finds(archive, reader, query, args):
    expected = [h.message_id for h in archive.search(query, **args)]
    out = archive.explain(query, sql=True, **args)
    assert out["sql"] and all(set(st) == {"sql", "params", "literal"} for st in out["sql"])
    assert _run(reader, out["sql"]) == expected
    assert _run(reader, out["sql"], literal=True) == expected


def test_the_cases_cover_every_plan_and_route_and_find_things(archive):
    # the comparison above means something only if the searches find things
    assert all(archive.search(q, **a) for q, a in CASES)
    plans = {(out["plan"], out["route"], bool(out["sql_functions"]), "rank_floor" in out)
             for out in (archive.explain(q, sql=True, **a) for q, a in CASES)}
    assert {p[:2] for p in plans} >= {("fts", "cjk"), ("fts", "trigram"), ("combined", "cjk"),
                                      ("combined", "trigram"), ("combined", "unicode61"), ("combined", "scan")}
    assert ("combined", "cjk", True, False) in plans  # a term checked in Python on the cjk route
    assert ("combined", "unicode61", True, True) in plans  # a combined plan ranked above a floor


@pytest.mark.parametrize("offset", [0, 3, 8])
def test_a_bounded_relevance_page_is_explained_statement_by_statement(archive, reader, offset):
    args = {"relevance_bound": 5, "limit": 4, "offset": offset}
    hits = archive.search("大", **args)
    assert hits.ranked_among == 5  # more than 5 messages hold 大: the floor applies
    out = archive.explain("大", sql=True, **args)
    assert isinstance(out["rank_floor"], int)
    assert len(out["sql"]) == (2 if offset == 3 else 1)  # the page at offset 3 straddles the floor
    assert _run(reader, out["sql"]) == [h.message_id for h in hits]


def test_sql_functions_name_what_the_statement_needs(archive):
    assert archive.explain("部署", sql=True)["sql_functions"] == []
    assert archive.explain("数据", sql=True, route="scan")["sql_functions"] == ["cjk_fold"]
    assert "cjk_term_match" in archive.explain("大 python", sql=True, route="scan")["sql_functions"]
    assert "sql" not in archive.explain("部署")  # only on request


def test_sql_needs_the_connection_and_search_arguments_need_sql():
    with pytest.raises(ValueError, match="needs the archive's connection"):
        explain("部署", {"cjk"}, sql=True)
    with pytest.raises(TypeError, match="only with sql=True"):
        explain("部署", {"cjk"}, sort="newest")


def test_the_literal_statement_runs_in_the_sqlite3_shell(archive, sqlite3_shell):
    for query, args in [("部署", {}), ("python -error", {"sort": "newest"}), ("黄冈市", {"route": "trigram"})]:
        out = archive.explain(query, sql=True, **args)
        assert out["sql_functions"] == [], query
        (st,) = out["sql"]
        proc = subprocess.run([sqlite3_shell, "-bail", "-batch", "-readonly", str(archive.path),
                               f".load {cjk_tokenizer.loadable_path()}", ".mode json", st["literal"]],
                              input="", capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        shown = [next(iter(row.values())) for row in json.loads(proc.stdout or "[]")]
        assert shown == [h.message_id for h in archive.search(query, **args)], query
