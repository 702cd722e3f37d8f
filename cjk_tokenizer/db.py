"""Opening an archive's APSW connection and running write transactions.

Write transactions start with ``BEGIN IMMEDIATE``: a deferred transaction that
reads first and writes later cannot wait for a concurrent writer in WAL mode
(it fails at once with SQLITE_BUSY_SNAPSHOT), while an immediate one waits up
to the busy timeout for the write lock.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from urllib.parse import quote

import apsw

from .constants import MMAP_SIZE
from .errors import shown

SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


def check_mmap_size(mmap_size) -> int:
    """``mmap_size`` as an int >= 0, else a ValueError naming it."""
    if type(mmap_size) is not int or not 0 <= mmap_size < 2**63:
        raise ValueError(f"mmap_size must be a whole number of bytes >= 0 (0: no memory map) and below 2^63, "
                         f"not {shown(mmap_size)}")
    return mmap_size


def connect(path: str, *, busy_timeout_ms: int, synchronous: str, readonly: bool = False,
            mmap_size: int = MMAP_SIZE) -> apsw.Connection:
    """An APSW connection with a busy timeout and foreign keys enforced,
    reading up to ``mmap_size`` bytes of the file through a memory map.

    ``readonly=True`` gives ``connect_readonly(path)`` instead.

    WAL is switched on separately (``use_wal``), once the caller knows the
    file is an archive: the journal mode is a persistent property of the
    file, and a database that is not ours must be left as it was.

    ``synchronous="NORMAL"`` (the default at the Archive level) keeps every
    committed transaction across a crash of the process; only a power loss or
    OS crash can take back the last few.  "FULL" closes that gap at the cost of
    an fsync per commit.
    """
    sync = str(synchronous).upper()
    if sync not in SYNCHRONOUS:
        raise ValueError(f"synchronous must be one of {', '.join(SYNCHRONOUS)}, not {synchronous!r}")
    if readonly:
        return connect_readonly(path, busy_timeout_ms=busy_timeout_ms, mmap_size=mmap_size)
    conn = apsw.Connection(str(path))
    try:
        conn.set_busy_timeout(int(busy_timeout_ms))
        conn.execute(f"PRAGMA mmap_size={check_mmap_size(mmap_size)}")
        conn.execute(f"PRAGMA synchronous={sync}")
        conn.execute("PRAGMA foreign_keys=ON")
    except BaseException:
        conn.close()
        raise
    return conn


def connect_readonly(path: str, *, busy_timeout_ms: int, mmap_size: int = MMAP_SIZE) -> apsw.Connection:
    """A connection that cannot write: SQLite's URI ``mode=ro``, no PRAGMA that writes
    (``mmap_size`` as in ``connect``: it sets how this connection reads).

    A WAL file needs its ``-shm`` index; in a folder where SQLite cannot make
    one (a read-only mount or folder, the archive closed cleanly), ``mode=ro``
    cannot open it, and the file is opened with ``immutable=1``: SQLite then
    reads it without any locking, so a change another process makes while
    this connection is open is not seen (or may be misread).  A reader of a
    folder nobody may write in has no such writer, nor has a file nobody may
    write (``_nobody_writes``), which is read that way first.
    """
    uri = "file:" + quote(os.path.abspath(path), safe="/")
    flags = apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    folder = os.path.dirname(os.path.abspath(path))
    tries = ["?mode=ro", "?mode=ro&immutable=1"]
    if _nobody_writes(path):  # a -wal/-shm that mode=ro made here would be read-only too, of no use to a writer
        tries.reverse()
    for params in tries:
        if "immutable" in params and _has_wal(path):
            # immutable=1 reads the main file alone: the commits still in the WAL would be
            # missing without a word, and SQLite itself refuses such a file
            raise apsw.CantOpenError(
                f"{path} has a write-ahead log ({os.path.basename(path)}-wal) that SQLite can read only "
                f"beside its -shm index, which it cannot create in {folder}: open it where it was written "
                "(or copy the archive with its -wal to a writable folder) so that the log is read, "
                "or checkpoint it there")
        conn = apsw.Connection(uri + params, flags=flags)
        try:
            conn.set_busy_timeout(int(busy_timeout_ms))
            conn.execute(f"PRAGMA mmap_size={check_mmap_size(mmap_size)}")
            conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()  # opening is lazy: read now
            return conn
        except (apsw.CantOpenError, apsw.ReadOnlyError):  # ReadOnly: a folder SQLite may not write in
            conn.close()
            if params == tries[-1] or ("immutable" not in params and os.access(folder, os.W_OK)):
                raise  # not the -shm case: a real failure
        except BaseException:
            conn.close()
            raise
    raise apsw.CantOpenError("unable to open database file (read-only, even as immutable)")


def _has_wal(path: str) -> bool:
    """Is there a ``-wal`` beside the file holding commits (a clean close leaves none, or an empty one)?"""
    try:
        return os.path.getsize(path + "-wal") > 0
    except OSError:
        return False


def _nobody_writes(path: str) -> bool:
    """A file no one may write (no write bit at all: chmod 0444) and without a
    ``-wal`` beside it: nothing can change it while it is read, so it is read
    with ``immutable=1`` and no ``-wal``/``-shm`` is left beside it (made
    read-only like the file, they would break the owner's next write)."""
    try:
        return os.stat(path).st_mode & 0o222 == 0 and not os.path.exists(path + "-wal")
    except OSError:
        return False


def use_wal(conn: apsw.Connection) -> None:
    """Switch the file to WAL: readers and one writer never block each other."""
    mode = str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()
    if mode != "wal" and conn.filename:  # in-memory databases cannot use WAL
        raise apsw.CantOpenError(f"could not switch {conn.filename} to WAL mode (it stays {mode})")


@contextmanager
def snapshot(conn: apsw.Connection):
    """One read transaction around several statements, so that they all see the
    archive as one commit left it (WAL); joins the caller's if one is open.

    A search reads which indexes are live, then reads those indexes: another
    process's rebuild that empties an index and marks it building in one
    commit must be seen whole or not at all."""
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")  # it only read: ending it is all COMMIT does


@contextmanager
def immediate(conn: apsw.Connection):
    """One write transaction; joins the caller's if one is already open.

    Any exception (KeyboardInterrupt included) rolls the transaction back, so
    an interrupted chunk of work leaves no trace.
    """
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")
