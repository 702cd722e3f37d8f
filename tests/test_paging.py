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
    # past SQLite's rowids, and digits of another script, which int() would read
    (dict(cursor="oldest:9999999999999999999"), "cursor"), (dict(cursor="newest:\u0663\u0664"), "cursor"),
    (dict(exclude_session_ids=[1]), "exclude_session_ids"), (dict(exclude_session_ids=5), "exclude_session_ids"),
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


@pytest.mark.parametrize("sort", ["relevance", "newest", "oldest"])
def test_one_busy_session_hides_no_other_session(tmp_path, sort):
    # the busy session holds far more matches than one read takes (FETCH): the others still
    # come on the first page, in order, and more_sessions is exact
    from cjk_tokenizer.session_search import FETCH

    with Archive(tmp_path / "busy.db") as ar:
        for k in range(4):
            ar.add_message(f"old{k}", "user", f"部署 in old session {k}", timestamp=1000 + k)
        ar.add_messages("busy", [{"role": "user", "content": f"部署 step {i}", "timestamp": 2000 + i}
                                 for i in range(FETCH * 5 + 10)])
        first = ar.session_search(query="部署", sort=sort, limit=3)
        got = [s["session"]["session_id"] for s in first["sessions"]]
        assert got[0] == "busy" if sort != "oldest" else got == ["old0", "old1", "old2"]
        if sort == "newest":
            assert got == ["busy", "old3", "old2"]
        assert first["more_sessions"] and all("exclude_session_ids" in n for n in first.get("notes", []))
        assert first["sessions"][0]["hits_in_session"] == (FETCH * 5 + 10 if got[0] == "busy" else 1)
        # the current session left out: the others fill the page
        others = ar.session_search(query="部署", sort=sort, limit=3, exclude_session_ids=["busy"])
        names = [s["session"]["session_id"] for s in others["sessions"]]
        assert len(names) == 3 and "busy" not in names and others["more_sessions"]
        key = "next_offset" if sort == "relevance" else "next_cursor"
        assert key in others and ({"next_offset", "next_cursor"} - {key}).isdisjoint(others)
        rest = ar.session_search(query="部署", sort=sort, limit=3, exclude_session_ids=["busy"],
                                 **{key[5:]: others[key]})
        assert len(rest["sessions"]) == 1 and not rest["more_sessions"]
        assert set(names) | {rest["sessions"][0]["session"]["session_id"]} == {f"old{k}" for k in range(4)}


@pytest.mark.parametrize("limit", [10, 7, 3])
def test_relevance_paging_stops_at_the_offset_cap(tmp_path, limit):
    # next_offset never points past what offset accepts: following it cannot loop on one page,
    # nor step back over sessions shown (a limit that does not divide the cap did)
    from cjk_tokenizer.session_search import DISCOVERY_OFFSET

    cap = DISCOVERY_OFFSET[2]
    with Archive(tmp_path / "many.db") as ar:
        for k in range(cap + 20):
            ar.add_message(f"s{k:03d}", "user", f"needle {k}", timestamp=1000 + k)
        offset, seen = 0, []
        for _ in range(cap):
            page = ar.session_search(query="needle", limit=limit, offset=offset)
            assert "clamped" not in page, page["clamped"]
            seen += [s["session"]["session_id"] for s in page["sessions"]]
            if "next_offset" not in page:
                break
            offset = page["next_offset"]
        assert len(seen) == len(set(seen)) == (cap // limit + 1) * limit
        assert page["more_sessions"] and "newest/oldest" in page["notes"][-1]


def test_offset_and_cursor_together_are_refused(archive):
    first = archive.session_search(query="部署", limit=2, sort="newest")
    assert "next_cursor" in first and "next_offset" not in first
    both = archive.session_search(query="部署", limit=2, offset=2, cursor=first["next_cursor"])
    assert both["error"]["code"] == "bad_argument" and both["error"]["argument"] == "offset"
    # a model that fills in every key sends offset 0: that is no offset
    zero = archive.session_search(query="部署", limit=2, offset=0, cursor=first["next_cursor"])
    assert "error" not in zero and zero["sessions"]
    assert "error" not in archive.session_search(offset=0, cursor=first["next_cursor"])  # browse uses neither
    past = archive.session_search(query="部署", cursor="newest:1")
    assert past["sessions"] == [] and past["notes"][-1] == "no more matches after the cursor"


def test_exclusions_take_any_iterable_of_ids(archive):
    every = archive.search("部署", limit=50)
    sessions = {h.session_id: None for h in every}
    left = archive.search("部署", limit=50, exclude_session_ids=sessions.keys())
    assert list(left) == []
    counts = archive.count_by_session("部署", (sid for sid in sessions))
    assert sum(counts.values()) == len(every)


@pytest.mark.parametrize("sort", ["newest", "oldest"])
def test_every_hit_of_one_session_is_reachable(tmp_path, sort):
    from cjk_tokenizer.session_search import OTHER_HITS

    with Archive(tmp_path / "one.db") as ar:
        ids = [ar.add_message("s", "user", f"部署 {i}" if i % 2 else f"other {i}", timestamp=1000 + i)
               for i in range(40)]
        want = [i for n, i in enumerate(ids) if n % 2]
        want = want[::-1] if sort == "newest" else want
        got, cursor = [], None
        for _ in range(len(want)):
            page = ar.session_search(query="部署", session_id="s", sort=sort, cursor=cursor)
            (entry,) = page["sessions"]
            assert entry["hits_in_session"] == len(want)
            got += [entry["hit"]["message_id"], *entry["other_hit_ids"]]
            cursor = page.get("next_cursor")
            if cursor is None:
                break
            assert page["more_hits_in_session"] and len(entry["other_hit_ids"]) == OTHER_HITS
        assert got == want


def test_hits_in_session_counts_every_match_of_the_session(tmp_path):
    # sessions found in a read that did not run out still get their true count
    from cjk_tokenizer.session_search import FETCH

    with Archive(tmp_path / "count.db") as ar:
        for k in range(FETCH + 5):
            for j in range(3):
                ar.add_message(f"x{k:02d}", "user", f"needle {k} {j}", timestamp=1000 + 10 * j + k)
        out = ar.session_search(query="needle", limit=10, sort="newest")
        assert [s["hits_in_session"] for s in out["sessions"]] == [3] * 10
        inside = ar.count_by_session("needle", ["x00", "x01", "nosuch"])
        assert inside == {"x00": 3, "x01": 3}


def test_browse_pages_through_every_session(tmp_path):
    with Archive(tmp_path / "browse.db") as ar:
        for k in range(75):
            ar.add_message(f"s{k:02d}", "user", f"hello {k}", timestamp=1000 + k)
        seen, offset = [], 0
        while True:
            page = ar.session_search(limit=20, offset=offset)
            assert "ignored_arguments" not in page
            seen += [s["session_id"] for s in page["sessions"]]
            if "next_offset" not in page:
                break
            offset = page["next_offset"]
        assert seen == [f"s{k:02d}" for k in range(74, -1, -1)]
        past = ar.session_search(limit=20, offset=100)
        assert past["sessions"] == [] and "past the last session" in past["notes"][0]


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


def test_a_cursor_past_the_rowids_is_an_argument_error_everywhere(archive, capsys):
    from cjk_tokenizer.cli import main

    for cursor in ("oldest:9999999999999999999", "newest:\u0663\u0664"):
        out = archive.session_search(query="部署", cursor=cursor)
        assert out["error"]["code"] == "bad_argument" and out["error"]["argument"] == "cursor"
        assert main(["search", archive.path, "部署", "--cursor", cursor]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "cursor" in err and "Traceback" not in err


def _session_order(hits):
    seen = []
    for h in hits:
        if h.session_id not in seen:
            seen.append(h.session_id)
    return seen


def test_discovery_by_relevance_keeps_the_order_of_one_long_read_past_the_bound(tmp_path, monkeypatch):
    # each further read leaves sessions out; were the bound counted again, it would rank older matches
    from cjk_tokenizer import search

    monkeypatch.setattr(search, "RELEVANCE_BOUND", 100)
    with Archive(tmp_path / "bound.db") as ar:
        # six sessions of 60 hits each, one after another; a session's hits score alike (its padding),
        # so each read finds about one session; c3's, the best scored, lie below the bound's newest 100
        for k, pad in enumerate((1, 2, 3, 0, 4, 2)):
            ar.add_messages(f"c{k}", [{"role": "user", "content": "数据" + " 填充" * pad} for _ in range(60)])
        one_read = ar.search("数据", limit=360)
        assert one_read.ranked_among == 100 and _session_order(one_read) == ["c5", "c4", "c3", "c2", "c1", "c0"]
        out = ar.session_search(query="数据", limit=3)
        assert [s["session"]["session_id"] for s in out["sessions"]] == ["c5", "c4", "c3"]
        rest = ar.session_search(query="数据", limit=3, offset=out["next_offset"])
        assert [s["session"]["session_id"] for s in rest["sessions"]] == ["c2", "c1", "c0"]


def test_one_discovery_call_reads_the_archive_as_one_commit_left_it(tmp_path):
    # another process appending between the call's reads must not land on the page out of order
    path = tmp_path / "race.db"
    with Archive(path) as ar, Archive(path) as writer:
        for s in range(5):
            ar.add_message(f"old{s}", "user", "数据 old")
        for i in range(60):
            ar.add_message("busy", "user", f"数据 busy {i}")
        search = ar.search

        def racing(*args, **kwargs):
            found = search(*args, **kwargs)
            writer.add_message("late", "user", "数据 late")
            return found

        ar.search = racing
        out = ar.session_search(query="数据", sort="newest", limit=2)
        best = [s["hit"]["message_id"] for s in out["sessions"]]
        assert [s["session"]["session_id"] for s in out["sessions"]] == ["busy", "old4"]
        assert best == sorted(best, reverse=True)


@pytest.mark.parametrize("sort", ["newest", "oldest"])
def test_other_hit_ids_list_the_sessions_next_hits_found_past_the_read(tmp_path, sort):
    from cjk_tokenizer.session_search import FETCH

    with Archive(tmp_path / "other.db") as ar:
        mine = [ar.add_message("A", "user", f"数据 a{i}") for i in range(3)]
        for i in range(FETCH - 1):
            ar.add_message(f"x{i:02d}", "user", f"数据 x{i}")
        mine.append(ar.add_message("A", "user", "数据 a-newest"))
        out = ar.session_search(query="数据", sort=sort, limit=3)
        entry = next(s for s in out["sessions"] if s["session"]["session_id"] == "A")
        order = mine[::-1] if sort == "newest" else mine
        assert entry["hit"]["message_id"] == order[0] and entry["other_hit_ids"] == order[1:]
        assert entry["hits_in_session"] == 4
