"""Processes without the extension sharing an archive file: readers leave the
cjk index alone, and writers that are not the archive (the sqlite3 shell,
stdlib sqlite3) have a documented way in.

The shell part skips when no sqlite3 shell is installed, unless
CJK_REQUIRE_ALL_HOSTS is set (CI), where that is a failure."""
from __future__ import annotations

import io
import sqlite3
import subprocess
import warnings

import pytest

import cjk_tokenizer
import cjk_tokenizer.archive as archive_mod
from cjk_tokenizer.archive import Archive
from cjk_tokenizer.errors import ExtensionError
from cjk_tokenizer.export import export


def _cjk(ar) -> dict:
    return ar.indexes.status()["cjk"]


def _found(ar, text: str) -> list[int]:
    return [h.message_id for h in ar.search(text, route="cjk")]


def test_opening_without_the_extension_to_read_leaves_the_cjk_index_served(tmp_path, monkeypatch):
    path = tmp_path / "a.db"
    with Archive(path) as served:
        mid = served.add_message("s", "user", "部署失败了，怎么回滚？")
        reader = Archive(path, extension=False)
        monkeypatch.setattr(archive_mod, "load", lambda conn: (_ for _ in ()).throw(ExtensionError("no loading")))
        with pytest.warns(RuntimeWarning, match="no loading"):
            cannot_load = Archive(path)
        monkeypatch.undo()
        for other in (reader, cannot_load):
            assert not other.extension_loaded and "cjk" not in other.indexes.live()
            assert [h.message_id for h in other.search("回滚")] == [mid]  # served by the scan route there
            assert other.get_message(mid)["content"].startswith("部署")
            assert "error" not in other.session_search(query="回滚")
        # nobody wrote: the other process is still served by the cjk index
        assert _cjk(served)["status"] == "live" and "cjk" in served.indexes.live()
        assert served.explain("回滚")["route"] == "cjk"
        # the first write without the extension demotes it, and the write goes through
        late = reader.add_message("s", "user", "没有扩展时写的")
        assert _cjk(served)["status"] == "stale" and "cjk" not in served.indexes.live()
        reader.close()
        cannot_load.close()
        assert served.indexes.catch_up() is True and _found(served, "扩展") == [late]


def _shell_write(shell: str, path, text: str, *, load: bool = False) -> subprocess.CompletedProcess:
    commands = [f".load {cjk_tokenizer.loadable_path()}"] if load else []
    commands.append(f"INSERT INTO messages(session_id, role, content) VALUES ('s', 'user', '{text}')")
    return subprocess.run([shell, "-bail", "-batch", str(path), *commands], input="", capture_output=True,
                          text=True, timeout=60)


def test_foreign_writers_follow_the_documented_recipe(tmp_path, sqlite3_shell):
    path = tmp_path / "a.db"
    with Archive(path) as ar:
        ar.add_message("s", "user", "部署失败了")

    # the shell without the extension, while the cjk index is live: refused, nothing written
    proc = _shell_write(sqlite3_shell, path, "外来写入甲")
    assert proc.returncode != 0 and "no such tokenizer: cjk_unicode61" in proc.stderr
    # with the extension loaded the write is indexed at once; the index stays live
    proc = _shell_write(sqlite3_shell, path, "外来写入乙", load=True)
    assert proc.returncode == 0, proc.stderr
    with Archive(path, auto_catch_up=0) as ar:
        assert ar.count_messages() == 2 and _cjk(ar)["status"] == "live"
        assert len(_found(ar, "写入乙")) == 1
    # or the index is paused first; the archive catches it up when it next opens with the extension
    with Archive(path, extension=False) as ar:
        assert ar.indexes.pause("cjk") is True and ar.indexes.pause("cjk") is False
    proc = _shell_write(sqlite3_shell, path, "外来写入丙")
    assert proc.returncode == 0, proc.stderr
    with Archive(path) as ar:
        assert _cjk(ar)["status"] == "live" and len(_found(ar, "写入丙")) == 1
        assert ar.indexes.integrity_check()["cjk"] == "ok"
        assert ar.session("s")["message_count"] == 3

    # stdlib sqlite3: a connection that failed must read the schema anew after the pause
    conn = sqlite3.connect(path)
    insert = "INSERT INTO messages(session_id, role, content) VALUES ('s', 'user', ?)"
    with pytest.raises(sqlite3.OperationalError, match="no such tokenizer"):
        conn.execute(insert, ("外来写入丁",))
    with Archive(path, extension=False) as ar:
        ar.indexes.pause()
    conn.rollback()
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    conn.execute(insert, ("外来写入丁",))
    conn.commit()
    conn.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the extension loads here
        with Archive(path) as ar:
            assert len(_found(ar, "写入丁")) == 1 and ar.indexes.integrity_check()["cjk"] == "ok"


def test_a_message_a_foreign_writer_puts_in_a_new_session_gets_its_session_row(tmp_path, sqlite3_shell):
    # the shell keeps foreign keys off: the triggers make the session's row, so every
    # entry point (export, browse, session lookups) sees the message's session
    path = tmp_path / "a.db"
    with Archive(path) as ar:
        ar.add_message("s", "user", "原有消息")
    proc = subprocess.run([sqlite3_shell, "-bail", "-batch", str(path), f".load {cjk_tokenizer.loadable_path()}",
                           "INSERT INTO messages(session_id, role, content, timestamp) "
                           "VALUES ('ext-tool', 'user', '外部工具写入 部署', 1700000000)"],
                          input="", capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    with Archive(path) as ar:
        made = ar.session("ext-tool")
        assert (made["started_at"], made["message_count"], made["last_active"]) == (1700000000.0, 1, 1700000000.0)
        out = io.StringIO()
        assert export(ar, out) == 2 and '"id": "ext-tool"' in out.getvalue()
        assert {s["session_id"] for s in ar.session_search()["sessions"]} == {"s", "ext-tool"}


# The session triggers of the earliest releases: they made no session row.
OLDEST_SESSION_TRIGGERS = """CREATE TRIGGER messages_session_ai AFTER INSERT ON messages BEGIN
    UPDATE sessions SET message_count = message_count + 1,
        last_active = max(coalesce(last_active, new.timestamp), coalesce(new.timestamp, last_active))
    WHERE id = new.session_id;
END"""


def test_an_archive_from_before_the_row_making_triggers_adopts_its_sessionless_messages(tmp_path):
    from cjk_tokenizer import schema

    path = tmp_path / "a.db"
    with Archive(path) as ar:
        ar.add_message("s", "user", "原有消息", timestamp=100)
        conn = ar.conn
        for name in schema.SESSION_TRIGGER_NAMES:  # as an older release made them
            conn.execute(f"DROP TRIGGER {name}")
        conn.execute(OLDEST_SESSION_TRIGGERS)
        assert schema.session_triggers_stale(conn)
        conn.execute("PRAGMA foreign_keys = OFF")
        for ts in (300, 200):
            conn.execute("INSERT INTO messages(session_id, role, content, timestamp) VALUES ('lost', 'user', ?, ?)",
                         (f"没有会话 {ts}", ts))
        assert ar.session("lost") is None
    with Archive(path, readonly=True) as ar:  # reading changes nothing
        assert ar.session("lost") is None and schema.session_triggers_stale(ar.conn)
    with Archive(path) as ar:
        assert not schema.session_triggers_stale(ar.conn)
        lost = ar.session("lost")
        assert (lost["started_at"], lost["message_count"], lost["last_active"]) == (200.0, 2, 300.0)
        assert ar.session("s")["message_count"] == 1  # sessions with a row are left as they are


def _shell(shell: str, path, *statements: str) -> subprocess.CompletedProcess:
    return subprocess.run([shell, "-bail", "-batch", str(path), f".load {cjk_tokenizer.loadable_path()}",
                           *statements], input="", capture_output=True, text=True, timeout=60)


def _every_index_holds_exactly_the_table(ar) -> None:
    assert set(ar.indexes.integrity_check().values()) == {"ok"}
    rows = dict(ar.conn.execute("SELECT id, content FROM messages").fetchall())
    for mid, text in rows.items():  # a CJK word of 3 characters and a Latin word each
        cjk, latin = text.split()
        for route in ar.indexes.live():
            word = latin if route == "unicode61" else cjk
            assert mid in [h.message_id for h in ar.search(word, route=route, limit=50)], (route, mid, text)
    counts = dict(ar.conn.execute("SELECT session_id, count(*) FROM messages GROUP BY session_id").fetchall())
    assert {s["id"]: s["message_count"] for s in ar.sessions()} == {**{s["id"]: 0 for s in ar.sessions()}, **counts}


@pytest.mark.parametrize("recursive", ["OFF", "ON"])
def test_writes_with_a_conflict_clause_keep_sessions_and_every_index(tmp_path, sqlite3_shell, recursive):
    # The writing statement's conflict clause overrides the triggers' own: REPLACE INTO
    # (sqlite-utils' insert(replace=True)) wiped the session's row, INSERT OR ABORT
    # failed on it, and a REPLACE of an id deleted the old row without its DELETE
    # triggers, leaving every index corrupt and the old text found.
    path = tmp_path / "a.db"
    with Archive(path, indexes=("cjk", "unicode61", "trigram")) as ar:
        ar.add_session("s1", title="部署会话", source="cli", metadata={"k": 1}, started_at=1700000000)
        for k, word in enumerate(("第一条 first", "第二条 second", "第三条 third"), 1):
            ar.add_message("s1", "user", word, timestamp=1700000000 + k)
        ar.add_message("s2", "user", "别的会 other", timestamp=1700000009)
    # recursive_triggers on fires the DELETE triggers for a replaced row too: it must not
    # be taken out twice (that corrupted every index)
    proc = _shell(sqlite3_shell, path, f"PRAGMA recursive_triggers = {recursive}",
                  "REPLACE INTO messages(session_id, role, content, timestamp) VALUES ('s1', 'user', '新增的 fourth', 1700000010)",
                  "INSERT OR ABORT INTO messages(session_id, role, content, timestamp) VALUES ('s1', 'user', '再加上 fifth', 11)",
                  "INSERT OR REPLACE INTO messages(id, session_id, role, content, timestamp) "
                  "VALUES (1, 's2', 'user', '替换了 replaced', 1700000012)",
                  "INSERT OR IGNORE INTO messages(id, session_id, role, content) VALUES (2, 's1', 'user', '忽略了 ignored')",
                  "UPDATE OR REPLACE messages SET id = 3 WHERE content = '再加上 fifth'",
                  "UPDATE OR REPLACE messages SET content = '改过了 changed' WHERE id = 2")
    assert proc.returncode == 0, proc.stderr
    with Archive(path) as ar:
        s1 = ar.session("s1")
        assert (s1["title"], s1["source"], s1["metadata"], s1["started_at"]) == ("部署会话", "cli", {"k": 1}, 1700000000)
        assert sorted(ar.conn.execute("SELECT id, content FROM messages").fetchall()) == [
            (1, "替换了 replaced"), (2, "改过了 changed"), (3, "再加上 fifth"), (4, "别的会 other"), (5, "新增的 fourth")]
        for gone in ("first", "second", "third", "忽略"):
            assert ar.search(gone) == [], gone
        _every_index_holds_exactly_the_table(ar)


@pytest.mark.parametrize("recursive", ["OFF", "ON"])
def test_a_replace_while_an_index_is_paused_is_caught_up_exactly(tmp_path, sqlite3_shell, recursive):
    # The backlog kept the replaced row's first indexed values only while its OR IGNORE
    # was not overridden: UPDATE OR REPLACE then recorded the row as never indexed.
    path = tmp_path / "a.db"
    with Archive(path) as ar:
        for k in range(1, 5):
            ar.add_message("s", "user", f"原文{k}号 orig{k}")
        assert ar.indexes.pause("cjk")
    proc = _shell(sqlite3_shell, path, f"PRAGMA recursive_triggers = {recursive}",
                  "UPDATE OR REPLACE messages SET content = '新文字 new2' WHERE id = 2",
                  "UPDATE OR REPLACE messages SET content = '再改过 again2' WHERE id = 2",
                  "INSERT OR REPLACE INTO messages(id, session_id, role, content) VALUES (3, 's', 'user', '替换了 new3')",
                  "UPDATE OR REPLACE messages SET id = 1 WHERE id = 4")
    assert proc.returncode == 0, proc.stderr
    with Archive(path) as ar:
        assert _cjk(ar)["status"] == "live"
        assert sorted(ar.conn.execute("SELECT id, content FROM messages").fetchall()) == [
            (1, "原文4号 orig4"), (2, "再改过 again2"), (3, "替换了 new3")]
        for gone in ("orig1", "orig2", "orig3", "新文"):
            assert ar.search(gone, route="cjk") == [], gone
        _every_index_holds_exactly_the_table(ar)


@pytest.mark.parametrize("extension", [True, False])
def test_an_archive_whose_triggers_predate_replace_handling_gets_it_at_its_first_writable_open(tmp_path, sqlite3_shell,
                                                                                              extension):
    from cjk_tokenizer import schema

    path = tmp_path / "a.db"
    with Archive(path) as ar:
        ar.add_session("s", title="标题")
        ar.add_message("s", "user", "第一条 first")
        conn = ar.conn
        with conn:  # as the previous release made them: no saved row, OR IGNORE in the triggers
            for name in schema.SESSION_TRIGGER_NAMES:
                conn.execute(f"DROP TRIGGER {name}")
            for route in ar.indexes.live():
                for name, sql in zip(schema.trigger_names(route), schema.live_triggers(route)):
                    conn.execute(f"DROP TRIGGER {name}")
                    conn.execute("\n".join(line for line in sql.split("\n") if "messages_replaced" not in line))
            conn.execute("DROP TABLE messages_replaced")
            conn.execute(PREVIOUS_SESSION_TRIGGER)
        assert schema.session_triggers_stale(conn)
    # opened first where the extension is missing: the live cjk index keeps its table and
    # state, and gets this release's triggers too (it kept the old ones)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with Archive(path, extension=extension) as ar:
            assert not schema.session_triggers_stale(ar.conn) and _cjk(ar)["status"] == "live"
    proc = _shell(sqlite3_shell, path,
                  "INSERT OR REPLACE INTO messages(id, session_id, role, content) VALUES (1, 's', 'user', '替换了 replaced')",
                  "REPLACE INTO messages(session_id, role, content) VALUES ('s', 'user', '新增的 second')")
    assert proc.returncode == 0, proc.stderr
    with Archive(path) as ar:
        assert ar.session("s")["title"] == "标题" and ar.search("first") == []
        _every_index_holds_exactly_the_table(ar)


PREVIOUS_SESSION_TRIGGER = """CREATE TRIGGER messages_session_ai AFTER INSERT ON messages BEGIN
    INSERT OR IGNORE INTO sessions(id, started_at) VALUES (new.session_id, new.timestamp);
    UPDATE sessions SET message_count = message_count + 1,
        last_active = max(coalesce(last_active, new.timestamp), coalesce(new.timestamp, last_active))
    WHERE id = new.session_id;
END"""


def test_rows_another_tool_wrote_in_any_type_read_everywhere(tmp_path):
    # TEXT that is not UTF-8 (the sqlite3 shell writes bytes as given), a BLOB, and an
    # infinite time: the cjk index found the rows, but get_message, export and a
    # scan-route search raised UnicodeDecodeError, session_search raised, the agent
    # tool answered internal_error or wrote bare Infinity, which JSON does not have.
    import json

    from cjk_tokenizer.agent_tool import handle_session_search

    path = tmp_path / "a.db"
    with Archive(path) as ar:
        ar.add_message("ok", "user", "部署 fine", timestamp=1)
        ar.conn.execute("INSERT INTO messages(session_id, role, content, reasoning, timestamp) "
                        "VALUES ('bad', 'user', CAST(X'E983A8E7BDB220FF' AS TEXT), CAST(X'FE' AS TEXT), 2)")
        ar.conn.execute("INSERT INTO messages(session_id, role, content, tool_name, timestamp) "
                        "VALUES ('blob', 'tool', ?, ?, 9e999)", ("部署 log".encode(), b"run\xff"))
        ar.conn.execute("UPDATE sessions SET title = CAST(X'E6A087FF' AS TEXT) WHERE id = 'bad'")
        # times another tool wrote as text: one the time rule reads, one not UTF-8
        ar.conn.execute("INSERT INTO messages(session_id, role, content, timestamp) "
                        "VALUES ('t', 'user', '部署 iso', '2024-05-01T08:30:00Z'), "
                        "('t', 'user', '部署 junk', CAST(X'80FF' AS TEXT))")
        ar.conn.execute("UPDATE sessions SET started_at = CAST(X'80' AS TEXT), message_count = 9e999 WHERE id = 't'")
    for extension in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ar = Archive(path, extension=extension)
        with ar:
            assert ar.get_message(2)["content"] == "部署 \ufffd" and ar.get_message(2)["reasoning"] == "\ufffd"
            third = ar.get_message(3)
            assert (third["content"], third["tool_name"], third["timestamp"]) == ("部署 log", "run\ufffd", None)
            assert [m["content"] for m in ar.messages_of("bad")] == ["部署 \ufffd"]
            assert ar.session("bad")["title"] == "标\ufffd" and ar.session("blob")["last_active"] is None
            # text in a time column is no time (SQLite compares it above every number): it read
            # as None, yet passed every `after` filter and topped the browse order, which then
            # stopped at it, finding no session
            assert [m["timestamp"] for m in ar.messages_of("t")] == [None, None]
            assert (ar.session("t")["started_at"], ar.session("t")["message_count"]) == (None, None)
            for route in ["scan"] + (["cjk"] if extension else []):
                assert {h.message_id for h in ar.search("部署", route=route, after="1970-01-01T00:00:01Z")} == {1, 2}
                assert {h.message_id for h in ar.search("部署", route=route, before="2099-01-01")} == {1, 2}
            since = ar.session_search(after="1970-01-01T00:00:01Z")
            assert {s["session_id"] for s in since["sessions"]} == {"ok", "bad"}, since
            assert [s["session_id"] for s in ar.session_search()["sessions"]][:2] == ["bad", "ok"]
            routes = ["scan", None] + (["cjk"] if extension else [])
            for route in routes:
                got = {h.message_id: (h.snippet, h.timestamp) for h in ar.search("部署", route=route)}
                assert got == {1: ("部署 fine", 1), 2: ("部署 \ufffd", 2), 3: ("部署 log", None),
                               4: ("部署 iso", None), 5: ("部署 junk", None)}, route
                assert [h.message_id for h in ar.search("log", route=route)] == [3], route
            for fmt in ("jsonl", "markdown"):
                out = io.StringIO()
                assert ar.export(out, format=fmt) == 5 and "Infinity" not in out.getvalue()
            for args in ({}, {"query": "部署"}, {"session_id": "bad"}, {"session_id": "blob"},
                         {"session_id": "blob", "around_message_id": 3}, {"session_id": "t"}):
                text = handle_session_search(ar, args)
                result = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in {args}"))
                assert "error" not in result, (args, result)
                assert "部署" in text, args


def test_hits_in_a_session_whose_id_another_tool_stored_as_bytes_are_shown_and_said(tmp_path):
    # the search found them, and session_search dropped them without a word
    path = tmp_path / "a.db"
    with Archive(path) as ar:
        ar.add_message("ok", "user", "部署 fine", timestamp=1)
        ar.conn.execute("INSERT INTO messages(session_id, role, content, timestamp) "
                        "VALUES (X'6364', 'user', '部署 blob', 2), (CAST(X'6162FF' AS TEXT), 'user', '部署 bad', 3)")
    with Archive(path, readonly=True) as ar:
        assert {h.session_id for h in ar.search("部署")} == {"ok", "cd", "ab\ufffd"}
        out = ar.session_search("部署", limit=10)
        assert {s["session"]["session_id"] for s in out["sessions"]} == {"ok", "cd", "ab\ufffd"}
        assert sum("stored as bytes" in n for n in out["notes"]) == 2
        hit = next(s for s in out["sessions"] if s["session"]["session_id"] == "cd")
        assert [m["content"] for m in hit["window"]] == ["部署 blob"]


@pytest.mark.parametrize("column", ["rowid", "oid", "_rowid_"])
def test_moving_a_message_through_a_rowid_alias_keeps_every_index(tmp_path, sqlite3_shell, column):
    # triggers of UPDATE OF id do not fire for an update of rowid: the index kept the old
    # rowid, and a replaced row stayed indexed
    path = tmp_path / "a.db"
    with Archive(path, indexes=("cjk", "unicode61", "trigram")) as ar:
        for word in ("第一条 alpha", "第二条 bravo", "第三条 charlie"):
            ar.add_message("s1", "user", word)
    proc = _shell(sqlite3_shell, path, f"UPDATE OR REPLACE messages SET {column} = 2 WHERE id = 1",
                  f"UPDATE messages SET {column} = 9 WHERE id = 3")
    assert proc.returncode == 0, proc.stderr
    with Archive(path) as ar:
        assert sorted(ar.conn.execute("SELECT id, content FROM messages").fetchall()) == [
            (2, "第一条 alpha"), (9, "第三条 charlie")]
        assert ar.search("bravo") == [] and ar.session("s1")["message_count"] == 2
        _every_index_holds_exactly_the_table(ar)


def test_a_copy_saved_for_a_write_that_did_not_happen_is_never_read_by_a_later_insert(tmp_path):
    # an ignored move onto an existing id left its saved copy; once that row moved away,
    # an insert given the id automatically read the copy and took it out of every index
    import apsw

    path = tmp_path / "a.db"
    with Archive(path) as ar:
        ar.add_message("s0", "user", "第一条 alpha")
        ar.add_message("s1", "user", "第二条 beta")
    conn = cjk_tokenizer.load(apsw.Connection(str(path)))
    conn.execute("UPDATE messages SET id = 10 WHERE id = 1")  # past the id sequence
    conn.execute("UPDATE OR IGNORE messages SET id = 10 WHERE id = 2")  # ignored: row 10 was saved first
    conn.execute("INSERT OR FAIL INTO messages(id, session_id, role, content) VALUES (2, 's1', 'user', 'x')"
                 " ON CONFLICT DO NOTHING")
    conn.execute("UPDATE messages SET id = 9 WHERE id = 10")
    conn.execute("INSERT INTO messages(session_id, role, content) VALUES ('s2', 'user', '第三条 gamma')")
    conn.close()
    with Archive(path) as ar:
        assert sorted(ar.conn.execute("SELECT id, content FROM messages").fetchall()) == [
            (2, "第二条 beta"), (9, "第一条 alpha"), (10, "第三条 gamma")]  # the id the copy had
        _every_index_holds_exactly_the_table(ar)
