"""Paging: every hit is reachable with ``offset`` (any sort) and with a cursor
(newest/oldest) that stays put while new messages arrive — in Archive.search,
session_search discovery, the agent tool and the CLI."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cjk_tokenizer import Archive
from cjk_tokenizer.agent_tool import handle_session_search
from cjk_tokenizer.errors import QueryError
from cjk_tokenizer.search import MAX_OFFSET

TEXTS = ("部署失败了 deploy", "大别山 deploy 部署", "只说部署", "deploy only", "无关的话", "部署部署 deploy again")
LIVE_SETS = {"cjk": None, "no extension": False}


@pytest.fixture(params=list(LIVE_SETS), scope="module")
def archive(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("paging") / "a.db"
    with Archive(path, indexes=("cjk", "unicode61", "trigram")) as ar:
        for i in range(60):
            ar.add_message(f"s{i % 7}", "user", TEXTS[i % len(TEXTS)], timestamp=1000.0 + i)
    ar = Archive(path, extension=LIVE_SETS[request.param] is not False)
    assert ar.indexes.live() == ({"cjk", "unicode61", "trigram"} if ar.extension_loaded else {"unicode61", "trigram"})
    yield ar
    ar.close()


def _ids(hits):
    return [h.message_id for h in hits]


@pytest.mark.parametrize("query", ["部署", "deploy", "部署 OR deploy", "部署 -deploy", "大别山"])
@pytest.mark.parametrize("sort", ["relevance", "newest", "oldest"])
def test_offset_pages_concatenate_to_the_whole_result(archive, query, sort):
    whole = _ids(archive.search(query, sort=sort, limit=1000))
    assert whole
    paged = []
    for offset in range(0, len(whole) + 7, 7):
        page = archive.search(query, sort=sort, limit=7, offset=offset)
        assert page.offset == offset
        paged += _ids(page)
    assert paged == whole


@pytest.mark.parametrize("sort", ["newest", "oldest"])
@pytest.mark.parametrize("query", ["部署", "deploy", "部署 OR deploy", "部署 -deploy"])
def test_a_cursor_reaches_every_hit_once_while_messages_arrive(tmp_path, sort, query):
    with Archive(tmp_path / "c.db") as ar:
        for i in range(40):
            ar.add_message(f"s{i % 3}", "user", TEXTS[i % len(TEXTS)], timestamp=1000.0 + i)
        whole = _ids(ar.search(query, sort=sort, limit=1000))
        seen, cursor, pages = [], None, 0
        while True:
            page = ar.search(query, sort=sort, limit=4, cursor=cursor)
            seen += _ids(page)
            pages += 1
            # new matching messages arrive between pages
            ar.add_message("late", "user", "部署 deploy 新的", timestamp=2000.0 + pages)
            cursor = page.next_cursor
            if cursor is None:
                break
            assert cursor.startswith(sort + ":")
        if sort == "newest":
            assert seen == whole  # nothing repeated, nothing skipped, nothing new slipped in
        else:
            assert seen[:len(whole)] == whole  # the newcomers follow at the end, in order
            assert seen == sorted(set(seen))


def test_a_full_last_page_ends_with_an_empty_page(tmp_path):
    with Archive(tmp_path / "e.db") as ar:
        for i in range(4):
            ar.add_message("s", "user", "部署")
        page = ar.search("部署", sort="newest", limit=2)
        page = ar.search("部署", sort="newest", limit=2, cursor=page.next_cursor)
        assert len(page) == 2 and page.next_cursor
        last = ar.search("部署", sort="newest", limit=2, cursor=page.next_cursor)
        assert list(last) == [] and last.next_cursor is None


def test_relevance_has_no_cursor_and_a_cursor_brings_its_sort(archive):
    assert archive.search("部署", limit=2).next_cursor is None
    page = archive.search("部署", sort="oldest", limit=3)
    # sort left at its default: the cursor's sort is used
    assert _ids(archive.search("部署", limit=3, cursor=page.next_cursor)) == \
        _ids(archive.search("部署", sort="oldest", limit=3, offset=3))


@pytest.mark.parametrize("kwargs, message", [
    (dict(offset=-1), "offset"), (dict(offset=MAX_OFFSET + 1), "offset"), (dict(offset="3"), "offset"),
    (dict(offset=True), "offset"), (dict(cursor="bogus"), "cursor"), (dict(cursor="newest:x"), "cursor"),
    (dict(cursor=17), "cursor"), (dict(cursor="relevance:5"), "cursor"), (dict(cursor="newest:" + "9" * 30), "cursor"),
    (dict(cursor="newest:5", sort="oldest"), "continues a sort='newest'"),
])
def test_bad_paging_arguments_are_clear_errors(archive, kwargs, message):
    with pytest.raises(QueryError, match=message):
        archive.search("部署", **kwargs)


# ---- session_search discovery, the agent tool, the CLI -------------------------------------


def test_discovery_pages_by_offset_through_every_session(archive):
    first = archive.session_search(query="部署", limit=3)
    assert first["more_sessions"] and first["next_offset"] == 3 and first["offset"] == 0
    second = archive.session_search(query="部署", limit=3, offset=first["next_offset"])
    ids1 = [s["session"]["session_id"] for s in first["sessions"]]
    ids2 = [s["session"]["session_id"] for s in second["sessions"]]
    assert not set(ids1) & set(ids2)
    every = archive.session_search(query="部署", limit=10)
    assert ids1 + ids2 == [s["session"]["session_id"] for s in every["sessions"]][:len(ids1) + len(ids2)]


def test_discovery_past_the_last_session_says_so_not_no_match(archive):
    every = archive.session_search(query="部署", limit=10)
    n = len(every["sessions"])
    assert 0 < n < 10 and not every["more_sessions"]
    past = archive.session_search(query="部署", limit=3, offset=n)
    assert past["sessions"] == [] and past["offset"] == n
    assert past["notes"] == [f"offset {n} is past the last session that matches ({n} match)"]
    huge = archive.session_search(query="部署", offset=10**30)  # clamped, and the clamp is reported
    assert huge["clamped"]["offset"] == {"requested": 10**30, "used": 100, "allowed": [0, 100]}
    assert "past the last session" in huge["notes"][0]
    assert archive.session_search(query="nosuchwordanywhere")["notes"][0].startswith("no match")


def test_discovery_reaches_a_session_past_the_most_hits_a_page_reads(tmp_path):
    # one busy session holds the newest FETCH_MAX matches: the older session is still reachable
    from cjk_tokenizer.session_search import FETCH_MAX

    with Archive(tmp_path / "busy.db") as ar:
        ar.add_message("old", "user", "部署 in the old session", timestamp=1000)
        ar.add_messages("busy", [{"role": "user", "content": f"部署 step {i}", "timestamp": 2000 + i}
                                 for i in range(FETCH_MAX + 10)])
        first = ar.session_search(query="部署", sort="newest", limit=3)
        assert [s["session"]["session_id"] for s in first["sessions"]] == ["busy"]
        assert first["more_sessions"] and "next_cursor" in first and "next_offset" not in first
        assert first["notes"] == [f"the {FETCH_MAX:,} matching messages read hold 1 session(s); "
                                  "next_cursor continues after them"]
        second = ar.session_search(query="部署", sort="newest", limit=3, cursor=first["next_cursor"])
        assert [s["session"]["session_id"] for s in second["sessions"]] == ["busy", "old"]
        assert not second["more_sessions"]
        ranked = ar.session_search(query="部署", limit=3)
        assert not ranked["more_sessions"] and "newest/oldest" in ranked["notes"][-1]


@pytest.mark.parametrize("sort", ["newest", "oldest"])
def test_discovery_cursor_starts_at_the_first_session_not_shown(archive, sort):
    first = archive.session_search(query="部署", limit=2, sort=sort)
    every = archive.session_search(query="部署", limit=10, sort=sort)
    nxt = archive.session_search(query="部署", limit=2, cursor=first["next_cursor"])
    assert nxt["sort"] == sort
    assert nxt["sessions"][0]["hit"] == every["sessions"][2]["hit"]


def test_the_agent_tool_pages_and_rejects_bad_paging(archive):
    first = json.loads(handle_session_search(archive, {"query": "部署", "limit": 2, "sort": "newest"}))
    second = json.loads(handle_session_search(archive, json.dumps({"query": "部署", "limit": 2,
                                                                   "cursor": first["next_cursor"]})))
    assert "error" not in second and second["sessions"]
    bad = json.loads(handle_session_search(archive, {"query": "部署", "cursor": "nope"}))
    assert bad["error"]["argument"] == "cursor" and "next_cursor" in bad["error"]["message"]
    bad = json.loads(handle_session_search(archive, {"query": "部署", "offset": -2}))
    assert bad["error"]["argument"] == "offset"
    clamped = json.loads(handle_session_search(archive, {"query": "部署", "offset": 500}))
    assert clamped["clamped"]["offset"]["used"] == 100


def test_cli_prints_the_next_cursor_and_follows_it(tmp_path):
    db = tmp_path / "cli.db"
    with Archive(db) as ar:
        for i in range(5):
            ar.add_message("s", "user", f"部署 number{i}")
    env = dict(os.environ, PYTHONPATH=os.getcwd())

    def run(*extra):
        return subprocess.run([sys.executable, "-m", "cjk_tokenizer", "search", str(db), "部署", "--sort", "newest",
                               "--limit", "2", *extra], capture_output=True, text=True, env=env, check=True)

    out = run()
    assert "message 5 " in out.stdout and "message 4 " in out.stdout
    cursor = out.stderr.split("--cursor ")[1].split()[0]
    out = run("--cursor", cursor)
    assert "message 3 " in out.stdout and "message 2 " in out.stdout and "message 5 " not in out.stdout
    out = run("--offset", "4")
    assert "message 1 " in out.stdout and "next page" not in out.stderr


@pytest.mark.parametrize("first,growth", [(1, 2), (5, 3)])
@pytest.mark.parametrize("sort", ["newest", "oldest"])
@pytest.mark.parametrize("query", ["部署", "deploy", "部署 OR deploy", "部署 -deploy", "大别山", "-deploy", "没有这个"])
def test_a_walk_in_short_stretches_finds_what_one_stretch_finds(archive, monkeypatch, first, growth, sort, query):
    """Without the cjk index a newest/oldest search walks messages by id in stretches
    (search.WALK_FIRST ids, then WALK_GROWTH times as many each time); the 60 messages
    here fit the first of the default size.  Short ones cut every page somewhere."""
    from cjk_tokenizer import search as search_mod

    whole = _ids(archive.search(query, sort=sort, limit=1000))
    monkeypatch.setattr(search_mod, "WALK_FIRST", first)
    monkeypatch.setattr(search_mod, "WALK_GROWTH", growth)
    assert _ids(archive.search(query, sort=sort, limit=1000)) == whole
    for limit, offset in [(1, 0), (3, 2), (7, 10), (4, len(whole))]:
        assert _ids(archive.search(query, sort=sort, limit=limit, offset=offset)) == whole[offset:offset + limit]
    seen, cursor = [], None
    while True:
        page = archive.search(query, sort=sort, limit=4, cursor=cursor)
        seen += _ids(page)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == whole


def test_a_frequent_term_s_newest_page_reads_one_short_stretch(tmp_path, monkeypatch):
    """The index lookups of a walk's stretch read only that stretch's rowids, and a page
    that fills there runs no other: a frequent word's page without the cjk index does
    not read its whole doclist."""
    from cjk_tokenizer import search as search_mod

    path = tmp_path / "w.db"
    with Archive(path) as ar:
        for i in range(60):
            ar.add_message(f"s{i % 7}", "user", TEXTS[i % len(TEXTS)], timestamp=1000.0 + i)
    monkeypatch.setattr(search_mod, "WALK_FIRST", 10)
    with Archive(path, extension=False) as ar:
        explained = ar.explain("deploy", sort="newest", limit=3, sql=True)
        (st,) = explained["sql"]
        assert "ids 51 to 60 first" in explained["walk"] and "offset" not in explained["walk"]
        assert st["params"][1:3] == [51, 60] and st["params"][-2:] == [51, 60]  # the lookup's rowids, the walk's ids
        # with an offset the statement's LIMIT counts the offset's rows too: the walk says they are left out
        paged = ar.explain("deploy", sort="newest", limit=3, offset=2, sql=True)
        assert paged["sql"][0]["sql"].endswith("LIMIT 5 OFFSET 0")
        assert "the first 2 rows found are the offset, left out of it" in paged["walk"]
        ran = []
        ar.conn.exec_trace = lambda cursor, sql, bindings: ran.append((sql, bindings)) or True
        hits = ar.search("deploy", sort="newest", limit=3)
        ar.conn.exec_trace = None
        assert [h.message_id for h in hits] == [60, 58, 56]
        walked = [b for sql, b in ran if "m.id BETWEEN" in sql]
        assert len(walked) == 1 and list(walked[0])[-2:] == [51, 60]
        # a page the first stretch does not fill goes on to the next, 8 times as long
        ran.clear()
        ar.conn.exec_trace = lambda cursor, sql, bindings: ran.append((sql, bindings)) or True
        hits = ar.search("大别山", sort="newest", limit=3)
        ar.conn.exec_trace = None
        assert [h.message_id for h in hits] == [56, 50, 44]
        assert [list(b)[-2:] for sql, b in ran if "m.id BETWEEN" in sql] == [[51, 60], [1, 50]]


@pytest.mark.parametrize("bound", [1, 2, 3, 4, 5, 13, None])
@pytest.mark.parametrize("query", ["deploy", "部署 OR deploy", "deploy -大别山", "大别山"])
def test_bounded_relevance_reads_lookups_above_the_floor_only_and_finds_the_same(archive, monkeypatch, bound, query):
    """On the rows it scores, all above the floor, a combined plan's lookups read only
    the rowids above it: the pages are those of lookups over every rowid."""
    from cjk_tokenizer.router import MAX_ROWID, MIN_ROWID, Plan

    def pages():
        return [(_ids(p), p.ranked_among) for p in (archive.search(query, limit=6, offset=o, relevance_bound=bound)
                                                    for o in range(0, 66, 6))]

    got = pages()
    explained = archive.explain(query, limit=6, relevance_bound=bound, sql=True)
    if explained["plan"] == "combined" and explained.get("rank_floor") is not None:
        floor, scored = explained["rank_floor"], explained["sql"][0]["params"]
        bounds = list(zip(scored, scored[1:]))  # each lookup's rowid range: two parameters in a row
        assert (floor + 1, MAX_ROWID) in bounds and (MIN_ROWID, MAX_ROWID) not in bounds
    whole = Plan.where
    monkeypatch.setattr(Plan, "where", lambda self, window=None: whole(self))  # every rowid
    assert got == pages()
    assert sum(len(ids) for ids, _ in got) == len(archive.search(query, sort="newest", limit=1000))
