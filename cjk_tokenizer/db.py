"""Opening an archive's APSW connection and running write transactions.

Write transactions start with ``BEGIN IMMEDIATE``: a deferred transaction that
reads first and writes later cannot wait for a concurrent writer in WAL mode
(it fails at once with SQLITE_BUSY_SNAPSHOT), while an immediate one waits up
to the busy timeout for the write lock.
"""
from __future__ import annotations

from contextlib import contextmanager

import apsw

SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")


def connect(path: str, *, busy_timeout_ms: int, synchronous: str) -> apsw.Connection:
    """An APSW connection with a busy timeout and foreign keys enforced.

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
    conn = apsw.Connection(str(path))
    try:
        conn.set_busy_timeout(int(busy_timeout_ms))
        conn.execute(f"PRAGMA synchronous={sync}")
        conn.execute("PRAGMA foreign_keys=ON")
    except BaseException:
        conn.close()
        raise
    return conn


def use_wal(conn: apsw.Connection) -> None:
    """Switch the file to WAL: readers and one writer never block each other."""
    mode = str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]).lower()
    if mode != "wal" and conn.filename:  # in-memory databases cannot use WAL
        raise apsw.CantOpenError(f"could not switch {conn.filename} to WAL mode (it stays {mode})")


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
