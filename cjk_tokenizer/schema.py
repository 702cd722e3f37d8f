"""The archive's schema, in one place.

Tables
------
sessions      one row per conversation.
messages      one row per message; ``id`` is the rowid every FTS index uses.
index_state   one row per FTS index: whether it exists, is live (served) or
              stale (exists but behind, e.g. written while the extension was
              missing), and how far a rebuild/catch-up has come.

FTS5 indexes (external content on ``messages``, ``content_rowid='id'``), all
over the same columns, in this order: content, reasoning, tool_name, tool_calls.

==========  ===================  ================================================
route       table                tokenizer
==========  ===================  ================================================
cjk         messages_fts_cjk     cjk_unicode61 remove_diacritics 2 (extension)
unicode61   messages_fts_u61     unicode61 remove_diacritics 2 (always)
trigram     messages_fts_tri     trigram (optional; substring fallback)
==========  ===================  ================================================

Tool results are messages with role 'tool' and are indexed whole.
"""
from __future__ import annotations

MESSAGES = "messages"
SESSIONS = "sessions"

# FTS columns, in index order.  Aux functions see only column numbers, so every
# caller that labels columns uses this tuple.
FTS_COLUMNS = ("content", "reasoning", "tool_name", "tool_calls")
# Columns searched unless include_reasoning=True.
DEFAULT_COLUMNS = ("content", "tool_name", "tool_calls")

# route name -> (fts table, tokenize= argument)
FTS_INDEXES = {
    "cjk": ("messages_fts_cjk", "cjk_unicode61 remove_diacritics 2"),
    "unicode61": ("messages_fts_u61", "unicode61 remove_diacritics 2"),
    "trigram": ("messages_fts_tri", "trigram"),
}

SESSIONS_DDL = """
CREATE TABLE IF NOT EXISTS sessions (
    id          TEXT PRIMARY KEY,
    title       TEXT,
    source      TEXT,
    started_at  REAL,
    metadata    TEXT
)"""

MESSAGES_DDL = """
CREATE TABLE IF NOT EXISTS messages (
    id           INTEGER PRIMARY KEY,
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

MESSAGES_INDEXES_DDL = (
    "CREATE INDEX IF NOT EXISTS messages_session ON messages(session_id, id)",
    "CREATE INDEX IF NOT EXISTS messages_timestamp ON messages(timestamp)",
)

INDEX_STATE_DDL = """
CREATE TABLE IF NOT EXISTS index_state (
    route        TEXT PRIMARY KEY,
    status       TEXT NOT NULL CHECK (status IN ('live', 'stale', 'building')),
    indexed_upto INTEGER NOT NULL DEFAULT 0,
    updated_at   REAL
)"""


def fts_ddl(route: str) -> str:
    table, tokenize = FTS_INDEXES[route]
    cols = ", ".join(FTS_COLUMNS)
    return (
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5({cols}, "
        f"content='{MESSAGES}', content_rowid='id', tokenize='{tokenize}')"
    )
