"""Loading the extension into a SQLite connection (APSW or stdlib sqlite3).

``load(conn)`` loads the plain library ``loadable_path()``, the same file the
imported cffi module links to (python/cjk_build.py): the library then stays
mapped for the life of the process, so a tokenizer object that outlives its
connection can never call into unmapped code.  Every other host (the
``sqlite3`` shell, say) loads that file too.
"""
from __future__ import annotations

import os
import sys
from typing import TypeVar

from . import _native
from .errors import ExtensionError

ENTRY_POINT = "sqlite3_cjkunicode_init"
TOKENIZER = "cjk_unicode61"
C = TypeVar("C")  # apsw.Connection or sqlite3.Connection: load() returns what it is given


def loadable_path() -> str:
    """Path of the plain loadable library (no Python symbols) for any SQLite host."""
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("libcjk_unicode61.so", "libcjk_unicode61.dylib", "cjk_unicode61.dll"):
        path = os.path.join(here, name)
        if os.path.exists(path):
            return path
    if not _native.available():  # e.g. a source tree that shadows the install: say so
        raise ExtensionError(_native.missing_reason())
    raise ExtensionError(f"the plain loadable library is missing from {here}; reinstall cjk-tokenizer")


def shell_load(path: str) -> str:
    """The sqlite3 shell's command loading ``path``: quoted, so that a path with
    spaces is one argument (the shell splits an unquoted one at the first)."""
    return '.load "' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _extension_file() -> str:
    """The file load() hands SQLite: one the imported cffi module keeps mapped."""
    path = _native.module_path()
    if path is None:
        raise ExtensionError(_native.missing_reason())
    if sys.platform == "win32":  # there the module carries the extension itself
        return path
    return loadable_path()


def _load_apsw(conn, path: str) -> None:
    import apsw

    # the C API's switch only (the SQL function load_extension() stays as it is), and put
    # back as the caller had it: a connection that could load extensions before still can
    flag = apsw.SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION
    was = conn.config(flag, -1)
    conn.config(flag, 1)
    try:
        conn.load_extension(path, ENTRY_POINT)
    except apsw.Error as exc:
        raise ExtensionError(f"SQLite {apsw.sqlite_lib_version()} could not load {TOKENIZER}: {exc}") from exc
    finally:
        conn.config(flag, was)


def _load_stdlib(conn, path: str) -> None:
    import sqlite3

    if not hasattr(conn, "enable_load_extension"):
        raise ExtensionError(
            "this Python's sqlite3 module was built without extension loading "
            "(no Connection.enable_load_extension); use an apsw.Connection instead"
        )
    # Python >= 3.12 can say whether loading was on (then it stays on)
    flag = getattr(sqlite3, "SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION", None)
    was = bool(conn.getconfig(flag)) if flag is not None and hasattr(conn, "getconfig") else False
    conn.enable_load_extension(True)
    try:
        try:  # Python >= 3.12 takes the entry point
            conn.load_extension(path, entrypoint=ENTRY_POINT)
        except TypeError:  # older: SQLite derives sqlite3_cjkunicode_init from the file name
            conn.load_extension(path)
    except sqlite3.Error as exc:
        raise ExtensionError(f"SQLite {sqlite3.sqlite_version} could not load {TOKENIZER}: {exc}") from exc
    finally:
        conn.enable_load_extension(was)


def load(conn: C) -> C:
    """Register ``cjk_unicode61`` and ``cjk_match`` on ``conn`` and return ``conn``.

    ``conn`` is an ``apsw.Connection`` or a ``sqlite3.Connection``.  Extension
    loading is enabled only for the call.  Raises :class:`ExtensionError` with
    the reason when the extension cannot be loaded here.
    """
    path = _extension_file()
    # by class, subclasses included (sqlite3.connect(factory=...), a subclass of
    # apsw.Connection); a module already imported is the only one conn can come from
    apsw, sqlite3 = sys.modules.get("apsw"), sys.modules.get("sqlite3")
    if apsw is not None and isinstance(conn, apsw.Connection):
        _load_apsw(conn, path)
    elif sqlite3 is not None and isinstance(conn, sqlite3.Connection):
        _load_stdlib(conn, path)
    else:
        raise ExtensionError(f"cannot load into a {type(conn).__module__}.{type(conn).__name__}; "
                             "pass an apsw.Connection or a sqlite3.Connection")
    return conn
