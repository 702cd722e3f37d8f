"""Two SQLite libraries in one process, each with its own host routines.

The stdlib part needs a Python whose sqlite3 module allows extension loading
(Debian's system python3 does; this machine's pyenv Python does not).  CI runs
this file under Debian's python3 with CJK_REQUIRE_STDLIB_LOAD=1, where a skip
would hide a regression, so it fails instead.
"""
import os
import shutil
import sqlite3
import subprocess
import sys

import apsw
import pytest

import cjk_tokenizer


def _skip_or_fail(reason, env="CJK_REQUIRE_STDLIB_LOAD"):
    if os.environ.get(env):
        pytest.fail(f"{reason} (and {env} is set)")
    pytest.skip(reason)


def _stdlib_can_load():
    return hasattr(sqlite3.Connection, "enable_load_extension")


def test_extension_module_is_the_tree_under_test():
    # The ASan stage imports the sanitized build from its own tree; make sure it did.
    if os.environ.get("CJK_SANITIZED"):
        assert cjk_tokenizer._native.module_path().startswith(os.getcwd())


def test_stdlib_and_apsw_in_one_process_do_not_trample():
    if not _stdlib_can_load():
        _skip_or_fail("this Python's sqlite3 is built without extension loading")
    std = cjk_tokenizer.load(sqlite3.connect(":memory:"))
    aps = cjk_tokenizer.load(apsw.Connection(":memory:"))
    if sqlite3.sqlite_version == apsw.sqlite_lib_version():
        _skip_or_fail("stdlib sqlite3 and APSW share one SQLite library here; nothing to trample")
    ddl = "CREATE VIRTUAL TABLE t USING fts5(body, tokenize='cjk_unicode61')"
    std.execute(ddl)
    aps.execute(ddl)
    rows = ["大别山项目管理", "修改youer服务", "東京の天気は晴れ", "한국어 검색 테스트"]
    # Interleave work on both hosts: each call must go to its own SQLite.
    for i, body in enumerate(rows, 1):
        std.execute("INSERT INTO t(rowid, body) VALUES (?, ?)", (i, body))
        aps.execute("INSERT INTO t(rowid, body) VALUES (?, ?)", (i, body))
    for query, expect in [('"项目"', [1]), ('"改"*', [2]), ("youer", [2]), ('"天気"', [3]), ('"검색"', [4])]:
        got_std = [r[0] for r in std.execute("SELECT rowid FROM t WHERE t MATCH ?", (query,))]
        got_aps = [r[0] for r in aps.execute("SELECT rowid FROM t WHERE t MATCH ?", (query,))]
        assert got_std == expect, query
        assert got_aps == expect, query
    std.execute("INSERT INTO t(t) VALUES ('integrity-check')")
    aps.execute("INSERT INTO t(t) VALUES ('integrity-check')")
    # Loading is switched off again after load().
    with pytest.raises(sqlite3.OperationalError):
        std.execute("SELECT load_extension(?)", (cjk_tokenizer.loadable_path(),))
    std.close()
    # The APSW connection keeps working after the stdlib one is gone.
    assert [r[0] for r in aps.execute("SELECT rowid FROM t WHERE t MATCH '\"管理\"'")] == [1]
    aps.close()


def test_stdlib_host_error_is_clear_when_loading_is_unavailable():
    if _stdlib_can_load():
        pytest.skip("this Python's sqlite3 can load extensions")
    with pytest.raises(cjk_tokenizer.ExtensionError, match="extension loading"):
        cjk_tokenizer.load(sqlite3.connect(":memory:"))


def test_plain_library_has_no_python_or_sqlite_links():
    path = cjk_tokenizer.loadable_path()
    if not shutil.which("nm") or sys.platform != "linux":
        pytest.skip("needs binutils nm on Linux")
    undefined = subprocess.run(["nm", "-D", "--undefined-only", path], capture_output=True, text=True).stdout
    assert "Py" not in undefined
    assert "sqlite3_" not in undefined
    exported = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True).stdout
    assert "sqlite3_cjkunicode_init" in exported
    needed = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
    assert "libsqlite3" not in needed and "libpython" not in needed
    module = cjk_tokenizer._native.module_path()
    needed = subprocess.run(["readelf", "-d", module], capture_output=True, text=True).stdout
    assert "libsqlite3" not in needed


def test_cjk_match_on_a_host_without_query_tokens_never_marks_only_the_wrong_character():
    # SQLite < 3.45 (Debian 12's 3.40) has no xQueryToken: the token is guessed from the row.  In 山大a大山
    # both unigrams 山 and 大 stand at both instances of "大"; picking 山 marked [山]大a大[山], missing 大.
    if not _stdlib_can_load():
        _skip_or_fail("this Python's sqlite3 is built without extension loading")
    import json
    conn = cjk_tokenizer.load(sqlite3.connect(":memory:"))
    conn.execute("CREATE VIRTUAL TABLE u USING fts5(a, tokenize='cjk_unicode61 unigrams 1')")
    rows = ["山大a大山", " 山大\ufffd大山", "项山\ufffd 项山项", "山山项山大别大山"]
    conn.executemany("INSERT INTO u(rowid, a) VALUES (?, ?)", list(enumerate(rows, 1)))
    for ch in "大山项别":
        for rowid, js in conn.execute("SELECT rowid, cjk_match(u, 'a', 100, '[', ']') FROM u WHERE u MATCH ?",
                                      (f'"{ch}"',)):
            text, marks = rows[rowid - 1], json.loads(js)["matches"]
            for i in (k for k, c in enumerate(text) if c == ch):
                assert any(s <= i < e for s, e in marks), (ch, text, marks)
