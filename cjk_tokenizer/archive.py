"""``Archive``: a conversation history in one SQLite file, searchable at index speed.

Storage, index upkeep and read accessors live here; the query language and
routing live in search.py, which ``Archive.search`` delegates to.

    with Archive("history.db") as ar:
        sid = ar.add_session(title="deploy")
        ar.add_message(sid, "user", "部署失败了，怎么回滚？")
        ar.add_openai_message(sid, {"role": "assistant", "content": "...", "reasoning_content": "..."})

Decisions callers rely on:

* Session ids are strings (a uuid4 when none is given).  ``add_message`` and
  friends create a missing session on the fly (with ``started_at`` = the
  message's time), so an agent can append without a setup call;
  ``add_session`` refuses an id that already exists.
* Message ids are integers that grow with every append and are never reused.
* Input is validated before anything is written (records.py): a bad value
  raises :class:`InputError` and writes nothing of that call.
* ``extension=True`` loads cjk_unicode61 if this host can; if it cannot (or
  with ``extension=False``) the archive works exactly as on such a host: the
  cjk index, if the archive has one, is not served here; it stays live for
  other processes until this one first writes a message, when it goes stale
  (its triggers would need the tokenizer); writes go on, and the index
  catches up incrementally once the extension is back (``auto_catch_up`` at
  open when the backlog is small, else ``indexes.catch_up()``).
* ``fold_variants=True`` creates an archive whose cjk index (and every
  route without it) folds Han variants: Traditional and Simplified spellings
  of a character compare equal (項目 = 项目; see the README for what that costs
  in precision).  Recorded in the archive: reopening reads it (None, the
  default), an explicit value that differs raises ArchiveError, and archives
  created without it are unchanged.
* ``cjk_unigrams`` (default True): a newly created cjk index gets the
  tokenizer option ``unigrams 1`` (schema.CJK_UNIGRAMS): one CJK character
  is then one doclist lookup, not a prefix query over every bigram starting
  with it.  An existing cjk table keeps its DDL, so an archive created
  without it is tokenized as before; search asks the DDL which it is.
* ``cjk_prefix=True`` adds FTS5's ``prefix='1'`` to a newly created cjk index
  (see ``schema.fts_ddl``), for other tools' raw ``"X"*`` queries; search
  reads one character as its unigram (``cjk_unigrams``) and does not use it,
  so it only adds size.  Off by default.
* ``indexes``: for a new archive the routes to build (default: cjk and
  unicode61; trigram is opt-in; unicode61 is required).  For an existing archive None
  means "as configured"; a given set adds missing indexes (filled by
  catch-up) and refuses to silently drop existing ones — use
  ``archive.indexes.drop(route)``.
* ``bulk_import`` commits one transaction per batch and inserts each batch
  with a single statement (see ``_stage``); a crash loses at most the batch
  in flight, never half of one.
* ``archive.indexes`` (indexing.Indexes) administers the FTS indexes:
  ``status()``, ``live()``, ``catch_up()``, ``rebuild()``, ``add()``,
  ``pause()``, ``drop()``, ``integrity_check()`` and ``sizes()``.
* Archives record the schema version their tables need (schema.py): one
  created with ``cjk_unigrams`` or ``fold_variants`` is version 2, which an
  older release refuses with a one-line error; this release opens 1 and 2.
* An ``Archive`` may be shared between threads (calls are serialized by a
  lock); for parallel reads open one ``Archive`` per thread.
"""
from __future__ import annotations

import json
import os
import threading
import uuid
import warnings
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Iterator, Literal

import apsw

from . import indexing, records
from .constants import MMAP_SIZE
from .db import check_mmap_size, connect, immediate, snapshot, use_wal
from .errors import ArchiveError, ExtensionError, shown
from .indexing import Indexes
from .loader import load
from .records import MESSAGE_COLUMNS, InputError, MessageRow

if TYPE_CHECKING:
    from .importers.driver import ImportReport
    from .search import Hits
from .schema import (
    ADOPT_SESSIONLESS,
    BASE_DDL,
    BASE_VERSION,
    DEFAULT_ROUTES,
    FTS_INDEXES,
    READABLE_VERSIONS,
    REPLACED_DDL,
    REQUIRED_ROUTES,
    SESSION_TRIGGER_NAMES,
    SESSION_TRIGGERS,
    raise_version,
    record_fold_variants,
    schema_version_of,
    session_triggers_stale,
    user_version,
)
from .schema import fold_variants as fold_variants_of
from .search import SNIPPET_CHARS
from .timeutil import TimeValue

__all__ = ["Archive", "ArchiveError", "InputError", "Progress"]

Progress = indexing.Progress

_UNSET = object()
# bulk_import commits early when a batch holds this much text, so a run of huge
# tool outputs does not pile up in memory (and in one transaction).
BULK_BATCH_CHARS = 64 * 2**20
_COLS = ", ".join(MESSAGE_COLUMNS)
_INSERT_MSG = f"INSERT INTO messages({_COLS}) VALUES ({', '.join('?' for _ in MESSAGE_COLUMNS)})"
# Read back as records.stored_text/stored_time read them: a row another tool wrote
# may hold text that is not UTF-8, a BLOB, or a time that is not a number.
_TIMES = ("timestamp", "started_at", "last_active")
_NUMBERS = (*_TIMES, "message_count")


def _read_sql(column: str) -> str:
    return records.read_number_sql(column) if column in _NUMBERS else records.read_sql(column)


_MSG_COLS = ", ".join(["id", *map(_read_sql, MESSAGE_COLUMNS)])
_SESSION_KEYS = ("id", "title", "source", "started_at", "metadata", "message_count", "last_active")
_SESSION_COLS = ", ".join(map(_read_sql, _SESSION_KEYS))


def _maybe_json(value):
    """Parse JSON text as the archive writes it (records.json_text of a list or
    dict); anything else comes back as stored.

    Text given as text (``tool_calls='{"q":"\\u90e8"}'``, another tool's row)
    stays text, spacing, escapes, number spellings and repeated keys included:
    parsed, it would read, and export, as other text.  A row written by another
    tool may hold JSON no archive write accepts (too deep to parse, NaN, huge):
    that text too comes back as stored, so one record never breaks a read."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            parsed = records.load_json(value)
        except InputError:
            return value
        if json.dumps(parsed, ensure_ascii=False) == value:
            return parsed
    return value


def _time_key(column: str) -> str:
    """SQL ordering by a time column, what is not a number within ±MAX_STORED_TIME (text
    compares above every number) as NULL: records.stored_time."""
    bound = records.MAX_STORED_TIME
    return f"CASE WHEN {column} BETWEEN {-bound!r} AND {bound!r} THEN {column} END"


def _read(keys, row) -> dict:
    return {k: records.stored_time(v) if k in _NUMBERS else records.stored_text(v) for k, v in zip(keys, row)}


def _message(row) -> dict:
    out = _read(("id", *MESSAGE_COLUMNS), row)
    out["tool_calls"] = _maybe_json(out["tool_calls"])
    out["metadata"] = _maybe_json(out["metadata"]) or {}
    return out


def _session(row) -> dict:
    out = _read(_SESSION_KEYS, row)
    out["metadata"] = _maybe_json(out["metadata"]) or {}
    return out


def _row_count(name: str, value) -> int:
    """A limit or offset of rows (an int >= 0) as SQLite binds it: past 2^63-1 every row is the same."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, not {shown(value)}")
    return min(value, 2**63 - 1)


def _no_such_id(session_id) -> bool:
    """A session id no row can have: a str SQLite cannot be given (a lone surrogate)."""
    if not isinstance(session_id, str):
        return False
    try:
        session_id.encode("utf-8")
        return False
    except UnicodeEncodeError:
        return True


def _check_path(path) -> str:
    """``path`` as a file name: a str or os.PathLike naming a file, or ":memory:"."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike naming the archive file (or ':memory:'), "
                        f"not {type(path).__name__}")
    name = os.fspath(path)
    if not isinstance(name, str):
        raise TypeError(f"path must name the file as text, not {type(name).__name__}")
    if not name:
        raise ValueError("path is empty; name the archive file (or ':memory:')")
    if name.startswith("file:") and not os.path.exists(name):  # a URI would become a file named like it
        raise ValueError(f"path {name[:80]!r} looks like an SQLite URI; name the file itself "
                         "(readonly=True opens it read-only)")
    return name


def _writable(path: str) -> bool:
    """Whether SQLite can write ``path``: the file and its folder (for -wal/-shm files)."""
    folder = os.path.dirname(os.path.abspath(path))
    return os.access(path, os.W_OK) and os.access(folder, os.W_OK)


def _busy_ms(seconds: float) -> int:
    """busy_timeout in SQLite's unit (milliseconds, a C int): longer waits, infinity
    included, are its longest, about 24.8 days."""
    return 2**31 - 1 if seconds * 1000 >= 2**31 - 1 else int(seconds * 1000)


def _check_routes(indexes) -> tuple[str, ...]:
    if isinstance(indexes, str):
        raise ValueError(f"indexes must be a collection of route names, e.g. ({indexes!r},)")
    routes = tuple(dict.fromkeys(indexes))
    unknown = [r for r in routes if r not in FTS_INDEXES]
    if unknown:
        raise ValueError(f"unknown index {unknown[0]!r}; known: {', '.join(FTS_INDEXES)}")
    missing = REQUIRED_ROUTES.difference(routes)
    if missing:
        raise ValueError(f"indexes must include {', '.join(sorted(missing))} (the word route every query can use)")
    return routes


class Archive:
    """A session archive in the SQLite file ``path`` (see the module doc).

    path           a str or os.PathLike naming the file, or ":memory:";
                   anything else is a TypeError (never a file named after it).
    readonly       True: open with SQLite's read-only URI mode; nothing is
                   ever written (no PRAGMA that writes, no catch-up, no
                   schema), the file must already be an archive, and every
                   write method raises ArchiveError naming the path.  None
                   (default): read-write, unless the file or its folder cannot
                   be written (then as True; ``readonly`` tells which).
                   False: read-write or an error.
    create         False: refuse a file that is not yet an archive (missing,
                   an empty or 0-byte database) instead of making it one.
    extension      load cjk_unicode61 if this host can (a RuntimeWarning and
                   ``extension_error`` say why not); False acts as a host that
                   cannot.
    indexes        routes to build for a new archive / to add to an existing
                   one (see the module doc); None: default or as configured.
    busy_timeout   seconds to wait for another writer's lock; past SQLite's longest wait
                   (2^31-1 ms, about 24.8 days), ``float("inf")`` included, that longest.
    synchronous    SQLite's PRAGMA synchronous (see db.connect).
    auto_catch_up  at open, bring stale/new indexes up to date if no more
                   than this many rows are behind (0: never; then call
                   indexes.catch_up()).  Larger backlogs are left for an
                   explicit, chunked catch-up so opening never blocks for long.
    fold_variants  fold Han variants (項目 = 项目) in a new archive; None: as
                   recorded (off for a new one).  ``self.fold_variants`` says.
    mmap_size      bytes of the file SQLite reads through a memory map
                   (PRAGMA mmap_size; default constants.MMAP_SIZE, 16 GiB): a LIKE
                   scan then reads pages without a system call and a copy
                   each.  0 reads without a map: for a file on a network or
                   removable drive, where a read error in a mapped page stops
                   the process (SIGBUS) instead of raising an error.

    ``self.indexes`` (indexing.Indexes) administers the FTS indexes: status,
    catch-up, rebuild, add/pause/drop, integrity check, sizes.
    """

    def __init__(self, path: str | os.PathLike, *, readonly: bool | None = None, create: bool = True,
                 extension: bool = True, indexes: Iterable[str] | None = None, busy_timeout: float = 10.0,
                 synchronous: str = "NORMAL", auto_catch_up: int = 10_000, cjk_prefix: bool = False,
                 fold_variants: bool | None = None, cjk_unigrams: bool = True, mmap_size: int = MMAP_SIZE) -> None:
        self.path = _check_path(path)
        check_mmap_size(mmap_size)
        if readonly is not None and not isinstance(readonly, bool):
            raise TypeError(f"readonly must be True, False or None, not {readonly!r}")
        if fold_variants is not None and not isinstance(fold_variants, bool):
            raise ValueError(f"fold_variants must be True, False or None, not {fold_variants!r}")
        self._fold_variants_arg = fold_variants
        # every argument is checked before the file is touched: a bad one leaves no file behind
        routes = None if indexes is None else _check_routes(indexes)
        for name, value in (("busy_timeout", busy_timeout), ("auto_catch_up", auto_catch_up)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValueError(f"{name} must be a number >= 0, not {shown(value)}")
        self.fold_variants = False
        self._lock = threading.RLock()
        self._reading = 0  # depth of reading() blocks (_check_writable)
        # cjk_prefix and cjk_unigrams are used when a cjk table is created (schema.fts_ddl)
        self.indexes = Indexes(self, prefix=bool(cjk_prefix), unigrams=bool(cjk_unigrams))
        self._conn = None
        if os.path.isdir(self.path):
            raise ArchiveError(f"{self.path} is a directory, not an archive file")
        exists = self.path != ":memory:" and os.path.exists(self.path)
        if readonly and not exists:
            raise ArchiveError(f"{self.path}: no such archive (opening read-only never creates one)")
        if not create and not exists:
            raise ArchiveError(f"{self.path}: no such archive (this call does not create archives)")
        auto = readonly is None
        self._readonly_why = "opened with readonly=True" if readonly else "the file or its folder is not writable"
        if auto:
            readonly = exists and not _writable(self.path)
        options = dict(create=create, extension=extension, indexes=routes, busy_timeout=busy_timeout,
                       synchronous=synchronous, auto_catch_up=auto_catch_up, mmap_size=mmap_size)
        try:
            self._open(readonly, **options)
        except (apsw.ReadOnlyError, apsw.CantOpenError) as exc:
            # Writing turned out impossible (a read-only mount, a folder where
            # SQLite cannot make its -wal file): in auto mode, read instead.
            if not (auto and not readonly and exists):
                raise ArchiveError(f"{self.path}: {exc}") from None
            try:
                self._open(True, **options)
            except (apsw.ReadOnlyError, apsw.CantOpenError) as again:
                raise ArchiveError(f"{self.path}: {again}") from None

    def _open(self, readonly: bool, *, create, extension, indexes, busy_timeout, synchronous, auto_catch_up,
              mmap_size):
        """Open the connection and bring the file to a usable state (writing only if not ``readonly``)."""
        self.readonly = readonly
        try:
            self._conn = connect(self.path, busy_timeout_ms=_busy_ms(busy_timeout), synchronous=synchronous,
                                 readonly=readonly, mmap_size=mmap_size)
        except apsw.NotADBError:
            raise ArchiveError(f"{self.path} is not a SQLite database") from None
        self.extension_loaded = False
        self.extension_error: str | None = "not requested (extension=False)"
        try:
            try:
                self._check_file()
            except apsw.NotADBError:
                raise ArchiveError(f"{self.path} is not a SQLite database") from None
            if (readonly or not create) and user_version(self._conn) == 0:
                why = "it was opened read-only" if readonly else "this call does not create archives"
                raise ArchiveError(f"{self.path} is not a cjk_tokenizer archive (an empty database); "
                                   f"left as it is: {why}")
            if not readonly:
                use_wal(self._conn)
            if extension:
                try:
                    load(self._conn)
                    self.extension_loaded, self.extension_error = True, None
                except ExtensionError as exc:
                    self.extension_error = str(exc)
                    warnings.warn(f"cjk_tokenizer: working without the cjk index: {exc}", RuntimeWarning, 4)
            if user_version(self._conn) != 0:  # before anything is written: a refused open changes nothing
                self.fold_variants = fold_variants_of(self._conn)
                if self._fold_variants_arg is not None and self._fold_variants_arg != self.fold_variants:
                    raise ArchiveError(f"{self.path} was created with fold_variants={self.fold_variants}; the "
                                       "setting is fixed when an archive is created (open it with fold_variants=None; "
                                       "the import command: leave out --fold-variants)")
            if readonly:
                if indexes is not None and set(indexes) - set(indexing.states(self._conn)):
                    raise ValueError("indexes= adds indexes, which a read-only archive cannot; leave it out")
                # indexes this host cannot serve are left as they are and not served (live_indexes)
                return
            self._open_schema(indexes)
            self.fold_variants = fold_variants_of(self._conn)
            # A live index this host cannot tokenize stays live while we only
            # read (others keep being served by it); _write demotes it.
            self.indexes._reconcile(demote=False)
            if auto_catch_up:
                self.indexes._catch_up_at_open(auto_catch_up)
        except BaseException:
            self._conn.close()
            self._conn = None
            raise

    def _tx(self, what: str):
        """A write transaction (db.immediate), or a clear error on a read-only archive."""
        self._check_writable(what)
        return immediate(self._conn)

    def _check_writable(self, what: str) -> None:
        if self.readonly:
            raise ArchiveError(f"{self.path} is open read-only ({self._readonly_why}): cannot {what}")
        if self._reading:
            # its snapshot cannot become a write once another process has committed (SQLite
            # answers "database is locked" at once, without waiting)
            raise ArchiveError(f"{self.path}: cannot {what} inside archive.reading(), which holds one read "
                               "snapshot; write after its with block")

    # ------------------------------------------------------------------ lifecycle

    @property
    def conn(self) -> apsw.Connection:
        """The underlying APSW connection (for read queries the API does not cover)."""
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_file(self) -> None:
        """Refuse, before changing anything in it, a file that is not an archive we can read."""
        conn = self._conn
        version = user_version(conn)
        if version == 0:
            others = conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            ).fetchall()
            names = {name for (name,) in others}
            if {"sessions", "messages", "index_state"} <= names:
                # an archive restored from the sqlite3 shell's .dump, which leaves user_version out
                ddl = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (FTS_INDEXES["cjk"][0],)).fetchone()
                want = schema_version_of(ddl[0] if ddl else "")
                raise ArchiveError(f"{self.path} has an archive's tables but no schema version (a copy restored "
                                   "from a .dump has none); if it is a cjk_tokenizer archive, set it with "
                                   f"sqlite3 {self.path} 'PRAGMA user_version = {want}'")
            if others:
                raise ArchiveError(f"{self.path} is a SQLite database but not a cjk_tokenizer archive "
                                   f"(it has tables such as {others[0][0]!r})")
        elif version not in READABLE_VERSIONS:
            raise ArchiveError(
                f"{self.path} has schema version {version}; this cjk_tokenizer reads versions "
                f"{', '.join(map(str, READABLE_VERSIONS))} (a newer release made it: upgrade cjk-tokenizer)"
            )
        else:
            for (route,) in conn.execute("SELECT route FROM index_state"):
                if route not in FTS_INDEXES:
                    raise ArchiveError(f"{self.path}: index_state names an unknown index {route!r} "
                                       f"(known: {', '.join(FTS_INDEXES)})")

    def _open_schema(self, indexes) -> None:
        conn = self._conn
        if user_version(conn) == 0:
            with immediate(conn):
                if user_version(conn) == 0:  # nobody beat us to it
                    self._create(indexes or DEFAULT_ROUTES)
                    return
        if session_triggers_stale(conn):  # made by an older release: once, then never again
            with immediate(conn):
                if session_triggers_stale(conn):
                    conn.execute(REPLACED_DDL)  # the triggers read it
                    for name in SESSION_TRIGGER_NAMES:
                        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
                    for ddl in SESSION_TRIGGERS:
                        conn.execute(ddl)
                    conn.execute(ADOPT_SESSIONLESS)
        # A cjk table whose options only version-2 readers know, in an archive that says 1
        # (releases that added the options recorded no version for them): older releases
        # must refuse it rather than fail inside SQLite.
        needed = max([schema_version_of(sql or "") for (sql,) in conn.execute(
            "SELECT sql FROM sqlite_master WHERE name = ?", (FTS_INDEXES["cjk"][0],))], default=BASE_VERSION)
        if user_version(conn) < needed:
            with immediate(conn):
                raise_version(conn, needed)
        if indexes is None:
            return
        have = set(indexing.states(conn))
        extra = have.difference(indexes)
        if extra:
            raise ArchiveError(
                f"the archive also has the {', '.join(sorted(extra))} index(es), not in indexes=; "
                "dropping one is explicit: call archive.indexes.drop(route)"
            )
        for route in indexes:
            if route not in have:
                self.indexes.add(route)

    def _create(self, routes) -> None:
        conn = self._conn
        self._check_file()  # again, inside the write transaction
        for ddl in BASE_DDL:
            conn.execute(ddl)
        record_fold_variants(conn, bool(self._fold_variants_arg))
        # creating a table that needs more raises it further; folding is version 2 from the start,
        # whichever tables this process can create (without the extension, no cjk table yet)
        raise_version(conn, 2 if self._fold_variants_arg else BASE_VERSION)
        for route in routes:
            self.indexes._create(route, empty_table=True)

    # ------------------------------------------------------------------ writing

    def add_session(self, session_id: str | None = None, *, title: str | None = None, source: str | None = None,
                    started_at: TimeValue | None = None, metadata: dict[str, Any] | None = None) -> str:
        """Create a session and return its id (a new uuid4 string if none is given)."""
        sid = str(uuid.uuid4()) if session_id is None else records.ident(session_id, "session_id")
        row = (sid, records.text(title, "title"), records.text(source, "source"),
               records.timestamp(started_at, "started_at"),
               records.metadata_(metadata))
        with self._lock, self._tx("add a session"):
            try:
                self._conn.execute("INSERT INTO sessions(id, title, source, started_at, metadata) "
                                   "VALUES (?, ?, ?, ?, ?)", row)
            except apsw.ConstraintError:
                raise InputError(f"session {sid!r} already exists") from None
        return sid

    def update_session(self, session_id: str, *, title: str | None = _UNSET, source: str | None = _UNSET,
                       metadata: dict[str, Any] | None = _UNSET) -> bool:
        """Change a session's title, source or metadata; False if there is no such session."""
        if _no_such_id(session_id):
            return False
        sets, args = [], []
        for name, value in (("title", title), ("source", source)):
            if value is not _UNSET:
                sets.append(f"{name} = ?")
                args.append(records.text(value, name))
        if metadata is not _UNSET:
            sets.append("metadata = ?")
            args.append(records.metadata_(metadata))
        if not sets:
            return self.session(session_id) is not None
        with self._lock, self._tx("update a session"):
            self._conn.execute(f"UPDATE sessions SET {', '.join(sets)} WHERE id = ?", (*args, session_id))
            return self._conn.changes() > 0

    def _write(self, work):
        """Run ``work()`` in one write transaction and return its result.

        On a host without the extension, the cjk index may be live: left so
        at open (reading needs no change), or made so meanwhile by a catch-up
        elsewhere.  A write then fails to compile its triggers ("no such
        tokenizer") and nothing is written (the transaction rolled back), so
        we switch the index to stale and run the work once more.  Only
        writers demote: a process that merely reads leaves it served.
        """
        with self._lock:
            try:
                with self._tx("write messages"):
                    return work()
            except apsw.SQLError as exc:
                if self.extension_loaded or "no such tokenizer" not in str(exc):
                    raise
            self.indexes._reconcile(demote=True)
            with immediate(self._conn):
                return work()

    def _ensure_session(self, sid: str, started_at: float) -> None:
        self._conn.execute("INSERT OR IGNORE INTO sessions(id, started_at) VALUES (?, ?)", (sid, started_at))

    def _insert(self, row: MessageRow) -> int:
        self._ensure_session(row.session_id, row.timestamp)
        self._conn.execute(_INSERT_MSG, row)
        return self._conn.last_insert_rowid()

    def add_message(self, session_id: str, role: str, content: str | None = None, *, reasoning: str | None = None,
                    tool_name: str | None = None, tool_calls: list[Any] | dict[str, Any] | str | None = None,
                    tool_call_id: str | None = None,
                    timestamp: TimeValue | None = None, metadata: dict[str, Any] | None = None) -> int:
        """Append one message and return its id.

        ``role`` is one of constants.ROLES; ``tool_calls`` a list or dict (stored
        as JSON) or text (stored as given); ``timestamp`` epoch seconds, ISO-8601 text or a datetime
        by the package's one time rule (timeutil.py; no zone means UTC;
        default: now).  The session is created if it does not exist.
        """
        row = records.message_row(session_id, role, content, reasoning=reasoning, tool_name=tool_name,
                                  tool_calls=tool_calls, tool_call_id=tool_call_id, timestamp_=timestamp,
                                  metadata=metadata)
        return self._write(lambda: self._insert(row))

    def add_openai_message(self, session_id: str, msg: dict[str, Any]) -> int:
        """Append an OpenAI-style message dict (see records.py for what is accepted)."""
        row = records.openai_row(session_id, msg)
        return self._write(lambda: self._insert(row))

    def add_messages(self, session_id: str, messages: Iterable[dict[str, Any]]) -> list[int]:
        """Append OpenAI-style message dicts in one transaction; all or nothing."""
        sid = records.ident(session_id, "session_id")
        rows = []
        for i, msg in enumerate(messages):
            try:
                rows.append(records.openai_row(sid, msg))
            except InputError as exc:
                raise InputError(f"message #{i}: {exc}") from None
        return self._write(lambda: [self._insert(row) for row in rows])

    def bulk_import(self, messages: Iterable[dict[str, Any]], *, session_id: str | None = None, batch_size: int = 2000,
                    progress: Callable[[int], Any] | None = None) -> int:
        """Append many OpenAI-style dicts fast: one transaction per batch.

        A batch is ``batch_size`` messages, or fewer once it holds
        BULK_BATCH_CHARS characters of text (huge tool outputs).

        Each dict names its session in ``"session_id"`` (or ``session_id=``
        applies to those that do not).  After each committed batch
        ``progress(committed_so_far)`` is called.  Returns the number of
        messages committed.  On a bad record an :class:`InputError` says which
        one; the batches before it are committed (``exc.committed`` counts
        them), the batch holding it is not.
        """
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        default_sid = None if session_id is None else records.ident(session_id, "session_id")
        committed = 0
        batch: list[MessageRow] = []
        chars = 0

        def flush():
            nonlocal committed, chars
            self._write(lambda: self._stage(batch))
            committed += len(batch)
            batch.clear()
            chars = 0
            if progress is not None:
                progress(committed)

        for i, msg in enumerate(messages):
            try:
                if not isinstance(msg, dict):
                    raise InputError(f"a message must be a dict, not {type(msg).__name__}")
                sid = msg.get("session_id", default_sid)
                if sid is None:
                    raise InputError("no session_id in the record and no session_id= given")
                batch.append(records.openai_row(sid, msg))
            except InputError as exc:
                err = InputError(f"record #{i}: {exc} ({committed} messages committed before it)")
                err.committed = committed
                raise err from None
            chars += batch[-1].text_chars()
            if len(batch) >= batch_size or chars >= BULK_BATCH_CHARS:
                flush()
        if batch:
            flush()
        return committed

    def _stage(self, batch) -> None:
        """Insert a batch with ONE statement, from a temp staging table.

        One INSERT ... SELECT per batch is much faster than one INSERT per
        row in the same transaction (the resulting index is the same, so the
        cost is per statement, not per segment), and close to bypassing the
        triggers and inserting into the FTS tables directly, without the
        schema changes that would take: the triggers still do the index work,
        so live and pending indexes are handled alike (bench/bench_import.py
        measures ingest).
        """
        conn = self._conn
        conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS bulk_staging (seq INTEGER PRIMARY KEY, {_COLS})")
        first_seen: dict = {}
        for row in batch:
            first_seen.setdefault(row.session_id, row.timestamp)
        conn.executemany("INSERT OR IGNORE INTO sessions(id, started_at) VALUES (?, ?)", first_seen.items())
        marks = ", ".join("?" for _ in MESSAGE_COLUMNS)
        try:
            conn.executemany(f"INSERT INTO temp.bulk_staging({_COLS}) VALUES ({marks})", batch)
            conn.execute(f"INSERT INTO messages({_COLS}) SELECT {_COLS} FROM temp.bulk_staging ORDER BY seq")
        finally:
            conn.execute("DELETE FROM temp.bulk_staging")

    def update_message(self, message_id: int, *, content: str | None = _UNSET, reasoning: str | None = _UNSET,
                       tool_name: str | None = _UNSET, tool_calls: list[Any] | dict[str, Any] | str | None = _UNSET,
                       timestamp: TimeValue | None = _UNSET, metadata: dict[str, Any] | None = _UNSET) -> bool:
        """Change fields of a message (indexes follow); False if there is no such message."""
        sets, args = [], []
        for name, value in (("content", content), ("reasoning", reasoning), ("tool_name", tool_name)):
            if value is not _UNSET:
                sets.append(f"{name} = ?")
                args.append(records.text(value, name))
        if tool_calls is not _UNSET:
            sets.append("tool_calls = ?")
            args.append(records.tool_calls_text(tool_calls))
        if timestamp is not _UNSET:
            sets.append("timestamp = ?")
            args.append(records.timestamp(timestamp, default_now=False))
        if metadata is not _UNSET:
            sets.append("metadata = ?")
            args.append(records.metadata_(metadata))
        mid = records.message_id(message_id)
        if not sets or mid is None:
            return mid is not None and self.get_message(mid) is not None

        def update():
            self._conn.execute(f"UPDATE messages SET {', '.join(sets)} WHERE id = ?", (*args, mid))
            return self._conn.changes() > 0

        return self._write(update)

    def delete_message(self, message_id: int) -> bool:
        """Delete one message (and its index entries); False if there was none."""
        mid = records.message_id(message_id)
        if mid is None:
            return False

        def delete():
            self._conn.execute("DELETE FROM messages WHERE id = ?", (mid,))
            return self._conn.changes() > 0

        return self._write(delete)

    def delete_session(self, session_id: str) -> int:
        """Delete a session and all its messages; returns how many messages went."""
        if _no_such_id(session_id):
            return 0

        def delete():
            n = self._conn.execute("SELECT count(*) FROM messages WHERE session_id = ?", (session_id,)).fetchone()[0]
            self._conn.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            self._conn.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
            return int(n)

        return self._write(delete)

    # ------------------------------------------------------------------ import / export (importers/, export.py)

    def import_source(self, path: str | os.PathLike | Iterable[str | os.PathLike], format: str = "auto", *,
                      progress: Callable[[int, int], Any] | None = None, batch_size: int = 2000,
                      optimize: bool | None = None) -> ImportReport:
        """Import a file, a folder, ``"-"`` (stdin) or a list of them; returns an ImportReport.

        ``format``: "auto" (detected per file), "openai", "claude-code",
        "codex" or "hermes".  Records already imported from the same source
        are not added again; see importers/driver.py.
        ``optimize``: by default an import that at least doubles the archive
        ends with ``indexes.optimize()`` (the report's ``optimized`` says
        so); True merges after any import, False never.  A big import into an
        archive with an empty index builds that index on the second core (the
        report's ``built_aside`` names it; see importers/driver.py).
        """
        from .importers import import_source

        with self._lock:
            return import_source(self, path, format, progress=progress, batch_size=batch_size, optimize=optimize)

    def sync(self, *, progress: Callable[[int, int], Any] | None = None, batch_size: int = 2000,
             optimize: bool | None = None) -> ImportReport:
        """Import again every path this archive was given; returns an ImportReport (``optimize`` as in
        import_source)."""
        from .importers import sync

        with self._lock:
            return sync(self, progress=progress, batch_size=batch_size, optimize=optimize)

    def export(self, out: IO[str], *, session_id: str | None = None, format: str = "jsonl") -> int:
        """Write all sessions (or ``session_id``) to a text stream as JSONL or Markdown (export.py)."""
        from .export import export

        with self._lock:
            return export(self, out, session_id=session_id, format=format)

    # ------------------------------------------------------------------ reading

    def get_message(self, message_id: int) -> dict[str, Any] | None:
        """The message with this id, or None."""
        mid = records.message_id(message_id)
        if mid is None:
            return None
        with self._lock:
            row = self._conn.execute(f"SELECT {_MSG_COLS} FROM messages WHERE id = ?", (mid,)).fetchone()
        return None if row is None else _message(row)

    def messages_of(self, session_id: str | None, *, after_id: int | None = None, before_id: int | None = None,
                    limit: int | None = None, order: str = "asc") -> list[dict[str, Any]]:
        """A session's messages by id (``None``: every session's, in the order they arrived):
        those with after_id < id < before_id, ``limit`` of them.

        ``order="asc"`` gives the first ones oldest first; ``"desc"`` the last
        ones newest first (e.g. the tail of a session).
        """
        if order not in ("asc", "desc"):
            raise ValueError(f"order must be 'asc' or 'desc', not {order!r}")
        if _no_such_id(session_id):
            return []
        limit = None if limit is None else _row_count("limit", limit)
        where, args = (["1"], []) if session_id is None else (["session_id = ?"], [session_id])
        for name, value, op in (("after_id", after_id, ">"), ("before_id", before_id, "<")):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name} must be a message id (an int) or None, not {shown(value)}")
            where.append(f"id {op} ?")
            args.append(max(-(2**63), min(value, 2**63 - 1)))
        sql = f"SELECT {_MSG_COLS} FROM messages WHERE {' AND '.join(where)} ORDER BY id {order.upper()}"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        with self._lock:
            return [_message(r) for r in self._conn.execute(sql, args)]

    def session(self, session_id: str) -> dict[str, Any] | None:
        """A session with its message_count and last_active time, or None."""
        if _no_such_id(session_id):
            return None
        with self._lock:
            row = self._conn.execute(f"SELECT {_SESSION_COLS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return None if row is None else _session(row)

    def sessions(self, *, limit: int | None = None, offset: int = 0) -> list[dict[str, Any]]:
        """Sessions, most recently active first (those with no messages last)."""
        # a time another tool stored as text (or Infinity) sorts above every number in SQLite:
        # it counts as no time, as it reads (records.stored_time).  The page is chosen first,
        # and only its rows' columns are read (as every row's would be, for the sort)
        page, args = "", []
        offset = _row_count("offset", offset)
        if limit is not None:
            page, args = " LIMIT ? OFFSET ?", [_row_count("limit", limit), offset]
        elif offset:
            page, args = " LIMIT -1 OFFSET ?", [offset]
        keys = f"{_time_key('last_active')} AS k1, {_time_key('started_at')} AS k2, id AS k3"
        sql = (f"WITH page AS (SELECT rowid AS r, {keys} FROM sessions ORDER BY k1 DESC, k2 DESC, k3{page}) "
               f"SELECT {_SESSION_COLS} FROM page JOIN sessions ON sessions.rowid = page.r "
               "ORDER BY page.k1 DESC, page.k2 DESC, page.k3")
        with self._lock:
            return [_session(r) for r in self._conn.execute(sql, args)]

    def count_messages(self, session_id: str | None = None) -> int:
        if _no_such_id(session_id):
            return 0
        with self._lock:
            if session_id is None:
                return int(self._conn.execute("SELECT count(*) FROM messages").fetchone()[0])
            return int(self._conn.execute("SELECT count(*) FROM messages WHERE session_id = ?",
                                          (session_id,)).fetchone()[0])

    def count_sessions(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM sessions").fetchone()[0])

    # ------------------------------------------------------------------ search (search.py)

    def search(self, query: str, *, include_reasoning: bool = False, roles: Iterable[str] | None = None,
               session_id: str | None = None, after: TimeValue | None = None, before: TimeValue | None = None,
               sort: str = "relevance", limit: int = 20, route: str | None = None, offset: int = 0,
               cursor: str | None = None, exclude_session_ids: Iterable[str] | None = None,
               snippet_chars: int = SNIPPET_CHARS, relevance_bound: int | None | Literal["default"] = "default",
               rank_floor: int | None = None) -> Hits:
        """Find messages; see search.py for the query language, filters, paging and Hit fields.

        Returns a list of Hit with ``next_cursor`` (search.Hits): pass it as
        ``cursor=`` for the next newest/oldest page; ``offset`` pages any sort.
        ``snippet_chars`` (20 or more), ``relevance_bound`` (None: score every
        match) and ``rank_floor`` (a result's ``rank_floor``) are search.run_search's.
        Bad arguments raise QueryError.

        Only live indexes this host can tokenize are used (``indexes.live()``,
        read afresh on every call).
        """
        from .search import run_search

        with self._lock, snapshot(self._conn):  # the indexes it reads are those served() calls live
            live, unigrams = self.indexes.served()
            return run_search(self._conn, query, live_indexes=live, cjk_unigrams=unigrams,
                              include_reasoning=include_reasoning, roles=roles, session_id=session_id,
                              after=after, before=before, sort=sort, limit=limit, route=route, offset=offset,
                              cursor=cursor, exclude_session_ids=exclude_session_ids,
                              fold_variants=self.fold_variants, snippet_chars=snippet_chars,
                              relevance_bound=relevance_bound, rank_floor=rank_floor)

    @contextmanager
    def reading(self) -> Iterator["Archive"]:
        """One read transaction for several calls (searches, reads), joining one already
        open: they all see the archive as one commit left it, whatever other
        processes write meanwhile (WAL lets them).  Hold it briefly: a long read keeps
        the write-ahead log from being checkpointed."""
        with self._lock, snapshot(self._conn):
            self._reading += 1
            try:
                yield self
            finally:
                self._reading -= 1

    def count_by_session(self, query: str, session_ids: Iterable[str], *, include_reasoning: bool = False,
                         roles: Iterable[str] | None = None, after: TimeValue | None = None,
                         before: TimeValue | None = None) -> dict[str, int]:
        """How many messages of each session in ``session_ids`` match ``query``.

        :param query: as for :meth:`search`.
        :param session_ids: the sessions to count in (at most search.MAX_EXCLUDED).
        :param include_reasoning, roles, after, before: the filters, as for :meth:`search`.
        :returns: ``{session id: matching messages}``; sessions without a match are left out.
        """
        from .search import count_by_session

        with self._lock, snapshot(self._conn):
            live, unigrams = self.indexes.served()
            return count_by_session(self._conn, query, session_ids, live_indexes=live, cjk_unigrams=unigrams,
                                    include_reasoning=include_reasoning, roles=roles, after=after, before=before,
                                    fold_variants=self.fold_variants)

    def explain(self, query: str, **options: Any) -> dict[str, Any]:
        """Which route(s) would serve ``query`` on this archive now, and why.

        ``sql=True`` adds the statements a ``search`` with the same arguments
        would run now, with their parameters (see search.explain).
        """
        from .search import explain

        with self._lock, snapshot(self._conn):
            live, unigrams = self.indexes.served()
            return explain(query, live, cjk_unigrams=unigrams,
                           fold_variants=self.fold_variants, conn=self._conn, **options)

    def session_search(self, query: str | None = None, session_id: str | None = None,
                       around_message_id: int | None = None, window: int | None = None, limit: int | None = None,
                       include_reasoning: bool = False, roles: Iterable[str] | None = None,
                       after: TimeValue | None = None, before: TimeValue | None = None, sort: str | None = None,
                       exclude_session_ids: Iterable[str] | None = None, offset: int | None = None,
                       cursor: str | None = None) -> dict[str, Any]:
        """The agents' tool: discovery, scroll, read or browse, inferred from the arguments.

        Returns a JSON-serializable dict; errors come back inside it, never as
        exceptions (see session_search.py for the shapes and limits).
        """
        from .session_search import session_search

        return session_search(self, query=query, session_id=session_id, around_message_id=around_message_id,
                              window=window, limit=limit, include_reasoning=include_reasoning, roles=roles,
                              after=after, before=before, sort=sort, exclude_session_ids=exclude_session_ids,
                              offset=offset, cursor=cursor)
