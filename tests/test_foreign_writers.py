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


def test_an_archive_from_before_the_row_making_triggers_adopts_its_sessionless_messages(tmp_path):
    from cjk_tokenizer import schema

    path = tmp_path / "a.db"
    with Archive(path) as ar:
        ar.add_message("s", "user", "原有消息", timestamp=100)
        conn = ar.conn
        for name, sql in zip(schema.SESSION_TRIGGER_NAMES, schema.SESSION_TRIGGERS):  # as an older release made them
            conn.execute(f"DROP TRIGGER {name}")
            conn.execute(sql.replace("    INSERT OR IGNORE INTO sessions(id, started_at) "
                                     "VALUES (new.session_id, new.timestamp);\n", ""))
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
