"""run_search / explain: what an Archive caller relies on — filters, sorting,
reasoning, snippets, forced routes, errors and bounded time."""
from __future__ import annotations

import json
import os
import re
import sys
import time

import apsw
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import _search_corpus as corpus  # noqa: E402

from cjk_tokenizer import fold  # noqa: E402
from cjk_tokenizer.errors import QueryError  # noqa: E402
from cjk_tokenizer.search import MAX_LIMIT, explain, run_search  # noqa: E402

ALL = corpus.ALL_LIVE
NO_EXT = frozenset({"unicode61", "trigram"})
BIG = "填充文字 filler words. " * 60_000 + "部署 needle 在这里。" + "尾部 tail. " * 60_000  # ~2.5 MB

ROWS = [
    dict(id=1, session_id="a", role="user", timestamp=1000.0, content="部署失败了，请检查日志。deploy failed"),
    dict(id=2, session_id="a", role="assistant", timestamp=1010.0, content="", reasoning="秘密的想法 zebraword only"),
    dict(id=3, session_id="a", role="assistant", timestamp=1020.0, content="zebraword in content",
         reasoning="zebraword again"),
    dict(id=4, session_id="b", role="tool", timestamp=1030.0, content="output 大别山风景", tool_name="bash"),
    dict(id=5, session_id="b", role="assistant", timestamp=1040.0, content="calling a tool",
         tool_calls=json.dumps([{"name": "kubectl", "arguments": {"cmd": "kubectl rollout 部署"}}], ensure_ascii=False)),
    dict(id=6, session_id="b", role="user", timestamp=1050.0, content="请修改youer服务"),
    dict(id=7, session_id="c", role="user", timestamp=1060.0, content=BIG),
    dict(id=8, session_id="c", role="user", timestamp=1070.0, content="abc 山别 def"),
    dict(id=9, session_id="c", role="user", timestamp=1080.0, content="abc 别山 def"),
    dict(id=10, session_id="c", role="assistant", timestamp=1090.0, content="Ｈｅｌｌｏ ｗｏｒｌｄ, ｶﾀｶﾅ"),
]
for r in ROWS:
    for c in ("content", "reasoning", "tool_name", "tool_calls"):
        r.setdefault(c, None)


@pytest.fixture(scope="module")
def conn():
    c = corpus.build(ROWS)
    yield c
    c.close()


def search(conn, q, **kw):
    kw.setdefault("live_indexes", ALL)
    return run_search(conn, q, **kw)


def ids(hits):
    return [h.message_id for h in hits]


# ---- reasoning and matched_in ------------------------------------------------


@pytest.mark.parametrize("live, route", [(ALL, None), (NO_EXT, None), (ALL, "cjk"), (ALL, "scan")])
def test_reasoning_is_searched_only_on_request_and_labelled_thought(conn, live, route):
    assert search(conn, "秘密", live_indexes=live, route=route) == []
    hits = search(conn, "秘密", live_indexes=live, route=route, include_reasoning=True)
    assert ids(hits) == [2]
    assert hits[0].matched_in == ["reasoning"] and hits[0].column == "reasoning"
    assert "秘密" in hits[0].snippet


@pytest.mark.parametrize("live", [ALL, NO_EXT])
def test_a_term_said_and_thought_is_reported_as_said_and_ranks_first(conn, live):
    hits = search(conn, "zebraword", live_indexes=live, include_reasoning=True)
    assert ids(hits) == [3, 2]  # content weighs more than reasoning
    assert hits[0].matched_in == ["content", "reasoning"] and hits[0].column == "content"
    assert hits[0].snippet == "zebraword in content"
    assert hits[1].matched_in == ["reasoning"]


def test_tool_calls_and_tool_name_are_searched_by_default(conn):
    hits = search(conn, "kubectl")
    assert ids(hits) == [5] and hits[0].matched_in == ["tool_calls"] and "kubectl" in hits[0].snippet
    hits = search(conn, "bash")
    assert ids(hits) == [4] and hits[0].matched_in == ["tool_name"]


# ---- exact CJK semantics on every route -----------------------------------------


@pytest.mark.parametrize("live, route", [(ALL, None), (NO_EXT, None), (frozenset({"unicode61"}), None),
                                         (ALL, "cjk"), (ALL, "scan")])
def test_one_cjk_character_finds_every_occurrence(conn, live, route):
    # 别 starts a run (别山), ends one (山别) and sits inside one (大别山)
    assert sorted(ids(search(conn, "别", live_indexes=live, route=route))) == [4, 8, 9]


@pytest.mark.parametrize("live, route", [(ALL, None), (NO_EXT, None), (ALL, "scan")])
def test_a_word_then_one_cjk_character_means_the_run_starts_there(conn, live, route):
    # the cjk index alone would also match "abc 山别" (a run ending in 别)
    assert ids(search(conn, "abc别", live_indexes=live, route=route)) == [9]
    assert ids(search(conn, '"abc 别 def"', live_indexes=live, route=route)) == []


@pytest.mark.parametrize("live", [ALL, NO_EXT])
def test_words_glued_to_cjk_text_and_width_variants(conn, live):
    assert ids(search(conn, "youer", live_indexes=live)) == [6]
    assert ids(search(conn, "修改youer", live_indexes=live)) == [6]
    assert ids(search(conn, "hello world", live_indexes=live)) == [10]
    assert ids(search(conn, "カタカナ", live_indexes=live)) == [10]


# ---- filters, sorting, limits -------------------------------------------------------


def test_filters(conn):
    assert sorted(ids(search(conn, "部署"))) == [1, 5, 7]
    assert ids(search(conn, "部署", roles=["assistant"])) == [5]
    assert ids(search(conn, "部署", roles="user", sort="oldest")) == [1, 7]
    assert ids(search(conn, "部署", session_id="b")) == [5]
    # after is inclusive, before exclusive
    assert ids(search(conn, "部署", after=1040, sort="oldest")) == [5, 7]
    assert ids(search(conn, "部署", before=1040)) == [1]
    import datetime as dt

    assert ids(search(conn, "部署", after=dt.datetime.fromtimestamp(1040, dt.timezone.utc), before=1060.5,
                      sort="oldest")) == [5, 7]


@pytest.mark.parametrize("live", [ALL, NO_EXT, frozenset()])
def test_newest_and_oldest(conn, live):
    assert ids(search(conn, "部署 OR zebraword OR 别", live_indexes=live, sort="newest")) == [9, 8, 7, 5, 4, 3, 1]
    assert ids(search(conn, "部署 OR zebraword OR 别", live_indexes=live, sort="oldest", limit=3)) == [1, 3, 4]


def test_newest_first_does_not_score_every_match(conn):
    """On an fts plan, newest/oldest walk the index in rowid order: no sort step."""
    seen = []

    def trace(cursor, sql, bindings):
        seen.append((sql, bindings))
        return True

    conn.exec_trace = trace
    try:
        search(conn, "部署", sort="newest", limit=1)
        search(conn, "部署", sort="relevance", limit=1)
    finally:
        conn.exec_trace = None
    plans, sqls, floors = [], [], []
    for sql, bindings in seen:
        if "MATCH" in sql and "ORDER BY" in sql:
            plan = " ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql, bindings))
            # relevance first looks for the newest-N floor (bounded relevance): a rowid walk too
            floor = re.search(r"LIMIT 1 OFFSET [1-9]", sql) is not None  # OFFSET the bound
            (floors if floor else plans).append(plan)
            sqls += [] if floor else [sql]
    assert len(plans) == 2 and len(floors) == 1 and "TEMP B-TREE" not in floors[0]
    assert "TEMP B-TREE" not in plans[0]
    # Relevance scores every match: a ranking query computes bm25 alone and
    # SQLite sorts it; the snippet (cjk_match) is computed outside it, for the
    # page's rows only, in a walk of the MATCH over their rowid range.
    rel = sqls[1]
    ranking, outer = rel.split("), page(id, aux, score) AS MATERIALIZED (SELECT top.id", 1)
    assert "cjk_rank(" in ranking and "cjk_match" not in ranking and ranking.endswith("LIMIT 1 OFFSET 0")
    assert "cjk_match(" in outer and "BETWEEN (SELECT min(id) FROM top) AND (SELECT max(id) FROM top)" in outer
    assert "MATERIALIZE top" in plans[1] and "TEMP B-TREE" in plans[1]
    # messages is read for the page's rows, after the walk, not for every match in it
    assert plans[1].index("SCAN page") < plans[1].index("SEARCH m USING INTEGER PRIMARY KEY")


def test_a_hit_snippeted_by_cjk_match_is_not_read_again(conn):
    """cjk_match's snippet comes with its window and highlight, and the statement
    that calls it reads the hit's other fields: no second statement reads the
    message (2.5 MB of text for one hit here); where Python builds the snippets,
    a second statement reads the searched texts."""
    def statements(**kw):
        seen = []
        conn.exec_trace = lambda cursor, sql, bindings: seen.append(sql) or True
        try:
            hits = search(conn, "needle", **kw)
        finally:
            conn.exec_trace = None
        return hits, [sql for sql in seen if "m.session_id" in sql]

    for sort in ("newest", "relevance"):
        hits, fetch = statements(sort=sort)
        assert [h.message_id for h in hits] == [7] and hits[0].route == "cjk"
        assert (hits[0].session_id, hits[0].role, hits[0].timestamp) == ("c", "user", 1060.0)
        assert len(fetch) == 1 and "cjk_match(" in fetch[0] and "m.content" not in fetch[0]
    shown = hits[0].snippet
    assert shown[hits[0].highlight[0]:hits[0].highlight[1]] == "needle"
    scanned, fetch = statements(sort="newest", route="scan")
    assert len(fetch) == 1 and "m.content" in fetch[0]
    assert [(h.snippet, h.highlight, h.span) for h in scanned] == [(shown, hits[0].highlight, hits[0].span)]


def test_relevance_hits_are_the_same_whether_the_page_holds_every_match_or_not(conn):
    """A MATCH with at most ``limit`` rows is scored and snippeted in one query;
    with more, the page's snippets come after the ranking.  Same hits either way."""
    for q in ("部署", "zebraword", "大别山 OR 部署"):
        seen = []
        conn.exec_trace = lambda cursor, sql, bindings: seen.append(sql) or True
        try:
            whole = search(conn, q, include_reasoning=True)
        finally:
            conn.exec_trace = None
        assert len(whole) >= 2 and not any("top(id, score)" in sql for sql in seen)
        conn.exec_trace = lambda cursor, sql, bindings: seen.append(sql) or True
        try:
            paged = [h for i in range(len(whole)) for h in search(conn, q, include_reasoning=True, limit=1,
                                                                   offset=i)]
        finally:
            conn.exec_trace = None
        assert any("top(id, score)" in sql for sql in seen)
        assert [(h.message_id, h.snippet, h.highlight, h.span, h.matched_in, h.score) for h in paged] == \
            [(h.message_id, h.snippet, h.highlight, h.span, h.matched_in, h.score) for h in whole]


@pytest.mark.parametrize("live", [ALL, NO_EXT, frozenset()])
def test_equal_scores_rank_newest_first_on_every_route(live):
    """Ties in bm25 have one order whatever the route, so paging is stable."""
    same = "部署 rollout 部署"
    c = corpus.build([dict(id=i, session_id="t", role="user", timestamp=1000.0 + i, content=same, reasoning=None,
                           tool_name=None, tool_calls=None) for i in range(1, 6)])
    try:
        for q in ("部署", "rollout"):
            hits = run_search(c, q, live_indexes=live)
            assert ids(hits) == [5, 4, 3, 2, 1], (q, [h.route for h in hits])
            assert ids(run_search(c, q, live_indexes=live, limit=2, offset=2)) == [3, 2]
    finally:
        c.close()


def test_pure_negation_lists_everything_else_newest_first(conn):
    hits = search(conn, "-部署 -zebraword", sort="relevance")
    assert ids(hits) == [10, 9, 8, 6, 4, 2]
    assert all(h.matched_in == [] for h in hits)


@pytest.mark.parametrize("kwargs, message", [
    (dict(limit=0), "limit"), (dict(limit=MAX_LIMIT + 1), "limit"), (dict(limit=True), "limit"),
    (dict(limit="5"), "limit"), (dict(sort="best"), "sort"), (dict(roles=[]), "roles"), (dict(roles=[1]), "roles"),
    (dict(session_id=5), "session_id"), (dict(after="yesterday"), "after"), (dict(before=float("nan")), "before"),
    (dict(after=2000, before=1000), "empty time range"), (dict(after=1000, before=1000), "empty time range"),
    (dict(route="fastest"), "unknown route"), (dict(route="cjk", live_indexes=NO_EXT), "not live"),
    (dict(snippet_chars=5), "snippet_chars"),
])
def test_bad_arguments_are_clear_errors(conn, kwargs, message):
    with pytest.raises(QueryError, match=message):
        search(conn, "部署", **kwargs)


def test_limit_bounds(conn):
    assert len(search(conn, "部署", limit=1)) == 1
    assert len(search(conn, "部署", limit=MAX_LIMIT)) == 3


# ---- forced routes ------------------------------------------------------------------


@pytest.mark.parametrize("query, route, message", [
    ("大别山", "unicode61", "cannot find CJK text"),
    ("修改youer", "unicode61", "cannot find CJK text"),
    ("部署", "trigram", "trigram only"),
    ("deploy", "trigram", "trigram only"),
])
def test_a_route_that_cannot_express_the_query_is_refused(conn, query, route, message):
    with pytest.raises(QueryError, match=message):
        search(conn, query, route=route)


def test_every_forced_route_reports_itself(conn):
    assert {h.route for h in search(conn, "大别山", route="trigram")} == {"trigram"}
    assert {h.route for h in search(conn, "deploy", route="unicode61")} == {"unicode61"}
    assert {h.route for h in search(conn, "deploy", route="scan")} == {"scan"}
    assert {h.route for h in search(conn, "deploy")} == {"cjk"}
    assert {h.route for h in search(conn, "部署 OR deploy", live_indexes=NO_EXT)} == {"unicode61+scan"}


# ---- snippets and big rows ----------------------------------------------------------


@pytest.mark.parametrize("query, needle", [("部署", "部署"), ("needle", "needle"), ("deploy", "deploy"),
                                           ("大别山", "大别山"), ("youer", "youer"), ("ｈｅｌｌｏ", "ｈｅｌｌｏ")])
@pytest.mark.parametrize("live, route", [(ALL, None), (ALL, "cjk"), (ALL, "unicode61"), (ALL, "trigram"),
                                         (ALL, "scan"), (NO_EXT, None)])
def test_snippets_hold_the_match_within_the_limit_on_every_route(conn, query, needle, live, route):
    try:
        hits = search(conn, query, live_indexes=live, route=route, snippet_chars=60)
    except QueryError:
        assert route is not None
        return
    assert hits
    for h in hits:
        assert len(h.snippet) <= 60
        h.snippet.encode("utf-8")
        assert fold(needle).lower() in fold(h.snippet).lower()
        if h.highlight:
            assert fold(h.snippet[h.highlight[0]:h.highlight[1]]).lower() == fold(needle).lower()


@pytest.mark.parametrize("live, route", [(ALL, None), (NO_EXT, None), (ALL, "scan")])
def test_a_multi_megabyte_message_is_found_quickly(conn, live, route):
    t0 = time.perf_counter()
    hits = search(conn, "needle", live_indexes=live, route=route)
    assert ids(hits) == [7] and "needle" in hits[0].snippet and len(hits[0].snippet) <= 160
    assert time.perf_counter() - t0 < 5.0


def test_bad_query_input_is_bounded_and_clear(conn):
    t0 = time.perf_counter()
    with pytest.raises(QueryError):
        search(conn, " ".join(f"w{i}" for i in range(10_000)))
    with pytest.raises(QueryError):
        search(conn, "\x00\x00")
    with pytest.raises(QueryError):
        search(conn, "\ud800")
    assert ids(search(conn, "deploy\x00")) == [1]
    assert ids(search(conn, "\ud800部署\udfff", session_id="a")) == [1]
    assert time.perf_counter() - t0 < 2.0


@pytest.mark.parametrize("query", [
    " ".join(["deploy"] * 100), " OR ".join(f"w{i}" for i in range(100)), " ".join(["大别山"] * 100),
    "deploy " + " ".join(f"-x{i}" for i in range(99)), '"' + " ".join(["deploy failed"] * 200) + '"',
    '"' + " ".join(["修改youer"] * 150) + '"', "大别" * 2000, "(" * 32 + "deploy OR 部署" + ")" * 32,
    " OR ".join(["修改youer服务"] * 100),
], ids=["100-and", "100-or", "100-cjk", "99-not", "400-word-phrase", "300-unit-phrase", "4000-char-run",
        "32-deep", "100-mixed-or"])
def test_queries_at_the_limits_run_on_every_route(conn, query):
    # CPU seconds of this process (SQLite runs in it): the bound is on the work a query
    # costs, which other jobs on the machine do not change, unlike wall-clock time
    t0 = time.process_time()
    for live, route in [(ALL, None), (NO_EXT, None), (frozenset({"unicode61"}), None), (frozenset(), None),
                        (ALL, "cjk"), (ALL, "unicode61"), (ALL, "trigram")]:
        try:
            run_search(conn, query, live_indexes=live, route=route, session_id="a")
        except QueryError:
            assert route in ("unicode61", "trigram")  # cannot express: said clearly
    assert time.process_time() - t0 < 5.0


def test_hit_fields(conn):
    (h,) = search(conn, "kubectl")
    assert (h.message_id, h.session_id, h.role, h.timestamp, h.route) == (5, "b", "assistant", 1040.0, "cjk")
    assert isinstance(h.snippet, str) and isinstance(h.matched_in, list)


# ---- the C aux function, when the extension provides it --------------------------------


def test_cjk_match_output_is_used_on_the_cjk_route_when_available():
    c = corpus.build(ROWS[:6])

    def fake_cjk_match(api, *args):  # the contract of csrc/cjk_aux.h, a window of the row's text
        assert args[-1] == "fields", args  # the layout search.py reads
        return _aux_fields()

    c.register_fts5_function("cjk_match", fake_cjk_match)  # stands in for the C one
    hits = run_search(c, "部署", live_indexes=ALL, session_id="a")
    assert [(h.message_id, h.snippet, h.highlight, h.span) for h in hits] == [(1, "部署失败了，…", (0, 2), (0, 2))]
    assert hits[0].matched_in == ["content"]
    # other routes build their own
    hits = run_search(c, "部署", live_indexes=NO_EXT, session_id="a")
    assert hits[0].snippet.startswith("部署失败")
    c.close()


_GOOD_AUX = {"matched_in": "content", "column": "content", "start": "0", "end": "2", "window_start": "0",
             "window_end": "6", "cut_before": "0", "cut_after": "1", "match_count": "1", "snippet": "部署失败了，…"}


def _aux_fields(**changes):
    """cjk_match's result in the layout 'fields', for _GOOD_AUX with ``changes``."""
    return "\x1f".join({**_GOOD_AUX, **changes}.values())


@pytest.mark.parametrize("output", [
    "not fields", "[1, 2]", b"\x1f" * 9, 7, "", None,
    json.dumps(list(_GOOD_AUX.values())),  # a JSON layout
    "\x1f".join(list(_GOOD_AUX.values())[:-1]),  # one field short (the snippet)
    _aux_fields(window_start="x"),
    _aux_fields(window_end="6.0"),
    _aux_fields(window_start="", window_end=""),
    _aux_fields(window_start="6", window_end="0"),
    _aux_fields(window_start="-1", window_end="5"),
    _aux_fields(cut_after="true"),
    _aux_fields(cut_before="2"),
    _aux_fields(start="x"),  # a highlight that is no number
    _aux_fields(start="0", end=""),
    _aux_fields(snippet="部署失败了，"),  # the cut side's ellipsis is missing
    _aux_fields(snippet="部署失败了…"),  # one character short of the window
    _aux_fields(column="reasoning"),  # a column not searched
    _aux_fields(column="tool_name"),  # searched, but not reported
    _aux_fields(matched_in="", column=""),
])
def test_a_cjk_match_output_off_its_contract_gets_a_snippet_built_here(output):
    c = corpus.build(ROWS[:6])
    c.register_fts5_function("cjk_match", lambda api, *args: output)
    hits = run_search(c, "部署", live_indexes=ALL, session_id="a")
    assert [h.message_id for h in hits] == [1]
    assert hits[0].snippet.startswith("部署失败") and hits[0].snippet != _GOOD_AUX["snippet"]
    assert hits[0].snippet[slice(*hits[0].highlight)] == "部署" and hits[0].matched_in == ["content"]
    c.close()


def test_hits_whose_cjk_match_output_is_off_get_snippets_built_here_beside_those_that_use_it():
    c = corpus.build(ROWS[:6])
    c.register_fts5_function("cjk_match", lambda api, *args: _aux_fields() if api.rowid == 1 else "not fields")
    for sort in ("relevance", "newest", "oldest"):
        hits = {h.message_id: h for h in run_search(c, "部署", live_indexes=ALL, sort=sort)}
        assert sorted(hits) == [1, 5], sort
        assert (hits[1].snippet, hits[1].session_id) == (_GOOD_AUX["snippet"], "a")  # cjk_match's
        assert hits[5].session_id == "b" and hits[5].snippet != _GOOD_AUX["snippet"]  # built here
        assert hits[5].snippet[slice(*hits[5].highlight)] == "部署"
    c.close()


def test_a_cjk_match_that_refuses_the_call_leaves_the_snippets_to_python():
    # an older build of the function, which knows no layout 'fields', is found out before the search
    c = corpus.build(ROWS[:6])

    def older(api, *args):
        if args[-1] not in ("object", "array"):
            raise apsw.SQLError("cjk_match: layout must be 'object' or 'array'")
        return _aux_fields()

    c.register_fts5_function("cjk_match", older)
    for sort in ("relevance", "newest"):
        hits = run_search(c, "部署", live_indexes=ALL, session_id="a", sort=sort)
        assert [h.message_id for h in hits] == [1]
        assert hits[0].snippet.startswith("部署失败") and hits[0].snippet != _GOOD_AUX["snippet"]
    c.close()


def test_a_cjk_match_output_without_a_highlight_has_none():
    c = corpus.build(ROWS[:6])
    c.register_fts5_function("cjk_match", lambda api, *args: _aux_fields(start="", end=""))
    hits = run_search(c, "部署", live_indexes=ALL, session_id="a")
    assert (hits[0].snippet, hits[0].highlight, hits[0].span) == ("部署失败了，…", None, None)
    c.close()


# ---- hosts ------------------------------------------------------------------------


def test_search_runs_on_a_stdlib_sqlite3_connection(tmp_path):
    """The Python functions the routes call register on stdlib sqlite3 connections
    too (no extension needed), once per connection, and a new connection gets its own."""
    import sqlite3

    from cjk_tokenizer.search import ensure_functions

    path = tmp_path / "noext.db"
    built = corpus.build(ROWS, routes=("unicode61", "trigram"))
    built.execute("VACUUM INTO ?", (str(path),))
    built.close()
    conn = sqlite3.connect(path)
    # scan (cjk_fold), trigram + Python check (cjk_term_match), unicode61 words glued to CJK text
    assert sorted(ids(search(conn, "别山", live_indexes=NO_EXT))) == [4, 9]
    assert ids(search(conn, "abc别", live_indexes=NO_EXT)) == [9]
    assert ids(search(conn, "youer", live_indexes=NO_EXT)) == [6]
    assert ensure_functions(conn) is ensure_functions(conn)
    assert conn.execute("SELECT cjk_fold('ｶﾀｶﾅ')").fetchone() == ("カタカナ",)
    conn.close()
    other = sqlite3.connect(path)
    assert ids(search(other, "山别", live_indexes=NO_EXT)) == [8]
    other.close()


# ---- explain --------------------------------------------------------------------------


@pytest.mark.parametrize("query, live, route, plan", [
    ("大", ALL, "cjk", "fts"),
    ("deploy 部署", ALL, "cjk", "fts"),
    ("大", NO_EXT, "scan", "combined"),
    ("大别山", NO_EXT, "trigram", "fts"),
    ("大别山", frozenset({"unicode61"}), "scan", "combined"),
    ("deploy", NO_EXT, "unicode61", "combined"),
    ("deploy", frozenset({"unicode61"}), "unicode61", "combined"),  # + glued occurrences, by scan
    ("修改youer", NO_EXT, "scan", "combined"),
    ("大别山 deploy", NO_EXT, "unicode61+trigram", "combined"),
    ("abc别", ALL, "cjk", "combined"),
])
def test_explain_names_the_route_and_why(query, live, route, plan):
    out = explain(query, live)
    assert out["route"] == route and out["plan"] == plan
    assert out["input"] == query and out["terms"]
    for t in out["terms"]:
        assert t["why"] and t["how"] and t["route"] in route.split("+")
    if plan == "fts":
        assert out["match"].startswith("{content tool_name tool_calls} : ")
    json.dumps(out, ensure_ascii=False)  # serializable as is


def test_explain_says_how_words_glued_to_cjk_text_are_found_without_the_cjk_index():
    # trigram looks a word of 3+ characters up; a shorter one, or any word without trigram,
    # is checked on every non-ASCII row (slow, exact)
    assert "plus trigram" in explain("youer", NO_EXT)["terms"][0]["how"]
    for query, live in (("go", NO_EXT), ("youer", frozenset({"unicode61"})), ("-youer", frozenset({"unicode61"}))):
        out = explain(query, live)
        assert out["plan"] == "combined" and "non-ASCII" in out["terms"][0]["how"], (query, out)
    assert "under 3 characters for trigram" in explain("go", NO_EXT)["terms"][0]["how"]
    assert explain("秘密", ALL, include_reasoning=True)["columns"] == ["content", "reasoning", "tool_name", "tool_calls"]
    with pytest.raises(QueryError):
        explain("", ALL)


def test_a_query_planned_before_is_planned_again_for_other_indexes_and_settings():
    # plans are kept per query: each thing that shapes a plan must tell them apart
    cases = [
        (dict(live=ALL), "cjk", '{content tool_name tool_calls} : ("門"*)'),
        (dict(live=frozenset({"unicode61"})), "scan", None),
        (dict(live=ALL, cjk_unigrams=True), "cjk", '{content tool_name tool_calls} : ("門")'),
        (dict(live=ALL, include_reasoning=True), "cjk", '{content reasoning tool_name tool_calls} : ("門"*)'),
        (dict(live=ALL, fold_variants=True), "cjk", '{content tool_name tool_calls} : ("门"*)'),
        (dict(live=ALL, route="scan"), "scan", None),
    ]
    for _ in range(2):  # the second round meets every plan kept
        for kw, route, match in cases:
            kw = dict(kw)
            out = explain("門", kw.pop("live"), **kw)
            assert (out["route"], out.get("match")) == (route, match), kw
