"""Bounded relevance: a term matching more rows than ``relevance_bound`` is
ranked by bm25 among its newest matches, says so, and every match stays
reachable by paging, sort and time filters."""
from __future__ import annotations

import pytest

from cjk_tokenizer import Archive
from cjk_tokenizer.errors import QueryError

N = 40  # messages; every one holds 部署 and deploy, some many times (bm25 differs)


@pytest.fixture(params=["cjk", "no extension"], scope="module")
def archive(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("bound") / "a.db"
    with Archive(path, indexes=("cjk", "unicode61", "trigram")) as ar:
        for i in range(N):
            reps = 1 + (i * 7) % 5
            ar.add_message(f"s{i % 4}", "user", "部署系统 deploy " * reps + f"填充 filler{i} " * (5 - reps),
                           timestamp=1000.0 + i)
    ar = Archive(path, extension=request.param == "cjk")
    yield ar
    ar.close()


def _ids(hits):
    return [h.message_id for h in hits]


# fts plans ("部署", "deploy") and combined ones (a negated scan term, a mixed OR)
QUERIES = ["部署系统", "deploy", "部署系统 -zzz不在", "部署系统 OR deploy"]


@pytest.mark.parametrize("query", QUERIES)
def test_over_the_bound_bm25_ranks_the_newest_and_says_so(archive, query):
    everything = archive.search(query, limit=1000, relevance_bound=None)
    assert len(everything) == N and everything.ranked_among is None
    hits = archive.search(query, limit=8, relevance_bound=10)
    assert hits.ranked_among == 10
    newest10 = set(range(N - 9, N + 1))
    assert set(_ids(hits)) <= newest10
    # the same order bm25 gives those ten when they are all there is
    only = archive.search(query, limit=8, after=1000.0 + N - 10, relevance_bound=None)
    assert _ids(hits) == _ids(only)


@pytest.mark.parametrize("query", QUERIES)
def test_every_match_stays_reachable_by_paging(archive, query):
    seen = []
    for offset in range(0, N + 6, 6):
        seen += _ids(archive.search(query, limit=6, offset=offset, relevance_bound=10))
    assert sorted(seen) == list(range(1, N + 1))  # each once
    assert seen[10:] == sorted(seen[10:], reverse=True)  # past the ranked ten: newest first
    assert set(seen[:10]) == set(range(N - 9, N + 1))


def test_time_filters_move_the_ranked_window(archive):
    hits = archive.search("部署系统", limit=50, before=1000.0 + 20, relevance_bound=10)
    assert hits.ranked_among == 10 and set(_ids(hits[:10])) == set(range(11, 21))


def test_under_the_bound_nothing_changes(archive):
    a = archive.search("部署系统", limit=50, relevance_bound=N)
    b = archive.search("部署系统", limit=50, relevance_bound=None)
    assert _ids(a) == _ids(b) and a.ranked_among is None


def test_newest_and_oldest_are_not_bounded(archive):
    hits = archive.search("部署系统", sort="oldest", limit=5, relevance_bound=3)
    assert _ids(hits) == [1, 2, 3, 4, 5] and hits.ranked_among is None


def test_explain_and_session_search_say_so(archive, monkeypatch):
    assert "newest 10" in archive.explain("部署系统", relevance_bound=10)["rank_bound"]
    assert "rank_bound" not in archive.explain("部署系统", relevance_bound=None)
    assert "ranked_among" not in archive.session_search(query="部署系统")
    monkeypatch.setattr("cjk_tokenizer.search.RELEVANCE_BOUND", 5)  # the default, read at each call
    out = archive.session_search(query="部署系统", limit=10)
    assert out["ranked_among"] == 5 and any("newest 5" in n for n in out["notes"])
    assert out["sessions"][0]["hit"]["message_id"] > N - 5
    assert "newest 5" in archive.explain("部署系统")["rank_bound"]


@pytest.mark.parametrize("bound", [0, -3, 2.5, "10", True, "defaults"])
def test_a_bad_bound_is_a_clear_error(archive, bound):
    with pytest.raises(QueryError, match="relevance_bound"):
        archive.search("部署系统", relevance_bound=bound)


def test_hit_fields_are_the_same_whichever_statement_reads_them(tmp_path):
    # On the cjk index the statements that build the snippets read the hits'
    # fields too; elsewhere a second statement does.  Every sort, a bounded
    # relevance page spanning both of its statements, and a session without title.
    titles = {"t0": None, "t1": "部署回滚", "t2": "배포"}
    with Archive(tmp_path / "f.db", indexes=("cjk", "unicode61")) as ar:
        ar.add_session("t1", title=titles["t1"])
        ar.add_session("t2", title=titles["t2"])
        want = {}
        for i in range(30):
            sid, role = f"t{i % 3}", ("user", "assistant")[i % 2]
            mid = ar.add_message(sid, role, "部署系统 deploy " * (1 + i % 4), timestamp=500.0 + i)
            want[mid] = (sid, role, 500.0 + i, titles[sid])
        for kw in ({"sort": "newest"}, {"sort": "oldest"}, {"sort": "relevance"},
                   {"sort": "relevance", "relevance_bound": 6, "limit": 10},
                   {"sort": "relevance", "limit": 40}):
            for route in (None, "scan"):
                hits = ar.search("部署系统", route=route, **kw)
                assert hits[0].route == (route or "cjk") and len(hits) == min(kw.get("limit", 20), 30), kw
                assert [(h.session_id, h.role, h.timestamp, h.title) for h in hits] == [
                    want[h.message_id] for h in hits], (kw, route)


@pytest.mark.parametrize("kw", [{"sort": "newest"}, {"sort": "oldest", "offset": 3}, {"sort": "relevance"},
                                {"sort": "relevance", "relevance_bound": 6, "limit": 10}, {"sort": "relevance",
                                                                                            "limit": 40}])
@pytest.mark.parametrize("query", ["部署系统", "deploy", "部署系统 -zzz不在"])
def test_a_repeated_search_prepares_no_statement_again(archive, kw, query):
    # A LIMIT or OFFSET parameter over an FTS5 table would make SQLite prepare
    # the statement again at every run (the planner saw it).  The authorizer is
    # called whenever a statement is prepared: a repeated search may prepare
    # only FTS5's own statements on its shadow tables.  (Setting an authorizer
    # expires every statement: the first search prepares them again.)
    conn = archive._conn
    archive.search(query, **kw)  # the first on a connection registers the SQL functions
    prepared = []
    conn.authorizer = lambda *args: prepared.append(args) or 0  # 0: SQLITE_OK
    try:
        first = archive.search(query, **kw)
        assert any(a[0] == 20 and a[1] == "messages" for a in prepared)  # it sees ours
        prepared.clear()
        again = archive.search(query, **kw)
    finally:
        conn.authorizer = None
    shadow = ("_idx", "_data", "_config", "_docsize", "_content")
    ours = [a for a in prepared if a[0] != 21 and not (a[0] == 20 and a[1].endswith(shadow))]
    assert again == first and ours == []


@pytest.mark.parametrize("query", QUERIES)
def test_at_the_bound_exactly(archive, query):
    # one match more than the bound: the oldest is left out of the ranking and the result says so
    hits = archive.search(query, limit=N - 1, relevance_bound=N - 1)
    assert set(_ids(hits)) == set(range(2, N + 1)) and hits.ranked_among == N - 1
    assert _ids(hits) == _ids(archive.search(query, limit=N - 1, after=1001.0, relevance_bound=None))
    # as many matches as the bound: every one is ranked
    hits = archive.search(query, limit=5, relevance_bound=N)
    assert _ids(hits) == _ids(archive.search(query, limit=5, relevance_bound=None)) and hits.ranked_among is None


def _page_shape(ar, query, **kw):
    """How the bounded relevance statement meets its page's hits again: 'seek' (a MATCH per hit) or 'walk'."""
    sql = ar.explain(query, sql=True, relevance_bound=10, limit=8, **kw)["sql"][-1]["sql"]
    assert "page(id, aux, score)" in sql, sql
    return "seek" if "FROM top CROSS JOIN" in sql else "walk"


def test_a_bounded_page_is_met_again_by_seeks_on_one_segment_and_by_a_walk_otherwise(tmp_path, monkeypatch):
    """The same messages in an index of several segments and in one merged into one: the hits (every
    field, every page) are the same, though the one-segment index meets each page's hits by a MATCH per
    hit and the other by one walk of the MATCH over their rowids; a prefix term always walks (a MATCH per
    hit would merge the prefix again for each), and so does a bound below SEEK_MIN_BOUND (its range is
    short)."""
    paths = [tmp_path / "segments.db", tmp_path / "merged.db"]
    for path in paths:
        with Archive(path) as ar:
            for i in range(N):
                reps = 1 + (i * 7) % 5
                ar.add_message(f"s{i % 4}", "user", "部署系统 deploy " * reps + f"填充 filler{i} " * (5 - reps),
                               timestamp=1000.0 + i)
    with Archive(paths[1]) as ar:
        ar.indexes.optimize()
    several, merged = Archive(paths[0]), Archive(paths[1])
    try:
        assert several.indexes.segments()["cjk"] > 1 and merged.indexes.segments()["cjk"] == 1
        assert _page_shape(merged, "deploy") == "walk"  # a bound of 10: the walk is shorter
        monkeypatch.setattr("cjk_tokenizer.search.SEEK_MIN_BOUND", 10)  # read at each call
        # a one-character query is one unigram's doclist here; a Latin prefix is a prefix query
        for query in ("部署系统", "deploy", "部署系统 deploy", "部署系统 OR deploy", "部署系", "系", "deplo*"):
            assert _page_shape(several, query) == "walk", query
            assert _page_shape(merged, query) == ("walk" if query == "deplo*" else "seek"), query
            for offset in (0, 4, 8):
                a = several.search(query, limit=8, offset=offset, relevance_bound=10)
                b = merged.search(query, limit=8, offset=offset, relevance_bound=10)
                assert a.ranked_among == b.ranked_among == 10, query
                assert list(a) == list(b) and len(a) == 8, (query, offset)
    finally:
        several.close()
        merged.close()


@pytest.mark.parametrize("match, prefix", [
    ('{content} : ("部署")', False), ('{content} : ("部署" "系")*', True), ('"a*b"', False),
    ('"say ""x*"""', False), ('"say ""x"""*', True), ('("a" OR "b"*)', True), ('NEAR("a" "b", 3)', False)])
def test_a_prefix_query_is_told_from_a_star_inside_a_phrase(match, prefix):
    from cjk_tokenizer.search import _has_prefix

    assert _has_prefix(match) is prefix


def test_a_full_page_of_scored_rows_runs_no_python_check_on_the_others(tmp_path, monkeypatch):
    # Without the extension and trigram, a word glued to CJK text (部署deploy失败) is found by a
    # Python check of the rows unicode61 does not find; ranked by relevance, a page that the
    # rows unicode61 scores fill must not run that check on the rest of the archive.
    from cjk_tokenizer import search

    path = tmp_path / "a.db"
    with Archive(path) as ar:
        for i in range(30):
            ar.add_message("s", "user", f"deploy step {i} " + "填充" * (i % 3))
        for i in range(200):
            ar.add_message("s", "user", f"其他的消息 {i} 没有那个词")
        ar.add_message("s", "user", "部署deploy失败")  # the one glued occurrence, newest
    calls = []
    check = search.sql_term_match
    monkeypatch.setattr(search, "sql_term_match", lambda *a: calls.append(1) or check(*a))
    with Archive(path, extension=False) as bare:
        assert "Python check" in str(bare.explain("deploy"))
        top = bare.search("deploy", limit=10)
        assert len(top) == 10 and all("deploy" in h.snippet for h in top) and calls == []
        # paging on reaches every match, the glued one after the scored ones
        everything = [h.message_id for h in bare.search("deploy", limit=100)]
        assert len(everything) == 31 and everything[-1] == 231 and calls
