"""The entry point's failures carry a real message in *pzErrMsg.

A host that lacks what we need is simulated with a fake sqlite3_api_routines
table (ctypes): only the slots the entry point touches are filled, with
Python callbacks, and sqlite3_mprintf comes from a real libsqlite3 so the
message is allocated the way a host frees it.  The table ends where readable
memory ends (a guard page follows it), as long as the host's version says its
table is: a read of a slot an older SQLite does not have faults.  The real hosts (APSW, the
sqlite3 shell, stdlib sqlite3) are covered in test_loading.py/test_hosts.py.
"""
import ctypes
import ctypes.util
import mmap
import re
import sys

import pytest

import cjk_tokenizer

SLOTS = {name: int(i) for name, i in re.findall(
    r"#define CJK_SLOT_(\w+) (\d+)",
    open(__file__.replace("tests/test_entry_point.py", "csrc/cjk_host.h"), encoding="utf-8").read())}

INT_FN = ctypes.CFUNCTYPE(ctypes.c_int)
PREPARE_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                              ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p)
BIND_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                           ctypes.c_void_p)
STMT_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)


# SQLite 3.20 appended sqlite3_bind_pointer and the slots after it; an older
# host's table ends before it.
SLOTS_BEFORE_3_20 = SLOTS["bind_pointer"]
ALL_SLOTS = 300


def _guarded_table(n_slots):
    """A table of n_slots pointers followed by an unreadable page; returns (mapping, table)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the guard page needs mprotect (Linux)")
    page = mmap.PAGESIZE
    mapping = mmap.mmap(-1, 2 * page)
    base = ctypes.addressof(ctypes.c_char.from_buffer(mapping))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    if libc.mprotect(base + page, page, 0) != 0:  # PROT_NONE
        raise OSError(ctypes.get_errno(), "mprotect failed")
    size = n_slots * ctypes.sizeof(ctypes.c_void_p)
    return mapping, (ctypes.c_void_p * n_slots).from_address(base + page - size)


def _libsqlite3():
    name = ctypes.util.find_library("sqlite3")
    if not name:
        pytest.skip("no libsqlite3 to allocate messages with")
    return ctypes.CDLL(name)


class FakeHost:
    """A routines table whose host is `version`, with or without FTS5 (and an fts5_api iVersion)."""

    def __init__(self, version, *, fts5_version=None):
        self.sq = _libsqlite3()
        self.mapping, self.table = _guarded_table(SLOTS_BEFORE_3_20 if version < 3020000 else ALL_SLOTS)
        self.fts5 = (ctypes.c_int * 16)(fts5_version or 0)  # a struct whose first member is iVersion
        self.keep = [
            self._set("libversion_number", INT_FN(lambda: version)),
            self._set("prepare_v2", PREPARE_FN(self._prepare)),
            self._set("bind_pointer", BIND_FN(self._bind)),
            self._set("step", STMT_FN(lambda stmt: 100)),
            self._set("finalize", STMT_FN(lambda stmt: 0)),
        ]
        self.table[SLOTS["mprintf"]] = ctypes.cast(self.sq.sqlite3_mprintf, ctypes.c_void_p).value
        self.has_fts5 = fts5_version is not None

    def _set(self, name, fn):
        if SLOTS[name] < len(self.table):  # an older host has no such slot
            self.table[SLOTS[name]] = ctypes.cast(fn, ctypes.c_void_p).value
        return fn

    def _prepare(self, db, sql, n, pp_stmt, tail):
        if not self.has_fts5:
            return 1  # "no such function: fts5"
        pp_stmt[0] = 1
        return 0

    def _bind(self, stmt, i, ptr, kind, destroy):
        if kind == b"fts5_api_ptr":
            ctypes.cast(ptr, ctypes.POINTER(ctypes.c_void_p))[0] = ctypes.addressof(self.fts5)
        return 0


def _init(host, *, with_errmsg=True):
    lib = ctypes.CDLL(cjk_tokenizer.loadable_path())
    entry = getattr(lib, cjk_tokenizer.ENTRY_POINT)
    entry.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    entry.restype = ctypes.c_int
    err = ctypes.c_void_p()
    rc = entry(ctypes.c_void_p(1), ctypes.byref(err) if with_errmsg else None, ctypes.addressof(host.table))
    message = None
    if err.value:
        message = ctypes.string_at(err.value).decode()
        host.sq.sqlite3_free(err)
    return rc, message


def test_too_old_sqlite_is_named():
    # Only the slots a 3.19 host has may be read to say so.
    rc, message = _init(FakeHost(3019003))
    assert rc == 1
    assert message == "cjk_unicode61 needs SQLite 3.20.0 or later; this host is 3.19.3"


def test_missing_fts5_is_named():
    rc, message = _init(FakeHost(3040001))
    assert rc == 1
    assert "needs FTS5" in message and "3.40.1" in message and "SQLITE_ENABLE_FTS5" in message


def test_too_old_fts5_api_is_named():
    rc, message = _init(FakeHost(3040001, fts5_version=1))
    assert rc == 1
    assert message == "cjk_unicode61 needs fts5_api version 2 or later; this host has 1"


def test_failure_without_an_errmsg_pointer_does_not_crash():
    rc, message = _init(FakeHost(3040001), with_errmsg=False)
    assert rc == 1 and message is None
