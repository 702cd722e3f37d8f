"""The archive's schema, in one place.

Tables
------
sessions      one row per conversation.  ``message_count`` and ``last_active``
              are kept by triggers so that listing recent sessions is an index
              walk, not an aggregate over every message; they also make the
              row of a message's session if it has none, whoever writes it.
messages      one row per message; ``id`` is the rowid every FTS index uses.
              AUTOINCREMENT: an id is never reused after a delete, so a
              message id held by a caller (or by a stale index) never comes
              to mean a different message.
index_state   one row per configured FTS index (see "Index states" below).
fts_backlog   per index, the messages whose indexed form differs from the
              table, with the values as they were indexed (see below).
archive_settings  choices fixed when the archive was created (name, value):
              ``fold_variants`` '1' when the cjk index folds Han variants
              (``Archive(fold_variants=True)``).  An archive without the
              table (created before it existed) has every setting off.

import_roots    every path (file or folder) given to an import, with its format
               ("auto" included): what ``sync`` reads again.
import_sources one row per imported file or database: (format, real path).
imported       per source, the identity (``key``: the source's own id or line)
               of every record imported from it, a digest of what it said, and
               the messages it became (``first_id`` .. ``first_id + count - 1``).
               A record seen again with the same digest adds nothing; with a
               different one it is reported, not imported twice.  A key that
               names its record in any file (a Claude Code line's uuid) counts
               as seen when any source of its format imported it.

The three import tables are created by the first import (``IMPORT_DDL``), so an
archive made before they existed opens as it is and gains them then.

``PRAGMA user_version`` is one of ``READABLE_VERSIONS`` (see SCHEMA_VERSION
below for what each means); an archive from a newer version is refused rather
than half-understood.

FTS5 indexes (external content on ``messages``, ``content_rowid='id'``), all
over the same columns, in this order: content, reasoning, tool_name, tool_calls.

==========  ===================  ================================================
route       table                tokenizer
==========  ===================  ================================================
cjk         messages_fts_cjk     cjk_unicode61 remove_diacritics 2 (extension),
                                 plus fold_variants 1 when the archive folds
unicode61   messages_fts_u61     unicode61 remove_diacritics 2 (always)
trigram     messages_fts_tri     trigram (opt-in; substring fallback)
==========  ===================  ================================================

Tool results are messages with role 'tool' and are indexed whole.

Trigram is by far the largest index per byte of text, which is why it is
opt-in (and the one a large archive may want to drop with
``archive.indexes.drop``); bench/RESULTS.md has each index's measured size.

Index states
------------
``index_state.status`` is one of

live      the index equals the table; triggers keep it so; it may be served.
stale     the index is behind (it was written while the extension was missing,
          or a catch-up was interrupted); not served.
building  like stale, but the index started empty (new index or rebuild).
absent    configured, but the table cannot exist on the host that created the
          archive (the cjk index on a host without the extension).

For an index that is not live, what the index holds is exactly:

* every message with ``id <= indexed_upto`` that has no backlog row, with its
  current values, plus
* for each backlog row with ``indexed = 1``, the message ``msg_id`` with the
  values stored in the backlog row (as they were when indexed).

Nothing above ``indexed_upto`` is in the index, so plain appends cost nothing
while an index is stale: they are simply above the watermark.  The "pending"
triggers (``pending_triggers``) record only changes at or below the watermark,
keeping the *first* old values (none is recorded over another), because those
are what an FTS5 external-content 'delete' must be given: deleting a row with values
other than the indexed ones, or a rowid never indexed, corrupts the index.
Those triggers never touch the FTS table, so they work on hosts where its
tokenizer is not registered (where any statement touching it fails).
"""
from __future__ import annotations

MESSAGES = "messages"
SESSIONS = "sessions"

# Schema versions (``PRAGMA user_version``).  An archive records the lowest
# version that describes it, so a reader that does not know a later one
# refuses the file with a one-line error instead of failing inside SQLite.
#
# 1  the tables above; every FTS table's tokenize= is the one in FTS_INDEXES.
# 2  as 1, but the cjk table's tokenize= may carry options version-1 readers'
#    tokenizer does not know (CJK_V2_OPTIONS): opened by such a reader, the
#    table fails in the tokenizer's constructor on the first statement.
#
# A new archive starts at 1 and is raised by ``raise_version`` when a table
# needing more is created (``schema_version_of``); nothing lowers it.
SCHEMA_VERSION = 2
READABLE_VERSIONS = (1, 2)
BASE_VERSION = 1

# FTS columns, in index order.  Aux functions see only column numbers, so every
# caller that labels columns uses this tuple.
FTS_COLUMNS = ("content", "reasoning", "tool_name", "tool_calls")
# Columns searched unless include_reasoning=True.
DEFAULT_COLUMNS = ("content", "tool_name", "tool_calls")

# route name (constants.FTS_ROUTES, in that order) -> (fts table, tokenize= argument)
FTS_INDEXES = {
    "cjk": ("messages_fts_cjk", "cjk_unicode61 remove_diacritics 2"),
    "unicode61": ("messages_fts_u61", "unicode61 remove_diacritics 2"),
    "trigram": ("messages_fts_tri", "trigram"),
}
# Routes that need the extension's tokenizer.
EXTENSION_ROUTES = frozenset({"cjk"})
# Routes every archive has: the query router relies on unicode61 for words.
REQUIRED_ROUTES = frozenset({"unicode61"})
# A new archive's indexes.  trigram is opt-in (``indexes=``): it is the
# largest index by far, and a host with the cjk index never routes to it.
DEFAULT_ROUTES = ("cjk", "unicode61")

STATUSES = ("live", "stale", "building", "absent")

SESSIONS_DDL = """
CREATE TABLE IF NOT EXISTS sessions (
    id            TEXT PRIMARY KEY,
    title         TEXT,
    source        TEXT,
    started_at    REAL,
    metadata      TEXT,
    message_count INTEGER NOT NULL DEFAULT 0,
    last_active   REAL
)"""

MESSAGES_DDL = """
CREATE TABLE IF NOT EXISTS messages (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id   TEXT NOT NULL REFERENCES sessions(id),
    role         TEXT NOT NULL,
    content      TEXT,
    reasoning    TEXT,
    tool_name    TEXT,
    tool_calls   TEXT,
    tool_call_id TEXT,
    timestamp    REAL,
    metadata     TEXT
)"""

INDEXES_DDL = (
    "CREATE INDEX IF NOT EXISTS messages_session ON messages(session_id, id)",
    "CREATE INDEX IF NOT EXISTS messages_timestamp ON messages(timestamp)",
    "CREATE INDEX IF NOT EXISTS sessions_last_active ON sessions(last_active)",
)

INDEX_STATE_DDL = """
CREATE TABLE IF NOT EXISTS index_state (
    route        TEXT PRIMARY KEY,
    status       TEXT NOT NULL CHECK (status IN ('live', 'stale', 'building', 'absent')),
    indexed_upto INTEGER NOT NULL DEFAULT 0,
    updated_at   REAL
)"""

BACKLOG_DDL = """
CREATE TABLE IF NOT EXISTS fts_backlog (
    route      TEXT NOT NULL,
    msg_id     INTEGER NOT NULL,
    indexed    INTEGER NOT NULL,
    content    TEXT,
    reasoning  TEXT,
    tool_name  TEXT,
    tool_calls TEXT,
    PRIMARY KEY (route, msg_id)
) WITHOUT ROWID"""

# A REPLACE (INSERT OR REPLACE of an id that exists, UPDATE OR REPLACE of an id
# onto one; sqlite-utils' insert(replace=True) writes so) deletes the row it
# replaces without firing DELETE triggers, unless the writer turned PRAGMA
# recursive_triggers on, so every index and the session's count would keep it.
# A BEFORE trigger saves the row about to be replaced here, and the AFTER
# triggers of that write take it out of the indexes and the counts.  Where
# recursive_triggers is on, the DELETE triggers do that for the replaced row,
# and take its saved copy away (messages_session_ad), so it is not done twice.
# A saved row outlives its write only when the write did not happen (OR
# IGNORE, OR FAIL), and only while the row it copies keeps its id: deleting
# or moving that row takes it away (messages_session_ad, _au).  So the id is
# never free while it is saved: an automatic id (which a BEFORE trigger does
# not know) cannot meet it, and a write of that very id replaces it first in
# its BEFORE trigger.  A stale row is never read.
REPLACED_DDL = f"""
CREATE TABLE IF NOT EXISTS messages_replaced (
    msg_id     INTEGER PRIMARY KEY,
    session_id TEXT,
    {', '.join(f'{c} TEXT' for c in FTS_COLUMNS)}
)"""
_SAVE_REPLACED = f"""DELETE FROM messages_replaced WHERE msg_id = new.id;
    INSERT INTO messages_replaced(msg_id, session_id, {', '.join(FTS_COLUMNS)})
    SELECT id, session_id, {', '.join(FTS_COLUMNS)} FROM messages WHERE id = new.id;"""


def _changed(*columns: str) -> str:
    """A trigger's WHEN: the update moved the id or changed one of ``columns``.  Not
    ``UPDATE OF``, which names columns: an update of the id through rowid, oid or
    _rowid_ fires no trigger of ``UPDATE OF id``."""
    return " OR ".join(f"new.{c} IS NOT old.{c}" for c in ("id", *columns))


# The session of the row a write replaced (none when it replaced nothing).
_REPLACED_SESSION = "(SELECT session_id FROM messages_replaced WHERE msg_id = new.id)"

# Session bookkeeping.  last_active only moves forward: it is "the latest
# message time seen", which is what a recent-first listing wants.  A message
# whose session has no row gets one (started at the message's time): a writer
# that is not an Archive, with foreign keys off (the sqlite3 shell's and
# stdlib sqlite3's default), may insert it so.  No statement here carries a
# conflict clause (OR IGNORE): the writing statement's clause overrides it, so
# under INSERT OR REPLACE it would delete and remake the session's row bare,
# and under INSERT OR ABORT fail on it.
_MAKE_SESSION = """INSERT INTO sessions(id, started_at) SELECT new.session_id, new.timestamp
    WHERE NOT EXISTS (SELECT 1 FROM sessions WHERE id = new.session_id);"""
_COUNT_NEW = """UPDATE sessions SET message_count = message_count + 1,
        last_active = max(coalesce(last_active, new.timestamp), coalesce(new.timestamp, last_active))
    WHERE id = new.session_id;"""
SESSION_TRIGGERS = (
    f"""CREATE TRIGGER IF NOT EXISTS messages_replace_bi BEFORE INSERT ON messages BEGIN
    {_SAVE_REPLACED}
END""",
    f"""CREATE TRIGGER IF NOT EXISTS messages_replace_bu BEFORE UPDATE ON messages
WHEN new.id IS NOT old.id BEGIN
    {_SAVE_REPLACED}
END""",
    f"""CREATE TRIGGER IF NOT EXISTS messages_session_ai AFTER INSERT ON messages BEGIN
    UPDATE sessions SET message_count = message_count - 1 WHERE id = {_REPLACED_SESSION};
    {_MAKE_SESSION}
    {_COUNT_NEW}
END""",
    """CREATE TRIGGER IF NOT EXISTS messages_session_ad AFTER DELETE ON messages BEGIN
    UPDATE sessions SET message_count = message_count - 1 WHERE id = old.session_id;
    DELETE FROM messages_replaced WHERE msg_id = old.id;
END""",
    f"""CREATE TRIGGER IF NOT EXISTS messages_session_au AFTER UPDATE ON messages
WHEN {_changed("session_id", "timestamp")} BEGIN
    UPDATE sessions SET message_count = message_count - 1
    WHERE new.id IS NOT old.id AND id = {_REPLACED_SESSION};
    DELETE FROM messages_replaced WHERE msg_id = old.id AND new.id IS NOT old.id;
    UPDATE sessions SET message_count = message_count - 1 WHERE id = old.session_id;
    {_MAKE_SESSION}
    {_COUNT_NEW}
END""",
)
SESSION_TRIGGER_NAMES = ("messages_replace_bi", "messages_replace_bu", "messages_session_ai",
                         "messages_session_ad", "messages_session_au")
# An archive whose triggers predate the row-making ones may hold messages without
# a session row: they get one, as the triggers would have made it.
ADOPT_SESSIONLESS = """INSERT INTO sessions(id, started_at, message_count, last_active)
SELECT session_id, min(timestamp), count(*), max(timestamp) FROM messages
WHERE session_id NOT IN (SELECT id FROM sessions) GROUP BY session_id"""


def session_triggers_stale(conn) -> bool:
    """Are this archive's session triggers other than SESSION_TRIGGERS (an older release made them)?"""
    have = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND name IN "
                             f"({', '.join('?' * len(SESSION_TRIGGER_NAMES))})", SESSION_TRIGGER_NAMES).fetchall())
    want = {name: sql.replace(" IF NOT EXISTS", "", 1) for name, sql in zip(SESSION_TRIGGER_NAMES, SESSION_TRIGGERS)}
    return have != want

SETTINGS_DDL = """
CREATE TABLE IF NOT EXISTS archive_settings (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
)"""


def fold_variants(conn) -> bool:
    """Does this archive fold Han variants?  (Recorded at creation; off for
    archives that predate the setting.)"""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'archive_settings'").fetchall():
        return False
    row = conn.execute("SELECT value FROM archive_settings WHERE name = 'fold_variants'").fetchone()
    return bool(row) and row[0] == "1"


def record_fold_variants(conn, on: bool) -> None:
    """Record the setting in a new archive (inside its creating transaction)."""
    conn.execute("INSERT OR REPLACE INTO archive_settings(name, value) VALUES ('fold_variants', ?)",
                 ("1" if on else "0",))


IMPORT_DDL = (
    """CREATE TABLE IF NOT EXISTS import_roots (
    path     TEXT NOT NULL,
    format   TEXT NOT NULL,
    added_at REAL,
    PRIMARY KEY (path, format)
)""",
    """CREATE TABLE IF NOT EXISTS import_sources (
    id          INTEGER PRIMARY KEY,
    format      TEXT NOT NULL,
    path        TEXT NOT NULL,
    imported_at REAL,
    UNIQUE (format, path)
)""",
    """CREATE TABLE IF NOT EXISTS imported (
    source_id INTEGER NOT NULL REFERENCES import_sources(id),
    key       TEXT NOT NULL,
    digest    TEXT NOT NULL,
    first_id  INTEGER,
    count     INTEGER NOT NULL,
    PRIMARY KEY (source_id, key)
) WITHOUT ROWID""",
    # a record whose key names it in any file (a Claude Code line's uuid) is looked up by key alone
    "CREATE INDEX IF NOT EXISTS imported_key ON imported(key)",
)

BASE_DDL = (SESSIONS_DDL, MESSAGES_DDL, INDEX_STATE_DDL, BACKLOG_DDL, SETTINGS_DDL, REPLACED_DDL,
            *INDEXES_DDL, *SESSION_TRIGGERS)


def fts_table(route: str) -> str:
    return FTS_INDEXES[route][0]


# The cjk tokenizer option every cjk table this version creates gets: a
# unigram for every CJK character (csrc/cjk_tokenizer.h), so one character is
# one doclist.  It lives in the table's tokenize= argument, which FTS5 reads
# for every later write: a table created without it (by an earlier version,
# or with cjk_unigrams=False) is tokenized as it always was.
CJK_UNIGRAMS = "unigrams 1"
CJK_FOLD_VARIANTS = "fold_variants 1"
# Options a cjk table may carry that only schema version 2 readers know.
CJK_V2_OPTIONS = (CJK_UNIGRAMS, CJK_FOLD_VARIANTS)


def schema_version_of(ddl: str) -> int:
    """The lowest schema version whose readers can use a table created by ``ddl``."""
    return 2 if any(option in ddl for option in CJK_V2_OPTIONS) else BASE_VERSION


def user_version(conn) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def raise_version(conn, version: int) -> None:
    """Record that the archive now needs readers of ``version`` (inside the
    transaction that made it so); a higher recorded version stays."""
    if user_version(conn) < version:
        conn.execute(f"PRAGMA user_version = {int(version)}")


def cjk_unigrams(conn) -> bool:
    """Does this archive's cjk table index every CJK character (its DDL says so)?"""
    row = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (fts_table("cjk"),)).fetchone()
    return unigrams_in(row[0] if row else None)


def unigrams_in(ddl: str | None) -> bool:
    """Does ``ddl``, the cjk table's CREATE statement (None: no table), give it a unigram
    for every CJK character?"""
    return bool(ddl and CJK_UNIGRAMS in ddl)


def fts_ddl(route: str, *, prefix: bool = False, unigrams: bool = False, fold_variants: bool = False) -> str:
    """CREATE statement of ``route``'s index.

    ``prefix=True`` (``Archive(..., cjk_prefix=True)``, cjk only) adds FTS5's
    ``prefix='1'`` index: one-character CJK queries (``"X"*``) then read one
    doclist instead of merging every bigram that starts with X, at the price
    of a larger cjk index and a slower build (bench/RESULTS.md has both
    sides measured).  The choice is fixed when the table is created, as are
    ``unigrams=True`` (cjk only): the tokenizer option CJK_UNIGRAMS, and
    ``fold_variants=True`` (cjk only): the tokenizer option of that name.
    """
    table, tokenize = FTS_INDEXES[route]
    if fold_variants and route == "cjk":
        tokenize += " " + CJK_FOLD_VARIANTS
    if unigrams and route == "cjk":
        tokenize += " " + CJK_UNIGRAMS
    cols = ", ".join(FTS_COLUMNS)
    extra = ", prefix='1'" if prefix and route == "cjk" else ""
    return (
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5({cols}, "
        f"content='{MESSAGES}', content_rowid='id', tokenize='{tokenize}'{extra})"
    )


def fts_shadow_tables(route: str) -> tuple[str, ...]:
    """The real tables that hold an external-content FTS5 index."""
    table = fts_table(route)
    return tuple(f"{table}_{suffix}" for suffix in ("data", "idx", "docsize", "config"))


def trigger_names(route: str) -> tuple[str, str, str]:
    table = fts_table(route)
    return (f"{table}_ai", f"{table}_ad", f"{table}_au")


_COLS = ", ".join(FTS_COLUMNS)


def _vals(prefix: str) -> str:
    return ", ".join(f"{prefix}.{c}" for c in FTS_COLUMNS)


# The row a write of new.id replaced (REPLACED_DDL); in an UPDATE, only when it moved the id.
_REPLACED_ROW = "FROM messages_replaced WHERE msg_id = new.id"
_MOVED = " AND new.id IS NOT old.id"


def live_triggers(route: str) -> tuple[str, str, str]:
    """Triggers that keep the index equal to the table, row by row."""
    table = fts_table(route)
    ai, ad, au = trigger_names(route)
    insert_new = f"INSERT INTO {table}(rowid, {_COLS}) VALUES (new.id, {_vals('new')});"
    delete_old = f"INSERT INTO {table}({table}, rowid, {_COLS}) VALUES ('delete', old.id, {_vals('old')});"
    delete_replaced = f"INSERT INTO {table}({table}, rowid, {_COLS}) SELECT 'delete', msg_id, {_COLS} {_REPLACED_ROW}"
    return (
        f"CREATE TRIGGER {ai} AFTER INSERT ON {MESSAGES} BEGIN\n    {delete_replaced};\n    {insert_new}\nEND",
        f"CREATE TRIGGER {ad} AFTER DELETE ON {MESSAGES} BEGIN\n    {delete_old}\nEND",
        f"CREATE TRIGGER {au} AFTER UPDATE ON {MESSAGES} WHEN {_changed(*FTS_COLUMNS)} BEGIN\n"
        f"    {delete_old}\n    {delete_replaced}{_MOVED};\n    {insert_new}\nEND",
    )


def pending_triggers(route: str) -> tuple[str, str, str]:
    """Triggers that record, without touching the FTS table, what the index misses.

    Only rows at or below the watermark need a record (see "Index states").
    """
    ai, ad, au = trigger_names(route)
    mark = f"(SELECT indexed_upto FROM index_state WHERE route = '{route}')"

    def first(rowid: str) -> str:
        # no record of it yet: the first old values are kept (no OR IGNORE: see SESSION_TRIGGERS)
        return (f"{rowid} <= {mark} AND NOT EXISTS "
                f"(SELECT 1 FROM fts_backlog WHERE route = '{route}' AND msg_id = {rowid})")

    record_old = (
        f"INSERT INTO fts_backlog(route, msg_id, indexed, {_COLS}) "
        f"SELECT '{route}', old.id, 1, {_vals('old')} WHERE {first('old.id')};"
    )
    record_new = (
        f"INSERT INTO fts_backlog(route, msg_id, indexed) "
        f"SELECT '{route}', new.id, 0 WHERE {first('new.id')};"
    )
    record_replaced = (
        f"INSERT INTO fts_backlog(route, msg_id, indexed, {_COLS}) "
        f"SELECT '{route}', msg_id, 1, {_COLS} {_REPLACED_ROW} AND {first('new.id')}"
    )
    return (
        f"CREATE TRIGGER {ai} AFTER INSERT ON {MESSAGES} BEGIN\n    {record_replaced};\n    {record_new}\nEND",
        f"CREATE TRIGGER {ad} AFTER DELETE ON {MESSAGES} BEGIN\n    {record_old}\nEND",
        f"CREATE TRIGGER {au} AFTER UPDATE ON {MESSAGES} WHEN {_changed(*FTS_COLUMNS)} BEGIN\n"
        f"    {record_old}\n    {record_replaced}{_MOVED};\n    {record_new}\nEND",
    )
