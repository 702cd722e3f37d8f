"""Hermes Agent's ``state.db`` (SQLite), read through a read-only connection.

The file is opened with ``mode=ro``: nothing is ever written to it, not even
a journal-mode change (SQLite may create the empty ``-wal``/``-shm`` companions
that reading a WAL database needs, when Hermes is not running).  Read: ``sessions`` (title, source, started_at,
ended_at, model, parent_session_id, end_reason, cwd, git_branch) and
``messages`` in id order — content; tool outputs (role ``tool``) with their
``tool_name`` and ``tool_call_id``; ``tool_calls``; ``timestamp``; and the
reasoning: ``reasoning``, ``reasoning_content`` and the text inside
``reasoning_details`` and ``codex_reasoning_items`` (JSON), joined with
duplicates dropped.  Content Hermes stored as a list of parts (text and
images: ``"\\x00json:"`` and the parts as JSON) becomes its text parts, the
other parts kept in metadata under ``content_parts``, as records.py does.
The FTS side tables are ignored.  Columns a version does
not have are read as absent, so older and newer schemas import alike.

A message's identity is its ``messages.id``.  Hermes rewrites a transcript
(``/retry``, ``/undo``, ``/compress``: ``replace_messages``) by deleting its
rows and inserting them again under new ids; a new row that reads exactly as
a row gone from the source since it was imported is that message again, not
a new one (``keys`` lets the driver see which are gone).  A compaction that keeps
its rows (``archive_and_compact``: the old rows stay, ``active = 0``) inserts
the kept tail again as new rows: a row reading exactly as an earlier
soft-archived row (same session, role, text, time, reasoning…), after a row
of a later time, is that message again, stored once.  (Hermes' agent writes
the tail it keeps with the compaction's own time: such a copy reads as a new
message at that time, and is stored as one.)  Session rows are
re-read on every import, so a title set later reaches the archive on the next
sync.
"""
from __future__ import annotations

import json
import urllib.parse

import apsw

from ..constants import ROLES
from ..records import parts_text, read_number_sql, read_sql, stored_text
from .base import ImportFileError, Record, SessionInfo, Skip, compact, digest, epoch, join_text

NAME = "hermes"
SQLITE_MAGIC = b"SQLite format 3\x00"
_SESSION_META = ("model", "parent_session_id", "end_reason", "cwd", "git_branch")
_TEXT_KEYS = ("text", "summary", "thinking", "content")


def is_sqlite(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(16) == SQLITE_MAGIC
    except OSError:
        return False


# Hermes may hold its database's lock for a moment (a rollback-journal state.db
# locks readers out while it writes): wait for it as long as an archive waits.
BUSY_TIMEOUT_MS = 10_000


def open_readonly(path: str) -> apsw.Connection:
    uri = "file:" + urllib.parse.quote(path) + "?mode=ro"
    try:
        conn = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        conn.set_busy_timeout(BUSY_TIMEOUT_MS)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except apsw.Error as exc:
        raise ImportFileError(f"{path}: cannot open as SQLite read-only ({exc})") from None
    return conn


def _columns(conn, table: str) -> set:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def detect_db(path: str) -> bool:
    """A Hermes state.db: sessions + messages with Hermes' columns (not a cjk_tokenizer archive)."""
    if not is_sqlite(path):
        return False
    try:
        conn = open_readonly(path)
    except ImportFileError:
        return False
    try:
        msg = _columns(conn, "messages")
        return {"session_id", "role", "content"} <= msg and "id" in _columns(conn, "sessions") \
            and ("reasoning_content" in msg or "schema_version" in
                 {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}) \
            and "index_state" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    except apsw.Error:
        return False
    finally:
        conn.close()


def keys(src) -> set:
    """The identities of the messages the source holds now.

    Read in the snapshot ``read`` then reads the messages from (the connection
    stays open on ``src`` for it): Hermes rewriting its transcript between the
    two reads would make the rows it re-inserted look new, not rows that moved."""
    conn = open_readonly(src.read_path)
    try:
        conn.execute("BEGIN")
        found = {str(r[0]) for r in conn.execute("SELECT id FROM messages")}
    except apsw.Error as exc:
        conn.close()
        raise ImportFileError(f"{src.name}: reading the Hermes database failed ({exc})") from None
    src.hermes_snapshot = conn
    return found


def _texts(value, out: list) -> list:
    """Every reasoning text inside parsed JSON (``text``/``summary``/... strings), in order."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k in _TEXT_KEYS and isinstance(v, str):
                out.append(v)
            elif isinstance(v, (dict, list)):
                _texts(v, out)
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, str):
                out.append(v)
            else:
                _texts(v, out)
    return out


def _json_texts(raw) -> list:
    if not raw:
        return []
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return [raw]
    return _texts(raw, [])


def _parsed(raw):
    """tool_calls as parsed JSON, so the archive re-writes it with CJK unescaped (searchable)."""
    if isinstance(raw, str):
        try:
            return json.loads(raw) or None
        except ValueError:
            return raw
    return raw or None


# What Hermes writes before the JSON of content that is a list (or dict) of parts.
_JSON_CONTENT = "\x00json:"


def _content(raw, meta: dict):
    """A message's content as text: Hermes' encoding of parts decoded (see the module doc)."""
    if not (isinstance(raw, str) and raw.startswith(_JSON_CONTENT)):
        return raw
    try:
        parts = json.loads(raw[len(_JSON_CONTENT):])
    except (ValueError, RecursionError):
        return raw
    if isinstance(parts, dict):
        parts = [parts]
    return parts_text(parts, meta) if isinstance(parts, list) else raw


# Columns read as their bytes (times and flags: numbers as they are, text as bytes) and
# decoded per row (_decoded): a value that is not UTF-8 makes that row a bad record, where
# APSW's own decoding stopped the read.
_NUMBERS = frozenset({"started_at", "ended_at", "timestamp", "active"})


def _select(conn, table: str, wanted: tuple, order: str) -> tuple:
    have = _columns(conn, table)

    def column(c: str) -> str:
        if c not in have:
            return f"NULL AS {c}"
        if c in _NUMBERS:
            return read_number_sql(c)
        return c if (table, c) == ("messages", "id") else read_sql(c)  # an INTEGER PRIMARY KEY is a number

    return conn.execute(f"SELECT {', '.join(map(column, wanted))} FROM {table} ORDER BY {order}")


def _decoded(r: dict) -> dict:
    """The row with its bytes read as UTF-8; ValueError naming the field that is not."""
    for k, v in r.items():
        if isinstance(v, bytes):
            try:
                r[k] = v.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"{k} is not UTF-8 text (byte 0x{v[exc.start]:02X} at byte {exc.start})") from None
    return r


def read(src):
    conn = getattr(src, "hermes_snapshot", None)  # keys() read the ids in it
    src.hermes_snapshot = None
    if conn is None:
        conn = open_readonly(src.read_path)
    try:
        if not conn.in_transaction:
            conn.execute("BEGIN")  # one snapshot for the whole read
        if not {"session_id", "role"} <= _columns(conn, "messages"):
            raise ImportFileError(f"{src.name}: not a Hermes state.db (no messages table with session_id, role)")
        s_cols = ("id", "title", "source", "started_at", "ended_at") + _SESSION_META
        for row in _select(conn, "sessions", s_cols, "started_at, id"):
            r = dict(zip(s_cols, row))
            try:
                r = _decoded(r)
                meta = compact({k: r[k] for k in _SESSION_META})
                if r["ended_at"] is not None:
                    meta["ended_at"] = epoch(r["ended_at"], "ended_at")
                yield SessionInfo(str(r["id"]), title=r["title"], source=r["source"],
                                  started_at=epoch(r["started_at"], "started_at"), metadata=meta)
            except ValueError as exc:
                yield Skip("bad", None, f"session {stored_text(r['id'])!r}: {exc}")
        top = conn.execute("SELECT max(id) FROM messages").fetchone()[0] or 1
        m_cols = ("id", "session_id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "timestamp",
                  "finish_reason", "reasoning", "reasoning_content", "reasoning_details", "codex_reasoning_items",
                  "active")
        archived: dict = {}  # digest -> key of the first soft-archived row reading so (see the module doc)
        latest: dict = {}  # session id -> the latest time of its rows read so far
        for row in _select(conn, "messages", m_cols, "id"):
            r = dict(zip(m_cols, row))
            if src.size and isinstance(r["id"], int):
                src.done = src.size * r["id"] // top
            try:
                r = _decoded(r)
            except ValueError as exc:
                yield Skip("bad", None, f"message id {r['id']}: {exc}")
                continue
            if r["role"] not in ROLES:
                yield Skip(f"role {r['role']}")
                continue
            try:
                reasoning = join_text(r["reasoning"], r["reasoning_content"], *_json_texts(r["reasoning_details"]),
                                      *_json_texts(r["codex_reasoning_items"]))
                meta = compact({"finish_reason": r["finish_reason"]})
                content = _content(r["content"], meta)
                message = {
                    "session_id": str(r["session_id"]), "role": r["role"], "content": content,
                    "reasoning": reasoning, "tool_calls": _parsed(r["tool_calls"]),
                    "tool_call_id": r["tool_call_id"], "tool_name": r["tool_name"],
                    "timestamp": epoch(r["timestamp"]), "metadata": meta,
                }
                same, ts, sid = None, message["timestamp"], message["session_id"]
                if archived or r["active"] == 0:
                    d = digest([message])
                    # a copy comes after a row later than it (the compaction's summary, or the turns
                    # after the one copied); two equal rows in a row are two messages
                    if ts is not None and latest.get(sid, ts) > ts:
                        same = archived.get(d)
                    if same is None and r["active"] == 0:
                        archived.setdefault(d, str(r["id"]))
                if ts is not None:
                    latest[sid] = max(ts, latest.get(sid, ts))
                yield Record(str(r["id"]), None, [message], same_as=same)
            except ValueError as exc:
                yield Skip("bad", None, f"message id {r['id']}: {exc}")
        conn.execute("COMMIT")
    except apsw.Error as exc:
        raise ImportFileError(f"{src.name}: reading the Hermes database failed ({exc})") from None
    finally:
        conn.close()
