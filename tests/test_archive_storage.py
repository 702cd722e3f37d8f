"""Archive storage: what callers store comes back as stored, bad input never costs data."""
from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time

import apsw
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import _archive_corpus as corpus  # noqa: E402

from cjk_tokenizer.archive import Archive, ArchiveError, InputError  # noqa: E402

ALL3 = ("cjk", "unicode61", "trigram")
ROUTE_TABLES = {"cjk": "messages_fts_cjk", "unicode61": "messages_fts_u61", "trigram": "messages_fts_tri"}


@pytest.fixture
def ar(tmp_path):
    a = Archive(tmp_path / "a.db", indexes=("cjk", "unicode61", "trigram"))
    yield a
    a.close()


def hits(ar, route, query):
    t = ROUTE_TABLES[route]
    return {r[0] for r in ar.conn.execute(f"SELECT rowid FROM {t} WHERE {t} MATCH ?", (query,))}


def test_round_trip_and_session_bookkeeping(ar):
    sid = ar.add_session(title="部署", source="cli", started_at=100.0, metadata={"k": "値"})
    assert isinstance(sid, str) and len(sid) == 36  # a uuid4
    assert ar.add_session("mine") == "mine"
    with pytest.raises(InputError, match="already exists"):
        ar.add_session("mine", title="again")
    a = ar.add_message(sid, "user", "部署失败了", timestamp=200.0)
    b = ar.add_message(sid, "assistant", "回滚吧", reasoning="先看日志", timestamp=dt.datetime.fromtimestamp(300.0))
    c = ar.add_message("auto", "user", "a session made on the fly", timestamp=50.0)
    assert a < b < c
    got = ar.get_message(b)
    assert got == {"id": b, "session_id": sid, "role": "assistant", "content": "回滚吧", "reasoning": "先看日志",
                   "tool_name": None, "tool_calls": None, "tool_call_id": None, "timestamp": 300.0, "metadata": {}}
    assert ar.get_message(10**9) is None
    s = ar.session(sid)
    assert (s["title"], s["source"], s["started_at"], s["metadata"]) == ("部署", "cli", 100.0, {"k": "値"})
    assert (s["message_count"], s["last_active"]) == (2, 300.0)
    auto = ar.session("auto")
    assert (auto["started_at"], auto["message_count"], auto["title"]) == (50.0, 1, None)
    assert ar.session("nope") is None
    # most recently active first; a session without messages last
    assert [x["id"] for x in ar.sessions()] == [sid, "auto", "mine"]
    assert [x["id"] for x in ar.sessions(limit=1, offset=1)] == ["auto"]
    assert ar.count_messages() == 3 and ar.count_messages(sid) == 2 and ar.count_sessions() == 3
    assert ar.update_session(sid, title="新标题") and ar.session(sid)["title"] == "新标题"
    assert not ar.update_session("nope", title="x")


def test_messages_of_pages_both_ways(ar):
    ids = [ar.add_message("s", "user", f"m{i}") for i in range(10)]
    ar.add_message("other", "user", "not mine")
    assert [m["id"] for m in ar.messages_of("s")] == ids
    assert [m["content"] for m in ar.messages_of("s", limit=3)] == ["m0", "m1", "m2"]
    assert [m["content"] for m in ar.messages_of("s", limit=3, order="desc")] == ["m9", "m8", "m7"]
    assert [m["id"] for m in ar.messages_of("s", after_id=ids[3], before_id=ids[7])] == ids[4:7]
    assert [m["id"] for m in ar.messages_of("s", before_id=ids[5], order="desc", limit=2)] == [ids[4], ids[3]]
    assert ar.messages_of("missing") == []
    with pytest.raises(ValueError, match="order"):
        ar.messages_of("s", order="newest")
    with pytest.raises(ValueError, match="limit"):
        ar.messages_of("s", limit=-1)


def test_openai_style_dicts(ar):
    call = {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": '{"cmd": "回滚 部署"}'}}
    a = ar.add_openai_message("s", {"role": "assistant", "content": None, "reasoning_content": "想想大别山",
                                    "tool_calls": [call]})
    t = ar.add_openai_message("s", {"role": "tool", "tool_call_id": "call_1", "name": "shell",
                                    "content": [{"type": "text", "text": "第一部分"}, {"type": "text", "text": "part2"}]})
    img = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    u = ar.add_openai_message("s", {"role": "user", "name": "alice", "content": [{"type": "text", "text": "看图"}, img],
                                    "reasoning": "r", "reasoning_content": "r", "x_extra": 1})
    f = ar.add_openai_message("s", {"role": "function", "name": "legacy", "content": "old style"})
    ma, mt, mu, mf = (ar.get_message(i) for i in (a, t, u, f))
    assert ma["reasoning"] == "想想大别山" and ma["tool_calls"] == [call] and ma["content"] is None
    raw = ar.conn.execute("SELECT tool_calls FROM messages WHERE id = ?", (a,)).fetchone()[0]
    assert json.loads(raw) == [call] and "回滚" in raw  # CJK kept as CJK text, so it is indexed as CJK
    assert (mt["role"], mt["tool_name"], mt["tool_call_id"], mt["content"]) == ("tool", "shell", "call_1", "第一部分\npart2")
    assert mu["content"] == "看图" and mu["reasoning"] == "r"  # identical reasoning keys: stored once
    assert mu["metadata"] == {"content_parts": [img], "name": "alice", "x_extra": 1}  # nothing dropped
    assert (mf["role"], mf["tool_name"]) == ("tool", "legacy")
    assert hits(ar, "cjk", "大别山") == {a}  # reasoning is indexed
    assert hits(ar, "cjk", "tool_calls : 回滚") == {a}
    assert hits(ar, "unicode61", "tool_name : shell") == {t}


def test_tool_results_are_indexed_whole(ar):
    out = "\n".join(f"line {i}: 日志输出 ok" for i in range(20000)) + "\nLASTLINE 最后一行的错误"
    mid = ar.add_openai_message("s", {"role": "tool", "tool_call_id": "c", "name": "shell", "content": out})
    assert len(out.encode()) > 300_000
    assert ar.get_message(mid)["content"] == out
    for route, query in (("cjk", '"最后一行"'), ("unicode61", "lastline"), ("trigram", "LASTLINE")):
        assert hits(ar, route, query) == {mid}, route


def test_bad_role_and_types_write_nothing(ar):
    ar.add_message("s", "user", "keep me")
    for bad in ("robot", "", None, "USER"):
        with pytest.raises(InputError, match="role"):
            ar.add_message("s", bad, "x")
    with pytest.raises(InputError, match="content must be a str"):
        ar.add_message("s", "user", b"bytes")
    with pytest.raises(InputError, match="session_id"):
        ar.add_message("", "user", "x")
    with pytest.raises(InputError, match="session_id"):
        ar.add_message(12, "user", "x")
    for ts in (float("nan"), float("inf"), True, "yesterday"):
        with pytest.raises(InputError, match="timestamp"):
            ar.add_message("s", "user", "x", timestamp=ts)
    with pytest.raises(InputError, match="JSON"):
        ar.add_message("s", "assistant", tool_calls=[object()])
    assert ar.count_messages() == 1 and ar.count_sessions() == 1


def test_add_messages_is_all_or_nothing(ar):
    good = {"role": "user", "content": "fine"}
    with pytest.raises(InputError, match="message #2"):
        ar.add_messages("s", [good, good, {"role": "wizard", "content": "no"}])
    assert ar.count_messages() == 0
    ids = ar.add_messages("s", [good, {"role": "assistant", "content": "ok"}])
    assert [m["id"] for m in ar.messages_of("s")] == ids


def test_nul_bytes_are_stored_and_indexed(ar):
    text = "before\x00after 前面\x00后面 tail"
    mid = ar.add_message("s", "user", text, reasoning="\x00")
    got = ar.get_message(mid)
    assert got["content"] == text and got["reasoning"] == "\x00"
    assert hits(ar, "unicode61", "after") == {mid}
    assert hits(ar, "cjk", "后面") == {mid} and hits(ar, "cjk", "tail") == {mid}
    assert ar.indexes.integrity_check()["cjk"] == "ok"


def test_lone_surrogates_are_refused_without_losing_data(ar):
    keep = ar.add_message("s", "user", "已有的数据")
    with pytest.raises(InputError, match=r"surrogate '\\ud800' at position 3"):
        ar.add_message("s", "user", "abc\ud800def")
    with pytest.raises(InputError, match="reasoning"):
        ar.add_openai_message("s", {"role": "assistant", "content": "ok", "reasoning": "\udcff"})
    with pytest.raises(InputError, match="message #1"):
        ar.add_messages("s", [{"role": "user", "content": "fine"}, {"role": "user", "content": "x\ud83d"}])
    assert ar.count_messages() == 1 and ar.get_message(keep)["content"] == "已有的数据"
    # bulk: the batches before the bad record stay committed, the one holding it does not
    records = corpus.messages(25, seed=1)
    records[17]["content"] = "bad \udc80 text"
    with pytest.raises(InputError, match="record #17") as info:
        ar.bulk_import(records, batch_size=5)
    assert info.value.committed == 15
    assert ar.count_messages() == 1 + 15
    assert ar.indexes.integrity_check() == {"cjk": "ok", "unicode61": "ok", "trigram": "ok", "database": "ok"}


def test_ten_megabyte_message(ar):
    chunk = "部署失败，回滚服务器。deploy failed, rolling back the server.\n"
    body = chunk * (10 * 2**20 // len(chunk.encode()) + 1) + "尾巴的针 needle_at_the_end"
    assert len(body.encode()) > 10 * 2**20
    mid = ar.add_message("s", "tool", body)
    assert ar.get_message(mid)["content"] == body
    assert hits(ar, "cjk", '"尾巴的针"') == {mid}
    assert hits(ar, "unicode61", "needle_at_the_end") == {mid}
    assert hits(ar, "trigram", "needle_at_the_end") == {mid}
    small = ar.add_message("s", "user", "after the big one")
    assert hits(ar, "unicode61", "after") == {small}


def test_bulk_import_matches_per_row_and_is_faster(tmp_path):
    records = corpus.messages(1500, seed=2)
    with Archive(tmp_path / "bulk.db", indexes=ALL3) as bulk, Archive(tmp_path / "row.db", indexes=ALL3) as row:
        seen = []
        t0 = time.perf_counter()
        assert bulk.bulk_import(records, batch_size=500, progress=seen.append) == 1500
        t_bulk = time.perf_counter() - t0
        t0 = time.perf_counter()
        for m in records:
            row.add_openai_message(m["session_id"], m)
        t_row = time.perf_counter() - t0
        assert seen == [500, 1000, 1500]
        dump = "SELECT id, session_id, role, content, reasoning, tool_name, tool_call_id, timestamp FROM messages ORDER BY id"
        assert bulk.conn.execute(dump).fetchall() == row.conn.execute(dump).fetchall()
        assert [(s["id"], s["message_count"]) for s in bulk.sessions()] == \
               [(s["id"], s["message_count"]) for s in row.sessions()]
        for route in ROUTE_TABLES:
            assert hits(bulk, route, "mk1234z") == hits(row, route, "mk1234z") == {1235}
        assert bulk.indexes.integrity_check() == {"cjk": "ok", "unicode61": "ok", "trigram": "ok", "database": "ok"}
        # Sane relation only (measured: ~10x on small messages); timings belong in bench/.
        assert t_bulk * 2 < t_row, (t_bulk, t_row)


def test_bulk_import_needs_a_session(ar):
    with pytest.raises(InputError, match="record #0.*session_id"):
        ar.bulk_import([{"role": "user", "content": "x"}])
    assert ar.bulk_import([{"role": "user", "content": "x"}], session_id="s") == 1
    with pytest.raises(ValueError, match="batch_size"):
        ar.bulk_import([], batch_size=0)


def test_update_and_delete_follow_into_every_index(ar):
    a = ar.add_message("s", "user", "旧的内容 oldword")
    b = ar.add_message("s", "user", "别的 other")
    assert ar.update_message(a, content="新的内容 newword", reasoning="思考")
    assert not ar.update_message(10**9, content="x")
    assert hits(ar, "cjk", "旧的") == set() and hits(ar, "cjk", "新的") == {a}
    assert hits(ar, "unicode61", "oldword") == set() and hits(ar, "trigram", "newword") == {a}
    assert ar.delete_message(b) and not ar.delete_message(b)
    assert hits(ar, "unicode61", "other") == set()
    c = ar.add_message("s", "user", "third")
    assert c > b  # ids are never reused
    assert ar.delete_session("s") == 2 and ar.session("s") is None and ar.count_messages() == 0
    assert ar.indexes.integrity_check() == {"cjk": "ok", "unicode61": "ok", "trigram": "ok", "database": "ok"}


def test_refuses_foreign_and_future_files(tmp_path):
    other = tmp_path / "other.db"
    c = apsw.Connection(str(other))
    c.execute("CREATE TABLE notes(x); INSERT INTO notes VALUES ('precious')")
    c.close()
    with pytest.raises(ArchiveError, match="not a cjk_tokenizer archive"):
        Archive(other, indexes=("cjk", "unicode61", "trigram"))
    c = apsw.Connection(str(other))
    assert c.execute("SELECT x FROM notes").fetchall() == [("precious",)]
    assert c.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 1
    assert c.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # not even switched to WAL
    c.close()
    future = tmp_path / "future.db"
    Archive(future).close()
    c = apsw.Connection(str(future))
    c.execute("PRAGMA user_version = 99")
    c.close()
    with pytest.raises(ArchiveError, match="version 99"):
        Archive(future)
    junk = tmp_path / "notes.txt"
    junk.write_bytes(b"my notes, not a database" * 100)
    with pytest.raises(ArchiveError, match="not a SQLite database"):
        Archive(junk)
    assert junk.read_bytes() == b"my notes, not a database" * 100


def test_opens_in_wal_with_foreign_keys(ar):
    assert ar.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert ar.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    # no message without its session, even through raw SQL: the triggers make the row ...
    ar.conn.execute("INSERT INTO messages(session_id, role, timestamp) VALUES ('ghost', 'user', 5)")
    assert ar.session("ghost")["message_count"] == 1 and ar.session("ghost")["started_at"] == 5.0
    with pytest.raises(apsw.ConstraintError):  # ... and the foreign key keeps it
        ar.conn.execute("DELETE FROM sessions WHERE id = 'ghost'")


def test_search_is_served_only_by_live_indexes(tmp_path):
    pytest.importorskip("cjk_tokenizer.search")
    path = tmp_path / "a.db"
    with Archive(path, indexes=("cjk", "unicode61", "trigram")) as ar:
        mid = ar.add_message("s", "user", "部署失败了 deploy failed")
        ar.add_message("s", "assistant", "好的", reasoning="想想部署的事")
        hits_ = ar.search("部署")
        assert [(h.message_id, h.route) for h in hits_] == [(mid, "cjk")]
        assert len(ar.search("部署", include_reasoning=True)) == 2
        assert ar.explain("部署")["route"] == "cjk"
    with Archive(path, extension=False) as ar:
        assert ar.explain("部署")["route"] != "cjk"
        assert [h.message_id for h in ar.search("部署")] == [mid]  # a fallback route, same answer
        assert all(h.route != "cjk" for h in ar.search("deploy"))


def test_bulk_batches_are_cut_by_text_size_too(ar, monkeypatch):
    import cjk_tokenizer.archive as archive_mod

    monkeypatch.setattr(archive_mod, "BULK_BATCH_CHARS", 1000)
    seen = []
    big = [{"session_id": "s", "role": "tool", "content": "日志" * 300} for _ in range(6)]  # 600 chars each
    assert ar.bulk_import(big, batch_size=100, progress=seen.append) == 6
    assert seen == [2, 4, 6]  # huge tool outputs do not pile up in one batch


def test_cjk_prefix_option_adds_the_prefix_index_and_keeps_results(tmp_path):
    texts = ["大别山项目管理", "项目", "山", "東京の天気", "別の山"]
    plain = Archive(tmp_path / "plain.db", indexes=("cjk", "unicode61", "trigram"))
    pre = Archive(tmp_path / "prefix.db", cjk_prefix=True)
    try:
        for ar in (plain, pre):
            for t in texts:
                ar.add_message("s", "user", t)
        ddl = pre.conn.execute("SELECT sql FROM sqlite_master WHERE name = 'messages_fts_cjk'").fetchone()[0]
        assert "prefix='1'" in ddl
        assert "prefix" not in plain.conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'messages_fts_cjk'").fetchone()[0]
        for q in ("山", "项", "天", "项目", "别山"):
            want = sorted(h.message_id for h in plain.search(q, limit=100))
            assert want and sorted(h.message_id for h in pre.search(q, limit=100)) == want, q
        # a rebuild keeps the table (and its prefix index)
        pre.indexes.rebuild("cjk")
        assert "prefix='1'" in pre.conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'messages_fts_cjk'").fetchone()[0]
        assert pre.indexes.integrity_check()["cjk"] == "ok"
    finally:
        plain.close()
        pre.close()


def test_reads_go_through_a_memory_map_that_follows_the_file_as_it_grows(tmp_path):
    path = tmp_path / "m.db"
    with Archive(path) as writer, Archive(path) as mapped, Archive(path, mmap_size=0) as plain, \
            Archive(path, readonly=True, mmap_size=1 << 20) as reader:
        assert mapped.conn.execute("PRAGMA mmap_size").fetchone()[0] > 0
        assert plain.conn.execute("PRAGMA mmap_size").fetchone()[0] == 0
        assert reader.conn.execute("PRAGMA mmap_size").fetchone()[0] == 1 << 20
        # long messages span overflow pages, which the map serves
        first = writer.add_message("s", "user", "项目管理" + "文字" * 3000)
        seen = [(a, a.search("项目", sort="newest")) for a in (mapped, plain, reader)]
        assert all([h.message_id for h in found] == [first] for _, found in seen)
        # the file grows well past what the readers mapped when they first read it
        later = [writer.add_message("s", "user", f"第{i}次项目复盘" + "内容" * 3000) for i in range(40)]
        for a, _ in seen:
            found = a.search("项目", sort="newest", limit=50)
            assert [h.message_id for h in found] == [*reversed(later), first]
            assert a.get_message(later[-1])["content"].startswith("第39次项目复盘")
        # and shrinks under them: pages they mapped are gone from the file
        writer.conn.execute("DELETE FROM messages WHERE id > ?", (later[4],))
        writer.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        writer.conn.execute("VACUUM")
        for a, _ in seen:
            for route in ("cjk", "scan"):
                found = a.search("项目", sort="newest", limit=50, route=route)
                assert [h.message_id for h in found] == [*reversed(later[:5]), first], route


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1", None])
def test_a_bad_mmap_size_is_a_one_line_error_before_any_file_is_made(tmp_path, bad):
    with pytest.raises(ValueError, match=r"^mmap_size must be a whole number of bytes >= 0 .*not "):
        Archive(tmp_path / "never.db", mmap_size=bad)
    assert not (tmp_path / "never.db").exists()


def test_a_session_id_no_row_can_have_is_an_answer_not_a_traceback(tmp_path):
    # half a surrogate pair (json.loads accepts "\ud800") raised a raw UnicodeEncodeError
    from cjk_tokenizer.errors import QueryError

    with Archive(tmp_path / "a.db") as ar:
        ar.add_message("s", "user", "部署")
        bad = "\ud800"
        assert (ar.session(bad), ar.messages_of(bad), ar.update_session(bad, title="x"), ar.delete_session(bad),
                ar.count_messages(bad)) == (None, [], False, 0, 0)
        for call in (lambda: ar.search("部署", session_id=bad), lambda: ar.search("部署", exclude_session_ids=[bad]),
                     lambda: ar.count_by_session("部署", [bad])):
            with pytest.raises(QueryError, match="lone surrogate"):
                call()
        assert ar.count_messages() == 1


def test_busy_timeout_beyond_sqlites_int_waits_longest_and_leaves_no_stray_file(tmp_path):
    for i, seconds in enumerate((float("inf"), 1e7, 10**5000)):
        with Archive(str(tmp_path / f"b{i}.db"), busy_timeout=seconds) as a:
            assert a.conn.execute("PRAGMA busy_timeout").fetchone()[0] == 2**31 - 1


def test_dropping_an_unknown_index_is_an_error_as_adding_one_is(ar):
    with pytest.raises(ValueError, match="unknown index 'trigam'"):
        ar.indexes.drop("trigam")
    ar.indexes.drop("trigram")  # a known index the archive lacks: nothing to do


def test_import_errors_share_the_package_base_class(ar, tmp_path):
    import cjk_tokenizer
    with pytest.raises(cjk_tokenizer.CjkTokenizerError, match="no such file"):
        ar.import_source(str(tmp_path / "missing.jsonl"))
