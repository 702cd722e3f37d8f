"""Keeping the FTS indexes in step with the messages table.

The states and the invariant they rest on are described in schema.py ("Index
states").  This module moves indexes between them:

* ``reconcile`` (at open, and before the first write of a connection that
  lacks a tokenizer): an index whose tokenizer this connection lacks is
  switched from live to stale — its triggers are replaced by pending triggers
  that never touch the FTS table — and a configured index whose table is
  missing is created empty when the tokenizer is here.
* ``catch_up_steps``: brings a stale/building index to live in chunks, one
  committed transaction each, so a long catch-up holds the write lock only
  briefly, shows progress, and can stop anywhere and resume later.  It first
  replays the backlog (delete what was indexed, insert what is there now),
  then indexes rows above the watermark; the last step switches to live
  triggers in the same transaction that sees nothing left to do.
* ``start_rebuild``: empties an index ('delete-all') and sets it building
  from watermark 0; ``catch_up_steps`` then fills it.
* ``AsideBuild``: an import into an empty index builds it on the second
  core, in a scratch file beside the archive, and copies it in at the end.

``Indexes`` (``archive.indexes``) is the public face of all this for one
archive: status, catch-up, rebuild, adding, pausing and dropping an index,
integrity checks and sizes.
"""
from __future__ import annotations

import os
import queue
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator
from urllib.parse import quote

import apsw

from .db import immediate
from .errors import ArchiveError
from .schema import (
    EXTENSION_ROUTES,
    FTS_COLUMNS,
    FTS_INDEXES,
    MESSAGES,
    REQUIRED_ROUTES,
    fold_variants,
    fts_ddl,
    fts_shadow_tables,
    fts_table,
    live_triggers,
    pending_triggers,
    raise_version,
    schema_version_of,
    trigger_names,
    unigrams_in,
)

_COLS = ", ".join(FTS_COLUMNS)


@dataclass(frozen=True)
class Progress:
    """One committed step of a catch-up or rebuild.

    ``done`` counts rows handled so far in this run, ``behind`` the rows still
    to do after this step (``done + behind`` is the current total; it grows if
    other writers add rows meanwhile; rows others delete meanwhile are counted
    until the end).  ``phase`` is "backlog" (replaying
    changes), "append" (indexing rows above the watermark) or "live" (the
    index is complete and served from now on).
    """

    route: str
    phase: str
    done: int
    behind: int
    indexed_upto: int


def tokenizer_available(route: str, extension_loaded: bool) -> bool:
    return extension_loaded or route not in EXTENSION_ROUTES


def states(conn) -> dict[str, tuple[str, int]]:
    """route -> (status, indexed_upto), for every configured index."""
    return {r: (s, int(w)) for r, s, w in conn.execute("SELECT route, status, indexed_upto FROM index_state")}


def _table_exists(conn, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def _set_state(conn, route: str, status: str, upto: int | None = None) -> None:
    if upto is None:
        conn.execute("UPDATE index_state SET status = ?, updated_at = ? WHERE route = ?", (status, time.time(), route))
    else:
        conn.execute(
            "UPDATE index_state SET status = ?, indexed_upto = ?, updated_at = ? WHERE route = ?",
            (status, int(upto), time.time(), route),
        )


def _max_id(conn) -> int:
    return int(conn.execute(f"SELECT coalesce(max(id), 0) FROM {MESSAGES}").fetchone()[0])


def _wanted_triggers(route: str, status: str) -> tuple[str, ...]:
    if status == "live":
        return live_triggers(route)
    if status in ("stale", "building"):
        return pending_triggers(route)
    return ()  # absent: no table, nothing to keep in step


def _triggers_ok(conn, route: str, status: str) -> bool:
    have = {
        name: sql
        for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN (?, ?, ?)", trigger_names(route)
        )
    }
    want = dict(zip(trigger_names(route), _wanted_triggers(route, status)))
    return have == want


def _set_triggers(conn, route: str, status: str) -> None:
    """Make the route's triggers those its status calls for (inside a transaction)."""
    if _triggers_ok(conn, route, status):
        return  # a schema change invalidates every connection's statements: avoid needless ones
    for name in trigger_names(route):
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    for sql in _wanted_triggers(route, status):
        conn.execute(sql)


# FTS5 settings every new index gets (stored in its %_config table).  A
# hashsize of 16 MiB lets FTS5 gather a whole bulk_import batch in memory
# before writing a segment: fewer, larger segments — a smaller index; build
# time changed less than the machine's noise (bench/bench_fts_settings.py).
FTS_SETTINGS = {"hashsize": 16 * 2**20}


def _new_table(conn, route: str, prefix: bool, unigrams: bool, variants: bool) -> None:
    ddl = fts_ddl(route, prefix=prefix, unigrams=unigrams, fold_variants=variants)
    conn.execute(ddl)
    # in the same transaction: a reader too old for this table refuses the file, never half-opens it
    raise_version(conn, schema_version_of(ddl))
    table = fts_table(route)
    for name, value in FTS_SETTINGS.items():
        conn.execute(f"INSERT INTO {table}({table}, rank) VALUES (?, ?)", (name, value))


def create_index(conn, route: str, *, extension_loaded: bool, empty_table: bool, prefix: bool = False,
                 unigrams: bool = True) -> None:
    """Configure ``route`` on this archive (inside a transaction).

    Without its tokenizer the index is recorded 'absent'.  Otherwise the table
    is created empty: live at once if there are no messages, else building.
    """
    if route not in FTS_INDEXES:
        raise ValueError(f"unknown index {route!r}; known: {', '.join(FTS_INDEXES)}")
    conn.execute(
        "INSERT OR IGNORE INTO index_state(route, status, indexed_upto, updated_at) VALUES (?, 'absent', 0, ?)",
        (route, time.time()),
    )
    if not tokenizer_available(route, extension_loaded):
        return
    table = fts_table(route)
    if _table_exists(conn, table):
        # Whatever it holds is unaccounted for; the watermark below says "nothing".
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('delete-all')")
    else:
        _new_table(conn, route, prefix, unigrams, fold_variants(conn))
    conn.execute("DELETE FROM fts_backlog WHERE route = ?", (route,))
    status = "live" if empty_table else "building"
    _set_state(conn, route, status, 0)
    _set_triggers(conn, route, status)


def drop_index(conn, route: str) -> None:
    """Remove an index and its bookkeeping (inside a transaction)."""
    for name in trigger_names(route):
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    if _table_exists(conn, fts_table(route)):
        conn.execute(f"DROP TABLE {fts_table(route)}")
    conn.execute("DELETE FROM fts_backlog WHERE route = ?", (route,))
    conn.execute("DELETE FROM index_state WHERE route = ?", (route,))


def _needs_change(conn, route: str, status: str, available: bool, demote: bool) -> bool:
    exists = _table_exists(conn, fts_table(route))
    if not available:
        if not exists:
            return status != "absent" or not _triggers_ok(conn, route, "absent")
        if status == "live" and demote:
            return True
        # a live index whose triggers an older release made gets this release's (creating
        # a trigger needs no tokenizer), so a writer with the extension keeps it exact
        return not _triggers_ok(conn, route, status)
    if not exists or status == "absent":
        return True
    return not _triggers_ok(conn, route, status)


def _make_stale(conn, route: str) -> None:
    # Everything up to here is indexed; later rows are simply above the mark.
    _set_state(conn, route, "stale", _max_id(conn))
    _set_triggers(conn, route, "stale")


def pause(conn, route: str) -> bool:
    """Switch a live index to stale (one transaction); False if it was not live.

    Its triggers then never touch the FTS table, so connections without its
    tokenizer can write; ``catch_up_steps`` makes it live again."""
    with immediate(conn):
        if states(conn).get(route, ("absent",))[0] != "live":
            return False
        _make_stale(conn, route)
        return True


def reconcile(conn, *, extension_loaded: bool, prefix: bool = False, demote: bool = True,
              unigrams: bool = True) -> list[str]:
    """Bring every configured index in line with what this connection can do.

    Returns the routes that were switched from live to stale.  Done in one
    write transaction, and only when something has to change: a schema change
    makes every other connection re-prepare its statements.  ``demote=False``
    leaves a live index whose tokenizer is missing here live: a connection
    that only reads does not need its triggers gone, and other processes keep
    being served by it (the archive demotes when it is about to write).
    """
    def todo():
        return [
            (route, status)
            for route, (status, _) in states(conn).items()
            if _needs_change(conn, route, status, tokenizer_available(route, extension_loaded), demote)
        ]

    if not todo():
        return []
    went_stale = []
    with immediate(conn):
        empty = _max_id(conn) == 0
        for route, status in todo():  # again, now that we hold the write lock
            available = tokenizer_available(route, extension_loaded)
            exists = _table_exists(conn, fts_table(route))
            if not available and not exists:
                _set_state(conn, route, "absent", 0)
                _set_triggers(conn, route, "absent")
            elif not available:
                if status == "live" and demote:
                    _make_stale(conn, route)
                    went_stale.append(route)
                else:
                    _set_triggers(conn, route, status)
            elif not exists or status == "absent":
                create_index(conn, route, extension_loaded=extension_loaded, empty_table=empty, prefix=prefix,
                             unigrams=unigrams)
            else:
                _set_triggers(conn, route, status)
    return went_stale


def _count_above(conn, upto: int, cap: int | None) -> int:
    # Counting walks the table's leaf pages from the watermark on; ``cap``
    # bounds that walk when the caller only needs to know "more than cap?".
    if cap is None:
        return int(conn.execute(f"SELECT count(*) FROM {MESSAGES} WHERE id > ?", (upto,)).fetchone()[0])
    sql = f"SELECT count(*) FROM (SELECT 1 FROM {MESSAGES} WHERE id > ? LIMIT ?)"
    return int(conn.execute(sql, (upto, cap + 1)).fetchone()[0])


def behind(conn, route: str, *, cap: int | None = None) -> int:
    """Rows still to (re)index before ``route`` is complete (0 when live).

    With ``cap``, counting stops past ``cap`` rows (the result is then cap + 1
    or more): cheap even when a huge archive is far behind.
    """
    st = states(conn).get(route)
    if st is None or st[0] == "live":
        return 0
    status, upto = st
    if status == "absent":
        return _count_above(conn, 0, cap)
    backlog = conn.execute("SELECT count(*) FROM fts_backlog WHERE route = ?", (route,)).fetchone()[0]
    return int(backlog) + _count_above(conn, upto, cap)


def start_rebuild(conn, route: str, *, prefix: bool = False, unigrams: bool = True) -> None:
    """Empty the index and mark it building from watermark 0 (one transaction).

    An existing table keeps its DDL (and so its tokenizer options)."""
    table = fts_table(route)
    with immediate(conn):
        if not _table_exists(conn, table):
            _new_table(conn, route, prefix, unigrams, fold_variants(conn))
        conn.execute(f"INSERT INTO {table}({table}) VALUES ('delete-all')")
        conn.execute("DELETE FROM fts_backlog WHERE route = ?", (route,))
        _set_state(conn, route, "building", 0)
        _set_triggers(conn, route, "building")


def _replay_backlog(conn, route: str, limit: int) -> int:
    table = fts_table(route)
    # Streamed, not fetched: old values can be large (tool output) and many.
    rows = conn.execute(
        f"SELECT msg_id, indexed, {_COLS} FROM fts_backlog WHERE route = ? ORDER BY msg_id LIMIT ?", (route, limit)
    )
    count, last = 0, None
    for msg_id, indexed, *old in rows:
        if indexed:  # exactly the values the index holds for this rowid
            conn.execute(
                f"INSERT INTO {table}({table}, rowid, {_COLS}) VALUES ('delete', ?, ?, ?, ?, ?)", (msg_id, *old)
            )
        conn.execute(f"INSERT INTO {table}(rowid, {_COLS}) SELECT id, {_COLS} FROM {MESSAGES} WHERE id = ?", (msg_id,))
        count, last = count + 1, msg_id
    if count:
        conn.execute("DELETE FROM fts_backlog WHERE route = ? AND msg_id <= ?", (route, last))
    return count


def _index_above(conn, route: str, upto: int, limit: int) -> tuple[int, int]:
    table = fts_table(route)
    row = conn.execute(f"SELECT id FROM {MESSAGES} WHERE id > ? ORDER BY id LIMIT 1 OFFSET ?", (upto, limit - 1)).fetchone()
    new_upto = int(row[0]) if row else _max_id(conn)
    if new_upto <= upto:
        return 0, upto
    conn.execute(
        f"INSERT INTO {table}(rowid, {_COLS}) SELECT id, {_COLS} FROM {MESSAGES} WHERE id > ? AND id <= ?",
        (upto, new_upto),
    )
    count = conn.execute(f"SELECT count(*) FROM {MESSAGES} WHERE id > ? AND id <= ?", (upto, new_upto)).fetchone()[0]
    return int(count), new_upto


def catch_up_steps(conn, route: str, *, chunk: int = 1000, target_seconds: float | None = 0.25):
    """Bring ``route`` to live, yielding a :class:`Progress` after each committed chunk.

    Stop iterating (or raise, e.g. KeyboardInterrupt) at any point: the work
    committed so far stays, the chunk in flight rolls back, and the next call
    resumes.  Chunks (``chunk`` rows to start with) adapt so each transaction
    takes about ``target_seconds`` (None: every chunk is ``chunk`` rows).
    """
    done = 0
    chunk = max(1, int(chunk))
    # Progress counts rows above the watermark once, then follows along: a
    # count per chunk would re-walk every remaining row each time.
    above = _count_above(conn, states(conn)[route][1], None) if states(conn)[route][0] != "live" else 0
    last_max = _max_id(conn)
    while True:
        t0 = time.monotonic()
        with immediate(conn):
            status, upto = states(conn)[route]
            if status == "live":
                return
            if status == "absent":
                raise ValueError(f"index {route} has no table yet: its tokenizer was never available here")
            n = _replay_backlog(conn, route, chunk)
            phase = "backlog"
            if n == 0:
                phase = "append"
                n, upto = _index_above(conn, route, upto, chunk)
                if n:
                    _set_state(conn, route, status, upto)
            if n == 0:
                # Nothing left and we hold the write lock: switch to live triggers atomically.
                phase = "live"
                _set_state(conn, route, "live", _max_id(conn))
                _set_triggers(conn, route, "live")
        done += n
        elapsed = time.monotonic() - t0
        if target_seconds and n and elapsed > 0:
            chunk = int(min(50_000, max(16, chunk * min(4.0, target_seconds / elapsed))))
        if phase == "append":
            above -= n
        now_max = _max_id(conn)
        above, last_max = above + max(0, now_max - last_max), now_max  # rows other writers appended meanwhile
        if phase == "live":
            left = 0
        else:  # exact unless rows above the watermark were deleted meanwhile (then an overestimate)
            left = conn.execute("SELECT count(*) FROM fts_backlog WHERE route = ?", (route,)).fetchone()[0] + above
        yield Progress(route, phase, done, int(left), upto)
        if phase == "live":
            return


def integrity_check(conn, route: str, status: str) -> str:
    """'ok' or the error FTS5's integrity-check reports for ``route``.

    A live index is also checked against the messages table (rank 1); a stale
    one, which differs from the table by design, only for internal
    consistency (rank 0).
    """
    table = fts_table(route)
    rank = 1 if status == "live" else 0
    try:
        with immediate(conn):
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', ?)", (rank,))
    except apsw.Error as exc:
        return f"{type(exc).__name__}: {exc}"
    return "ok"


def fts_segments(conn, table: str) -> int | None:
    """Segments in the FTS5 index ``table``, read from its structure record, or None if unreadable.

    The record is row 10 of ``<table>_data``: a 4-byte cookie, from SQLite 3.45
    a 4-byte marker ff 00 00 01, then varints nLevel and nSegment (FTS5's
    fts5_index.c describes it).  Each segment costs a query term one lookup."""
    row = conn.execute(f"SELECT block FROM {table}_data WHERE id = 10").fetchone()
    block = row[0] if row else None
    if not isinstance(block, bytes) or len(block) < 6:
        return None
    i = 8 if block[4:8] == b"\xff\x00\x00\x01" else 4
    values = []
    while len(values) < 2:  # nLevel, nSegment: SQLite's big-endian varints, 7 bits a byte, at most 9 bytes
        v = 0
        for k in range(9):
            if i >= len(block):
                return None
            c = block[i]
            i += 1
            if k == 8:
                v = (v << 8) | c
                break
            v = (v << 7) | (c & 0x7F)
            if not c & 0x80:
                break
        values.append(v)
    return values[1]


def index_sizes(conn) -> dict[str, int]:
    """Bytes each existing index occupies on disk (its FTS5 shadow tables)."""
    out = {}
    for route in states(conn):
        tables = [t for t in fts_shadow_tables(route) if _table_exists(conn, t)]
        if not tables:
            continue
        marks = ", ".join("?" for _ in tables)
        # dbstat counts every page of each table's b-tree; with aggregate=1 one row per table.
        size = conn.execute(
            f"SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE aggregate = 1 AND name IN ({marks})", tables
        ).fetchone()[0]
        out[route] = int(size)
    return out


# An import of at least this many bytes of source into an archive whose index
# is empty builds that index aside (AsideBuild).  Around a megabyte, the
# worker's start and the copy cost what the second core saves; a few megabytes
# up, building aside is faster.  The first empty index in ASIDE_ORDER (the
# costliest to build first) is the one built aside.
ASIDE_MIN_BYTES = 4 * 2**20
ASIDE_ORDER = ("trigram", "cjk", "unicode61")
_END, _STOP = "end", "stop"


def _scratch_prefix(path: str, route: str) -> str:
    """Where AsideBuild puts its scratch file for ``route`` of the archive at ``path`` (plus a random tail)."""
    path = os.path.abspath(path)
    return os.path.join(os.path.dirname(path), f"{os.path.basename(path)}-{route}-build-")


def scratch_files(path: str) -> list[str]:
    """Scratch files of index builds beside the archive at ``path``: an import running now, or one
    killed before it could remove its file (those are safe to delete once no import runs)."""
    folder = os.path.dirname(os.path.abspath(path))
    prefixes = [os.path.basename(_scratch_prefix(path, route)) for route in ASIDE_ORDER]
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(os.path.join(folder, n) for n in names if n.startswith(tuple(prefixes)))


def _empty_index(conn, route: str) -> bool:
    """True when ``route``'s index holds nothing, by the states' invariant (schema.py)."""
    status, upto = states(conn).get(route, ("absent", 0))
    if status == "live":
        return _max_id(conn) == 0
    if status not in ("stale", "building") or upto:
        return False
    return conn.execute("SELECT 1 FROM fts_backlog WHERE route = ? LIMIT 1", (route,)).fetchone() is None


class AsideBuild:
    """Build an empty index on the second core while a bulk import writes the messages.

    ``start`` switches the index to building from watermark 0, so the import's
    own inserts skip it, and starts a worker thread with its own connection.
    The worker reads the messages the import has committed (``feed`` says when
    more are), through a read-only attachment of the archive, and indexes them
    into a scratch database beside the archive file.  SQLite runs both connections
    without Python's lock, so this index's build and the import's reading,
    checking and other indexes share two cores instead of queueing on one.

    ``finish`` lets the worker index the rest (and merge, if asked), copies the
    index's shadow tables into the archive in one transaction, and catches up
    whatever lies above the worker's last row, which makes the index live.  The
    copy is exact only if no other connection changed the archive meanwhile (a
    message the worker had read could have changed after): PRAGMA data_version
    tells.  When another connection committed anything, or the worker failed,
    the scratch index is dropped and catch-up builds the index in place, as an
    import without this class would have.  ``abandon`` (the import raised)
    stops the worker and leaves the index building from watermark 0: a later
    catch-up, or the next big import, fills it.  The scratch file is removed in
    every case.
    """

    def __init__(self, archive, route: str, ddl: str, data_version: int, side: str) -> None:
        self._ar, self.route, self._ddl = archive, route, ddl
        self._data_version, self._side = data_version, side
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._worker_conn: apsw.Connection | None = None
        self._stopping = False
        self._optimize = False
        self.upto = 0  # the worker's index holds every message up to this id (at its snapshot)
        self.copied = False  # finish() copied the worker's index in (else catch-up built it in place)
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name=f"cjk_tokenizer {route} index build", daemon=True)
        self._thread.start()

    @classmethod
    def start(cls, archive, source_bytes: int) -> "AsideBuild | None":
        """An AsideBuild for an import of ``source_bytes``, or None where none applies.

        One applies to an archive file (not ``:memory:``) open for writing, for
        the first index in ASIDE_ORDER that is empty and that this host can
        tokenize, when the import brings at least ASIDE_MIN_BYTES.
        """
        if source_bytes < ASIDE_MIN_BYTES or archive.readonly or archive.path == ":memory:":
            return None
        conn = archive.conn
        for route in ASIDE_ORDER:
            if tokenizer_available(route, archive.extension_loaded) and _empty_index(conn, route):
                break
        else:
            return None
        table = fts_table(route)
        prefix = _scratch_prefix(archive.path, route)
        try:  # beside the archive: the index may be as big as a quarter of it, too big for a tmpfs
            fd, side = tempfile.mkstemp(prefix=os.path.basename(prefix), dir=os.path.dirname(prefix))
        except OSError:  # a folder we cannot write in: build in place
            return None
        os.close(fd)
        ddl = None
        try:
            with archive._tx(f"build the {route} index"):
                if _empty_index(conn, route) and _table_exists(conn, table):
                    _set_state(conn, route, "building", 0)
                    _set_triggers(conn, route, "building")
                    ddl = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
        finally:
            if ddl is None:
                os.remove(side)
        if ddl is None:
            return None
        data_version = conn.execute("PRAGMA data_version").fetchone()[0]
        return cls(archive, route, ddl, data_version, side)

    def feed(self) -> None:
        """The import has committed a batch: the worker may index every message now in the table."""
        self._queue.put(_max_id(self._ar.conn))

    def _work(self) -> None:
        try:
            flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE | apsw.SQLITE_OPEN_URI
            conn = self._worker_conn = apsw.Connection(self._side, flags=flags)
            try:
                self._index(conn)
            finally:
                self._worker_conn = None
                conn.close()
        except BaseException as exc:  # finish() builds the index in place instead
            self.error = exc

    def _index(self, conn: apsw.Connection) -> None:
        table = fts_table(self.route)
        conn.set_busy_timeout(10_000)
        conn.execute("PRAGMA journal_mode=OFF")  # a scratch file: a crash leaves nothing worth keeping
        conn.execute("PRAGMA synchronous=OFF")
        if self.route in EXTENSION_ROUTES:
            from .loader import load

            load(conn)
        # Read-only: the archive's one writer here is the import's connection.
        conn.execute("ATTACH ? AS src", ("file:" + quote(os.path.abspath(self._ar.path), safe="/") + "?mode=ro",))
        conn.execute(self._ddl)
        for name, value in conn.execute(f"SELECT k, v FROM src.{table}_config WHERE k <> 'version'").fetchall():
            conn.execute(f"INSERT INTO main.{table}({table}, rank) VALUES (?, ?)", (name, value))
        while True:
            marks = [self._queue.get()]
            while True:  # every mark given meanwhile: one bigger chunk
                try:
                    marks.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            if _STOP in marks or self._stopping:
                return
            upto = max([m for m in marks if m != _END], default=self.upto)
            if upto > self.upto:
                conn.execute("BEGIN")
                conn.execute(f"INSERT INTO main.{table}(rowid, {_COLS}) SELECT id, {_COLS} FROM src.{MESSAGES} "
                             "WHERE id > ? AND id <= ?", (self.upto, upto))
                conn.execute("COMMIT")
                self.upto = upto
            if _END in marks:
                break
        if self._optimize:
            conn.execute(f"INSERT INTO main.{table}({table}) VALUES ('optimize')")

    def close(self, optimize: bool) -> None:
        """No more messages: the worker indexes the rest, then merges its index if ``optimize``."""
        self._optimize = bool(optimize)
        self._queue.put(_END)

    def finish(self) -> str:
        """Wait for the worker, copy its index in (or build in place), make the index live.

        Returns 'merged' when the index ends as one segment, 'built' otherwise."""
        self._thread.join()
        conn = self._ar.conn
        try:
            if self.error is None:
                self.copied = self._copy(conn)
        finally:
            self._remove()
        for _ in catch_up_steps(conn, self.route):  # rows above the copy, or all of them
            pass
        if self._optimize and not self.copied:
            table = fts_table(self.route)
            with immediate(conn):
                conn.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")
        return "merged" if self._optimize else "built"

    def _copy(self, conn: apsw.Connection) -> bool:
        table = fts_table(self.route)
        conn.execute("ATTACH ? AS aside_build", (self._side,))
        try:
            with immediate(conn):
                if (conn.execute("PRAGMA data_version").fetchone()[0] != self._data_version
                        or states(conn).get(self.route) != ("building", 0) or not _empty_index(conn, self.route)):
                    return False
                # A new table object: nothing this connection cached of the empty index survives the copy.
                conn.execute(f"DROP TABLE {table}")
                conn.execute(self._ddl)
                for name in fts_shadow_tables(self.route):
                    conn.execute(f"DELETE FROM main.{name}")
                    conn.execute(f"INSERT INTO main.{name} SELECT * FROM aside_build.{name}")
                _set_state(conn, self.route, "building", self.upto)
                return True
        finally:
            conn.execute("DETACH aside_build")

    def abandon(self) -> None:
        """Stop the worker (the import failed or was interrupted) and remove the scratch file."""
        self._stopping = True
        self._queue.put(_STOP)
        worker = self._worker_conn
        if worker is not None:
            try:
                worker.interrupt()
            except apsw.Error:
                pass
        self._thread.join()
        self._remove()

    def _remove(self) -> None:
        for suffix in ("", "-journal"):
            try:
                os.remove(self._side + suffix)
            except FileNotFoundError:
                pass


def _drive(steps, progress) -> bool:
    """Run ``steps``, calling ``progress`` after each; False if it asked to stop."""
    for p in steps:
        if progress is not None and progress(p) is False:
            return False
    return True


class Indexes:
    """An archive's FTS indexes: which are served, their state, upkeep and upkeep's checks.

    Reached as ``archive.indexes``; it works on the archive's connection under
    the archive's lock, and the methods that write refuse a read-only archive
    (ArchiveError naming the file).  ``prefix`` and ``unigrams`` are the
    options a cjk table gets when one is created here (schema.fts_ddl).
    """

    def __init__(self, archive, *, prefix: bool, unigrams: bool) -> None:
        self._ar = archive
        self._prefix, self._unigrams = prefix, unigrams

    def _available(self, route: str) -> bool:
        return tokenizer_available(route, self._ar.extension_loaded)

    def _create(self, route: str, *, empty_table: bool) -> None:
        """create_index with this archive's options (inside a write transaction)."""
        create_index(self._ar.conn, route, extension_loaded=self._ar.extension_loaded, empty_table=empty_table,
                     prefix=self._prefix, unigrams=self._unigrams)

    def _reconcile(self, *, demote: bool) -> list[str]:
        """reconcile() for what this archive's connection can do (see there)."""
        return reconcile(self._ar.conn, extension_loaded=self._ar.extension_loaded, prefix=self._prefix,
                         demote=demote, unigrams=self._unigrams)

    def live(self) -> set[str]:
        """Routes that may be served now: live, and their tokenizer is registered here."""
        with self._ar._lock:
            return {r for r, (s, _) in states(self._ar.conn).items() if s == "live" and self._available(r)}

    def served(self) -> tuple[set[str], bool]:
        """(``live()``, ``schema.cjk_unigrams()``) from one statement: what a search reads
        before it plans, in one read transaction instead of two."""
        with self._ar._lock:
            rows = self._ar.conn.execute(
                "SELECT NULL, sql FROM sqlite_master WHERE name = ? UNION ALL SELECT route, status FROM index_state",
                (fts_table("cjk"),)).fetchall()
        live = {r for r, s in rows if r is not None and s == "live" and self._available(r)}
        return live, unigrams_in(next((s for r, s in rows if r is None), None))

    def status(self) -> dict[str, dict]:
        """Per configured index: exists, status, served, tokenizer_available, behind (rows to
        index), indexed_upto, backlog."""
        out = {}
        with self._ar._lock:
            conn = self._ar.conn
            for route, (status, upto) in states(conn).items():
                backlog = conn.execute("SELECT count(*) FROM fts_backlog WHERE route = ?", (route,)).fetchone()[0]
                out[route] = {
                    "exists": _table_exists(conn, fts_table(route)),
                    "status": status,
                    "served": status == "live" and self._available(route),
                    "tokenizer_available": self._available(route),
                    "behind": behind(conn, route),
                    "indexed_upto": upto,
                    "backlog": int(backlog),
                }
        return out

    def _catch_up_at_open(self, limit: int) -> None:
        """Catch up when no more than ``limit`` rows are behind (counting stops past it)."""
        conn = self._ar.conn
        late = sum(behind(conn, r, cap=limit) for r, (s, _) in states(conn).items()
                   if s in ("stale", "building") and self._available(r))
        if late <= limit:
            try:
                self.catch_up()
            except apsw.BusyError:
                # another process holds the write lock past busy_timeout: opening is for
                # reading too, which WAL never makes wait; the next open or write catches up
                pass

    def _catchable(self, route) -> list[str]:
        st = states(self._ar.conn)
        if route is not None:
            if route not in st:
                raise ArchiveError(f"the archive has no {route!r} index")
            if not self._available(route):
                raise ArchiveError(f"cannot index {route!r} here: {self._ar.extension_error}")
            return [route]
        return [r for r, (s, _) in st.items() if s in ("stale", "building") and self._available(r)]

    def catch_up_iter(self, route: str | None = None, *, chunk: int = 1000,
                      target_seconds: float | None = 0.25) -> Iterator[Progress]:
        """Yield a :class:`Progress` after each committed chunk of catch-up work.

        Covers ``route`` or every stale/building index this host can tokenize.
        Stop iterating whenever you like: finished chunks stay, and the next
        call resumes.  Each chunk starts at ``chunk`` rows and adapts to take
        about ``target_seconds`` (None keeps it fixed).  Not to be shared
        between threads while running.
        """
        self._ar._check_writable("update indexes")
        for r in self._catchable(route):
            yield from catch_up_steps(self._ar.conn, r, chunk=chunk, target_seconds=target_seconds)

    def catch_up(self, progress: Callable[[Progress], bool | None] | None = None, *, route: str | None = None,
                 chunk: int = 1000, target_seconds: float | None = 0.25) -> bool:
        """Bring stale/building indexes up to date incrementally, in committed chunks.

        ``progress(Progress)`` is called after each chunk; returning False stops
        (resume with another call).  KeyboardInterrupt is safe too.  Returns True
        when every index this host can tokenize is live.
        """
        with self._ar._lock:
            if not _drive(self.catch_up_iter(route, chunk=chunk, target_seconds=target_seconds), progress):
                return False
            return all(s == "live" for r, (s, _) in states(self._ar.conn).items() if self._available(r))

    def rebuild(self, route: str | None = None, progress: Callable[[Progress], bool | None] | None = None, *,
                restart: bool = False, chunk: int = 1000, target_seconds: float | None = 0.25) -> bool:
        """Rebuild ``route`` (or every index this host can tokenize) from the table, in chunks.

        An index already 'building' (an interrupted rebuild, a new index)
        continues where it stopped unless ``restart=True``.  Progress and
        stopping work as in :meth:`catch_up`.
        """
        self._ar._check_writable("rebuild indexes")
        with self._ar._lock:
            conn = self._ar.conn
            st = states(conn)
            routes = [route] if route is not None else [r for r in st if self._available(r)]
            for r in routes:
                self._catchable(r)  # checks it exists and can be tokenized here
                if restart or st[r][0] != "building":
                    start_rebuild(conn, r, prefix=self._prefix, unigrams=self._unigrams)
            for r in routes:
                if not _drive(catch_up_steps(conn, r, chunk=chunk, target_seconds=target_seconds), progress):
                    return False
            return True

    def add(self, route: str) -> None:
        """Add an index to the archive; it is filled by catch_up()/rebuild() (or auto_catch_up at open)."""
        if route not in FTS_INDEXES:
            raise ValueError(f"unknown index {route!r}; known: {', '.join(FTS_INDEXES)}")
        with self._ar._lock, self._ar._tx(f"add the {route} index"):
            if route not in states(self._ar.conn):
                self._create(route, empty_table=_max_id(self._ar.conn) == 0)

    def pause(self, route: str = "cjk") -> bool:
        """Mark a live index stale so writers without its tokenizer can write.

        A connection that lacks the tokenizer (the sqlite3 shell or stdlib
        sqlite3 without the extension loaded) cannot write messages while the
        index is live: its triggers fail with "no such tokenizer".  Paused,
        the index records changes instead and is not served; ``catch_up()``
        (or auto_catch_up when an archive with the extension opens) resumes
        it.  Returns False if it was not live.  Works with or without the
        extension here.
        """
        with self._ar._lock:
            if route not in states(self._ar.conn):
                raise ArchiveError(f"the archive has no {route!r} index")
            self._ar._check_writable(f"pause the {route} index")
            return pause(self._ar.conn, route)

    def drop(self, route: str) -> None:
        """Remove an index (not unicode61, which every archive needs).  Messages are untouched."""
        if route not in FTS_INDEXES:
            raise ValueError(f"unknown index {route!r}; known: {', '.join(FTS_INDEXES)}")
        if route in REQUIRED_ROUTES:
            raise ArchiveError(f"the {route} index is required and cannot be dropped")
        with self._ar._lock:
            if route not in states(self._ar.conn):
                return
            # an index that never had a table here (absent) needs no tokenizer to go
            if not self._available(route) and _table_exists(self._ar.conn, fts_table(route)):
                raise ArchiveError(f"cannot drop the {route} index here: its tokenizer is missing "
                                   f"({self._ar.extension_error})")
            with self._ar._tx(f"drop the {route} index"):
                drop_index(self._ar.conn, route)

    def optimize(self, route: str | None = None) -> dict[str, str]:
        """Merge each live index (or only ``route``) into one segment: FTS5's 'optimize'.

        FTS5 writes an index as a stack of segments that it merges now and
        then, and looks every query term up in each segment; a big archive
        carries a dozen or more, so a term's lookup costs a dozen b-tree
        descents where one would do.  Worth running after a large import: the
        rare words and needles of a search, whose cost is their lookups, get
        faster; frequent words, whose cost is their rows, do not.  A
        maintenance call: it holds the write lock while it rewrites the index,
        and the write-ahead log grows by up to the index's size until the next
        checkpoint.  Appends start new segments again.

        Returns 'merged' or 'skipped: …' per index.  An index that is not
        live is skipped (catch_up() first); a read-only archive is an error.
        """
        self._ar._check_writable("optimize indexes")
        out = {}
        with self._ar._lock:
            conn = self._ar.conn
            st = states(conn)
            if route is not None and route not in st:
                raise ArchiveError(f"the archive has no {route!r} index")
            for r, (status, _) in st.items():
                if route is not None and r != route:
                    continue
                if status != "live":
                    out[r] = f"skipped: {status}, not live (catch_up() first)"
                elif not self._available(r):
                    out[r] = f"skipped: tokenizer unavailable ({self._ar.extension_error})"
                else:
                    t = fts_table(r)
                    with self._ar._tx(f"optimize the {r} index"):
                        conn.execute(f"INSERT INTO {t}({t}) VALUES ('optimize')")
                    out[r] = "merged"
        return out

    def integrity_check(self) -> dict[str, str]:
        """'ok', an error, or 'skipped: …' per index, plus 'database' (PRAGMA quick_check).

        FTS5's check reads the whole index and holds the write lock meanwhile:
        a maintenance call, not a health probe for every open."""
        out = {}
        with self._ar._lock:
            conn = self._ar.conn
            for route, (status, _) in states(conn).items():
                if status == "absent":
                    out[route] = "skipped: no table"
                elif not self._available(route):
                    out[route] = f"skipped: tokenizer unavailable ({self._ar.extension_error})"
                elif self._ar.readonly:  # FTS5 runs its check as a write statement
                    out[route] = "skipped: the archive is open read-only"
                else:
                    out[route] = integrity_check(conn, route, status)
            try:
                rows = [r[0] for r in conn.execute("PRAGMA quick_check")]
                out["database"] = "ok" if rows == ["ok"] else "; ".join(map(str, rows))
            except apsw.Error as exc:
                out["database"] = f"{type(exc).__name__}: {exc}"
        return out

    def segments(self) -> dict[str, int | None]:
        """Segments per existing index: FTS5 looks every query term up in each (optimize() makes it 1)."""
        with self._ar._lock:
            conn = self._ar.conn
            return {route: fts_segments(conn, fts_table(route)) for route in states(conn)
                    if _table_exists(conn, f"{fts_table(route)}_data")}

    def sizes(self) -> dict[str, int]:
        """Bytes on disk per existing index (FTS5 shadow tables), plus 'text': bytes of indexed text."""
        with self._ar._lock:
            conn = self._ar.conn
            sizes = index_sizes(conn)
            cols = " + ".join(f"coalesce(octet_length({c}), 0)" for c in FTS_COLUMNS)
            sizes["text"] = int(conn.execute(f"SELECT coalesce(sum({cols}), 0) FROM {MESSAGES}").fetchone()[0])
        return sizes
