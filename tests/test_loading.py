"""Loading the extension: cjk_tokenizer.load(), loadable_path(), and every host.

- ``load(apsw.Connection)`` registers cjk_unicode61, returns the connection and
  leaves extension loading disabled again (also when loading fails).
- ``load(sqlite3.Connection)``: works where the stdlib module allows extension
  loading (Debian's python3); elsewhere (this machine's pyenv Python) it raises
  ``ExtensionError`` saying so.  CI runs this file under Debian's python3 with
  CJK_REQUIRE_STDLIB_LOAD=1, where a skip would hide a regression.
- ``python -m cjk_tokenizer path`` prints the plain library, which the
  ``sqlite3`` shell (SQLite 3.40, fts5 API v2) ``.load``s and queries.  Missing
  shell: skipped, unless CJK_REQUIRE_ALL_HOSTS is set (CI), then a failure.
- APSW's bundled SQLite (3.47+: fts5 API v3, locales) works too.
"""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys

import apsw
import pytest

import cjk_tokenizer
from cjk_tokenizer import ExtensionError

PKG_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(cjk_tokenizer.__file__)))
SHELL = "/usr/bin/sqlite3"


def _skip_or_fail(reason, env):
    if os.environ.get(env):
        pytest.fail(f"{reason} (and {env} is set)")
    pytest.skip(reason)


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_PARENT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _rows(conn, sql, params=()):
    return [tuple(r) for r in conn.execute(sql, params)]


DOCS = [(1, "大别山项目管理"), (2, "修改youer服务"), (3, "甲乙。乙丙"), (4, "甲乙丙"), (5, "ｶﾀｶﾅ と Ｈｅｌｌｏ１２３"),
        (6, "한국어 검색")]
QUERIES = [('"别山"', [1]), ('"改"*', [2]), ("youer", [2]), ('"甲乙丙"', [4]), ('"乙丙"', [3, 4]),
           ('"丙"*', [3, 4]), ('"カタカナ"', [5]), ("hello123", [5]), ('"검색"', [6]), ('"项目管理"', [1])]


def _fill(conn):
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='cjk_unicode61')")
    for rowid, body in DOCS:
        conn.execute("INSERT INTO t(rowid, body) VALUES (?, ?)", (rowid, body))


def _check_queries(conn):
    for q, want in QUERIES:
        assert [r[0] for r in _rows(conn, "SELECT rowid FROM t WHERE t MATCH ? ORDER BY rowid", (q,))] == want, q
    conn.execute("INSERT INTO t(t) VALUES ('integrity-check')")


# ---- APSW ------------------------------------------------------------------------

def test_load_into_apsw_returns_the_connection_and_disables_loading():
    conn = apsw.Connection(":memory:")
    assert not conn.fts5_tokenizer_available("cjk_unicode61")
    assert cjk_tokenizer.load(conn) is conn
    assert conn.fts5_tokenizer_available("cjk_unicode61")
    # extension loading is off again: loading anything now is refused
    with pytest.raises(apsw.Error):
        conn.load_extension(cjk_tokenizer.loadable_path())
    with pytest.raises(apsw.Error):
        conn.execute("SELECT load_extension(?)", (cjk_tokenizer.loadable_path(),)).fetchall()
    _fill(conn)
    _check_queries(conn)
    conn.close()


def test_load_twice_is_harmless():
    conn = apsw.Connection(":memory:")
    cjk_tokenizer.load(conn)
    _fill(conn)
    assert cjk_tokenizer.load(conn) is conn
    _check_queries(conn)
    conn.close()


def test_failed_load_raises_extension_error_and_still_disables_loading(monkeypatch, tmp_path):
    bogus = tmp_path / "not_an_extension.so"
    bogus.write_bytes(b"this is not a shared library")
    monkeypatch.setattr(cjk_tokenizer.loader, "_extension_file", lambda: str(bogus))
    conn = apsw.Connection(":memory:")
    with pytest.raises(ExtensionError) as info:
        cjk_tokenizer.load(conn)
    assert "cjk_unicode61" in str(info.value) and str(info.value).strip()
    assert not conn.fts5_tokenizer_available("cjk_unicode61")
    monkeypatch.undo()
    with pytest.raises(apsw.Error):
        conn.load_extension(cjk_tokenizer.loadable_path())
    conn.close()


def test_missing_compiled_module_is_an_extension_error(monkeypatch):
    monkeypatch.setattr(cjk_tokenizer._native, "module_path", lambda: None)
    with pytest.raises(ExtensionError) as info:
        cjk_tokenizer.load(apsw.Connection(":memory:"))
    assert "missing" in str(info.value)


def test_load_rejects_other_objects():
    with pytest.raises(ExtensionError) as info:
        cjk_tokenizer.load(object())
    assert "apsw.Connection" in str(info.value)
    assert issubclass(ExtensionError, cjk_tokenizer.CjkTokenizerError)


def test_apsw_host_with_fts5_api_v3_and_locales():
    version = tuple(int(x) for x in apsw.sqlite_lib_version().split(".")[:2])
    if version < (3, 47):
        pytest.skip(f"APSW's SQLite {apsw.sqlite_lib_version()} predates fts5 API v3")
    conn = cjk_tokenizer.load(apsw.Connection(":memory:"))
    _fill(conn)
    _check_queries(conn)
    # locale=1 tables hand the locale through fts5_tokenizer_v2; tokens do not change
    conn.execute("CREATE VIRTUAL TABLE l USING fts5(body, tokenize='cjk_unicode61', locale=1)")
    conn.execute("INSERT INTO l(rowid, body) VALUES (1, fts5_locale('ja', '日本語のテキスト'))")
    conn.execute("INSERT INTO l(rowid, body) VALUES (2, fts5_locale('zh', '日本 text'))")
    conn.execute("INSERT INTO l(rowid, body) VALUES (3, '本語')")
    assert [r[0] for r in _rows(conn, "SELECT rowid FROM l WHERE l MATCH '\"本語\"' ORDER BY rowid")] == [1, 3]
    assert [r[0] for r in _rows(conn, "SELECT rowid FROM l WHERE l MATCH fts5_locale('ja', '\"日本\"') ORDER BY rowid")] == [1, 2]
    conn.execute("INSERT INTO l(l) VALUES ('integrity-check')")
    tok = conn.fts5_tokenizer("cjk_unicode61", [])
    plain = tok("日本語".encode(), apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=True, include_colocated=True)
    for locale in ("ja", "zh_CN", ""):
        assert tok("日本語".encode(), apsw.FTS5_TOKENIZE_DOCUMENT, locale,
                   include_offsets=True, include_colocated=True) == plain
    assert plain == [(0, 6, "日本"), (3, 9, "本語", "語")]
    del tok
    conn.close()


# ---- stdlib sqlite3 ----------------------------------------------------------------

def test_stdlib_sqlite3():
    conn = sqlite3.connect(":memory:")
    if not hasattr(conn, "enable_load_extension"):
        if os.environ.get("CJK_REQUIRE_STDLIB_LOAD"):
            pytest.fail("this Python's sqlite3 cannot load extensions (and CJK_REQUIRE_STDLIB_LOAD is set)")
        # e.g. this machine's pyenv Python: a clear, documented error
        with pytest.raises(ExtensionError) as info:
            cjk_tokenizer.load(conn)
        assert "extension loading" in str(info.value)
        return
    assert cjk_tokenizer.load(conn) is conn
    with pytest.raises(sqlite3.OperationalError):  # loading is disabled again
        conn.load_extension(cjk_tokenizer.loadable_path())
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("SELECT load_extension(?)", (cjk_tokenizer.loadable_path(),)).fetchall()
    _fill(conn)
    _check_queries(conn)
    conn.close()


# ---- the command line and the sqlite3 shell ----------------------------------------------

def test_python_m_cjk_tokenizer_path_prints_the_loadable_library():
    proc = subprocess.run([sys.executable, "-m", "cjk_tokenizer", "path"], capture_output=True, text=True,
                          env=_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    path = proc.stdout.strip()
    assert os.path.isfile(path)
    assert os.path.samefile(path, cjk_tokenizer.loadable_path())
    assert os.path.isabs(path)


def _shell():
    if not os.path.exists(SHELL):
        found = shutil.which("sqlite3")
        if found:
            return found
        _skip_or_fail(f"{SHELL} is not installed", "CJK_REQUIRE_ALL_HOSTS")
    return SHELL


def _run_shell(db, *commands):
    return subprocess.run([_shell(), "-bail", "-batch", db, *commands], input="", capture_output=True,
                          text=True, timeout=60)


def test_sqlite3_shell_loads_the_library_and_answers_cjk_match(tmp_path):
    path = cjk_tokenizer.loadable_path()
    script = "\n".join(
        ["CREATE VIRTUAL TABLE t USING fts5(body, tokenize='cjk_unicode61');"]
        + [f"INSERT INTO t(rowid, body) VALUES ({r}, '{b}');" for r, b in DOCS]
        + [f"SELECT 'Q', group_concat(rowid, ',') FROM (SELECT rowid FROM t WHERE t MATCH '{q.replace(chr(39), chr(39) * 2)}' ORDER BY rowid);"
           for q, _ in QUERIES]
        + ["INSERT INTO t(t) VALUES ('integrity-check');", "SELECT 'version', sqlite_version();"]
    )
    proc = subprocess.run([_shell(), "-bail", "-batch", "-cmd", f".load {path}", str(tmp_path / "a.db")],
                          input=script, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    answers = [line.split("|", 1)[1] for line in lines if line.startswith("Q|")]
    assert answers == [",".join(map(str, want)) for _, want in QUERIES]
    assert any(line.startswith("version|") for line in lines)

    # the documented one-liner, sqlite3 a.db ".load $(python -m cjk_tokenizer path)", on that file
    proc = _run_shell(str(tmp_path / "a.db"), f".load {path}",
                      "SELECT rowid FROM t WHERE t MATCH '\"项目\"'")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1"]


def test_index_written_by_one_host_is_read_by_the_other(tmp_path):
    """APSW (fts5 API v3) writes, the sqlite3 shell (API v2) reads and writes, APSW checks."""
    db = str(tmp_path / "x.db")
    conn = cjk_tokenizer.load(apsw.Connection(db))
    _fill(conn)
    conn.close()
    path = cjk_tokenizer.loadable_path()
    proc = _run_shell(db, f".load {path}",
                      "INSERT INTO t(rowid, body) VALUES (7, '東京の天気は晴れ');",
                      "INSERT INTO t(t) VALUES ('integrity-check');",
                      "SELECT rowid FROM t WHERE t MATCH '\"别山\" OR \"天気\"' ORDER BY rowid;")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "7"]
    conn = cjk_tokenizer.load(apsw.Connection(db))
    _check_queries(conn)
    assert [r[0] for r in _rows(conn, "SELECT rowid FROM t WHERE t MATCH '\"晴れ\"'")] == [7]
    conn.close()


def test_sqlite3_shell_reports_bad_tokenizer_arguments(tmp_path):
    path = cjk_tokenizer.loadable_path()
    proc = _run_shell(":memory:", f".load {path}",
                      "CREATE VIRTUAL TABLE t USING fts5(body, tokenize='cjk_unicode61 remove_diacritics 9');")
    assert proc.returncode != 0
    assert "error" in proc.stderr.lower()


# ---- one copy of the code, mapped for the life of the process ----------------------

_MAPPED_SCRIPT = r"""
import apsw, cjk_tokenizer
conn = cjk_tokenizer.load(apsw.Connection(":memory:"))
conn.close()  # SQLite drops its handle on the library; the imported cffi module keeps it mapped
print(sorted({line.split()[-1] for line in open("/proc/self/maps") if "cjk_unicode61" in line}))
"""


def test_load_maps_the_library_the_cffi_module_links_to_and_nothing_twice():
    if sys.platform != "linux":
        pytest.skip("reads /proc/self/maps")
    proc = subprocess.run([sys.executable, "-c", _MAPPED_SCRIPT], capture_output=True, text=True,
                          env=_env(), timeout=60)
    assert proc.returncode == 0, proc.stderr
    mapped = eval(proc.stdout.splitlines()[0])
    assert mapped == sorted([os.path.realpath(cjk_tokenizer.loadable_path()),
                             os.path.realpath(cjk_tokenizer._native.module_path())])


def test_cffi_module_links_to_the_plain_library_instead_of_carrying_the_code():
    if not shutil.which("readelf") or sys.platform != "linux":
        pytest.skip("needs binutils readelf on Linux")
    module = cjk_tokenizer._native.module_path()
    dynamic = subprocess.run(["readelf", "--wide", "-d", module], capture_output=True, text=True).stdout
    assert "[libcjk_unicode61.so]" in dynamic and "RUNPATH" in dynamic and "$ORIGIN" in dynamic
    symbols = subprocess.run(["readelf", "--wide", "--dyn-syms", module], capture_output=True, text=True).stdout
    defined = {f[7] for f in (line.split() for line in symbols.splitlines()) if len(f) >= 8 and f[6] != "UND"}
    assert "sqlite3_cjkunicode_init" not in defined and "cjk_is_cjk" not in defined
    plain = cjk_tokenizer.loadable_path()
    symbols = subprocess.run(["readelf", "--wide", "--dyn-syms", plain], capture_output=True, text=True).stdout
    exported = {f[7] for f in (line.split() for line in symbols.splitlines())
                if len(f) >= 8 and f[6] != "UND" and f[4] == "GLOBAL"}
    # The entry point and the helpers python/build_cffi.py declares; everything else is hidden.
    assert exported == {"sqlite3_cjkunicode_init", "cjk_is_cjk", "cjk_fold_width", "cjk_fold_utf8",
                        "cjk_variant_count", "cjk_variant_pair", "cjk_range_count", "cjk_range_bound",
                        "cjk_check_args", "cjk_classify_utf32", "cjk_version", "cjk_is_extender",
                        "cjk_snippet_work_size", "cjk_snippet_window"}


def test_the_package_imports_where_apsw_is_missing():
    # load() alone works on the stdlib sqlite3: importing the package imported APSW
    code = ("import sys; sys.modules['apsw'] = None\n"
            "import cjk_tokenizer, sqlite3\n"
            "print(cjk_tokenizer.is_cjk('项'), cjk_tokenizer.loadable_path().endswith('.so'))\n"
            "print(cjk_tokenizer.fold('ｶﾞ') == 'ガ')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "True" in proc.stdout and "Traceback" not in proc.stderr


def test_load_takes_subclasses_of_either_connection(tmp_path):
    # it read the class's module, so a factory= connection or a subclass was refused
    class MyApsw(apsw.Connection):
        pass

    conn = cjk_tokenizer.load(MyApsw(":memory:"))
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='cjk_unicode61')")
    conn.execute("INSERT INTO t VALUES ('大别山项目管理')")
    assert conn.execute("SELECT rowid FROM t WHERE t MATCH '\"项目\"'").fetchall() == [(1,)]

    class MyConn(sqlite3.Connection):
        pass

    plain = sqlite3.connect(":memory:", factory=MyConn)
    if not hasattr(plain, "enable_load_extension"):
        with pytest.raises(ExtensionError, match="without extension loading"):  # the documented reason
            cjk_tokenizer.load(plain)
    else:
        assert cjk_tokenizer.load(plain) is plain


def test_the_shell_loads_the_library_from_a_path_with_spaces(tmp_path, sqlite3_shell, monkeypatch):
    # doctor passed the path unquoted: the shell cut it at the first space and doctor said BAD
    import cjk_tokenizer.loader as loader
    from cjk_tokenizer.doctor import host_report

    folder = tmp_path / "dir with spaces" / "中文 路径 \"é\""
    folder.mkdir(parents=True)
    copy = folder / os.path.basename(cjk_tokenizer.loadable_path())
    shutil.copy(cjk_tokenizer.loadable_path(), copy)
    proc = subprocess.run([sqlite3_shell, ":memory:", "-cmd", loader.shell_load(str(copy)),
                           "SELECT count(*) > 0 FROM cjk_version"], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout.strip()) == (0, "1"), proc.stderr
    monkeypatch.setattr(loader, "loadable_path", lambda: str(copy))
    shell_row, = [r for r in host_report() if r[0].startswith("sqlite3 shell")]
    assert shell_row[2] and "loads" in shell_row[1], shell_row


def test_load_leaves_extension_loading_as_the_caller_had_it():
    off = cjk_tokenizer.load(apsw.Connection(":memory:"))
    with pytest.raises(apsw.ExtensionLoadingError):
        off.load_extension(cjk_tokenizer.loadable_path())
    on = apsw.Connection(":memory:")
    on.enable_load_extension(True)
    cjk_tokenizer.load(on)
    on.load_extension(cjk_tokenizer.loadable_path())  # still allowed, as before the call
