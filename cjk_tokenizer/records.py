"""Turning what callers hand the archive into rows it can store.

One job: validate and normalize input *before* any write starts, so a bad
value raises a clear :class:`InputError` and never leaves half a batch behind.

Decisions (documented here because callers rely on them):

* Text must be ``str`` (or None).  A string SQLite cannot store as UTF-8 —
  one holding a lone surrogate such as ``"\\ud800"``, which Python allows but
  UTF-8 cannot encode — is refused with an InputError naming the field and
  position; nothing is replaced silently.  NUL characters are ordinary text:
  stored and returned intact.
* ``tool_calls`` given as a list/dict is stored as JSON text with
  ``ensure_ascii=False`` so CJK inside arguments stays CJK and is indexed as
  such; given as a string, it is stored as is.  JSON (given as a value, or a
  string that parses as JSON) must nest at most ``MAX_JSON_DEPTH`` levels,
  hold no NaN or Infinity (not JSON: other readers reject them), nor a
  number past a double's range (1e400, which reads as Infinity), and be at
  most ``MAX_JSON_CHARS`` characters; reads parse stored JSON by the same
  rule (``load_json``) when it is spelt as the archive writes JSON, and
  return other text (a string given as one, text that breaks the rule) as
  stored.  ``metadata`` is a dict; text, a list or a number (what another
  tool stored, exported) is stored as given.
* OpenAI-style dicts: ``content`` may be a list of parts; the text parts are
  joined with newlines and any other parts (images, audio…) are kept in the
  message's metadata under ``"content_parts"``.  ``reasoning`` and
  ``reasoning_content`` are both accepted (joined if both are present and
  differ).  The legacy role ``function`` is stored as ``tool``.  Keys the
  archive has no column for are kept in metadata, so nothing is dropped: a
  key the message's own ``metadata`` also holds, with another value, goes
  under ``"message_fields"``, and a tool message's ``name`` beside another
  ``tool_name`` under ``"name"``.  A call's ``function.arguments`` (JSON text)
  is stored with its ``\\uXXXX`` escapes of characters past ASCII written as
  the characters (readable_json: the same JSON value), so that CJK in them is
  found; tool_calls given as a string, and tool output, stay as given.
  ``"timestamp": null`` stores no time; a message without the key gets the
  time of writing.
"""
from __future__ import annotations

import json
import math
import re
import threading
import time
from typing import NamedTuple

from .constants import ROLES
from .errors import CjkTokenizerError, TimeValueError, shown
from .schema import FTS_COLUMNS
from .timeutil import epoch_seconds


class InputError(CjkTokenizerError, ValueError):
    """A value the archive cannot store as given; nothing was written."""

    #: Archive.bulk_import: messages committed before the bad record (else None)
    committed: int | None = None


# Stored JSON (tool_calls, metadata) is parsed on every read: these bound what
# one value may cost there, and keep it below the parser's recursion limit.
MAX_JSON_DEPTH = 100
MAX_JSON_CHARS = 32 * 2**20


# Keys of an OpenAI-style message dict that map onto columns.
_KNOWN_KEYS = frozenset({
    "role", "content", "reasoning", "reasoning_content", "tool_calls", "tool_call_id",
    "name", "tool_name", "timestamp", "session_id", "metadata",
})


# ---- reading back ----------------------------------------------------------
#
# What another tool wrote is read too: a TEXT column may hold bytes that are not
# UTF-8 (the sqlite3 shell writes them as given), which APSW refuses to decode,
# or a BLOB, or a number.  Readers select such columns as their bytes
# (``read_sql``) and decode them here, each bad sequence as U+FFFD, as the
# tokenizer and cjk_match read them; a time that is not a number within
# ±MAX_STORED_TIME reads as no time (JSON has no Infinity).


def read_sql(column: str) -> str:
    """SQL reading ``column`` as its bytes, for stored_text (NULL stays NULL)."""
    return f"CAST({column} AS BLOB)"


def read_number_sql(column: str) -> str:
    """SQL reading a number column: a number as it is, anything else (text another tool
    wrote there, maybe not UTF-8) as its bytes, for stored_time."""
    return f"CASE WHEN typeof({column}) IN ('integer', 'real') THEN {column} ELSE {read_sql(column)} END"


# A big column comes to an SQL function once per term of a query: its last decoding is
# kept, per thread, as one str (comparing the bytes costs a tenth of decoding them, and
# the same str lets the big-text checks find their work done).
_BIG_BYTES = 1 << 16
_decoded = threading.local()


def stored_text(value):
    """A text column's value read through read_sql, as a str (or None)."""
    if not isinstance(value, bytes):
        return value
    if len(value) <= _BIG_BYTES:
        return value.decode("utf-8", "replace")
    last = getattr(_decoded, "last", None)
    if last is None or last[0] != value:
        last = _decoded.last = (value, value.decode("utf-8", "replace"))
    return last[1]


# A stored time beyond this (Infinity, or a number no date has) is no time: the
# searches' time filters and the browse order compare against the same bound.
MAX_STORED_TIME = 1e300


def stored_time(value):
    """A stored time as a number within ±MAX_STORED_TIME, or None: text another
    tool wrote there (an ISO date too), Infinity and NaN are no time, as the
    searches' time filters and the browse order take them (SQLite compares text
    above every number)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and -MAX_STORED_TIME <= value <= MAX_STORED_TIME:
        return value
    return None


def text(value, field: str):
    """``value`` as storable text, or None."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"{field} must be a str or None, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ord(value[exc.start])
        if 0xDC80 <= bad <= 0xDCFF:  # a byte surrogateescape kept: the source was not UTF-8 there
            raise InputError(
                f"{field} holds byte 0x{bad - 0xDC00:02X} at position {exc.start}, which is not UTF-8 "
                "(SQLite cannot store it as text); fix the source or decode it with errors='replace'"
            ) from None
        raise InputError(
            f"{field} holds a lone surrogate {value[exc.start]!r} at position {exc.start}, "
            "which UTF-8 (and so SQLite) cannot store; decode the source with errors='replace' "
            "or fix the text"
        ) from None
    return value


# A session id is shown whole wherever its session is (an agent passes it back), so
# it is bounded: session_search's results are held to a size.
MAX_ID_CHARS = 512


def ident(value, field: str) -> str:
    """A session id: a non-empty str of at most MAX_ID_CHARS characters."""
    if not isinstance(value, str) or not value:
        raise InputError(f"{field} must be a non-empty str, not {shown(value)}")
    if len(value) > MAX_ID_CHARS:
        raise InputError(f"{field} is {len(value):,} characters long; at most {MAX_ID_CHARS} are allowed")
    return text(value, field)


def message_id(value) -> int | None:
    """A message id: an int (or a str of digits); None for one outside SQLite's
    integers, which no message can have."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"message_id must be an int, not {value!r}")
    return value if -(2**63) <= value < 2**63 else None


def timestamp(value, field: str = "timestamp", *, default_now: bool = True):
    """Seconds since the epoch (float), by the package's one time rule (timeutil.py:
    numbers, ISO-8601 strings, datetimes; no zone means UTC).  None is now, or
    None when ``default_now`` is false."""
    if value is None:
        return time.time() if default_now else None
    try:
        return epoch_seconds(value, field)
    except TimeValueError as exc:
        raise InputError(str(exc)) from None


class _Constant(ValueError):
    """NaN, Infinity or -Infinity in JSON text: Python's json accepts them, JSON does not."""


class _Huge(ValueError):
    """A JSON number past a double's range."""


def _no_constant(name):
    raise _Constant(name)


def _finite(number: str) -> float:
    """A JSON number as a float; one past a double's range (1e400) would read as
    Infinity and be written back as such, which is not JSON."""
    value = float(number)
    if math.isinf(value):
        raise _Huge(number[:40])
    return value


class _NotJson(InputError):
    """Text that does not parse as JSON at all."""


def _check_depth(value, field: str) -> None:
    """Refuse containers nested deeper than MAX_JSON_DEPTH (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, (list, tuple)):
            continue
        if depth > MAX_JSON_DEPTH:
            raise InputError(f"{field} nests deeper than {MAX_JSON_DEPTH} levels")
        stack.extend((child, depth + 1) for child in item)


def _check_size(value: str, field: str) -> None:
    if len(value) > MAX_JSON_CHARS:
        raise InputError(f"{field} is {len(value):,} characters of JSON; at most {MAX_JSON_CHARS:,} are allowed")


def load_json(value: str, field: str = "value"):
    """Parse JSON text by the rules above; InputError if it breaks them."""
    _check_size(value, field)
    try:
        parsed = json.loads(value, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise InputError(f"{field} nests deeper than {MAX_JSON_DEPTH} levels") from None
    except _Constant as exc:
        raise InputError(f"{field} holds {exc}, which is not JSON") from None
    except _Huge as exc:
        raise InputError(f"{field} holds the number {exc}, past a double's range: it would read as "
                         "Infinity, which is not JSON") from None
    except ValueError as exc:
        raise _NotJson(f"{field} is not valid JSON: {exc}") from None
    _check_depth(parsed, field)
    return parsed


def json_text(value, field: str):
    """Lists/dicts as JSON text; strings as they are; None stays None.

    A string that looks like JSON ('[' or '{' first) is held to the JSON rules
    (size, depth, no NaN) when it parses; one that does not parse is text.
    """
    if value is None:
        return None
    if isinstance(value, str):
        value = text(value, field)
        if value[:1] in ("[", "{"):
            try:
                load_json(value, field)
            except _NotJson:
                pass
        return value
    _check_depth(value, field)
    try:
        dumped = json.dumps(value, ensure_ascii=False, allow_nan=False)
    except ValueError as exc:  # NaN/Infinity, or a circular reference
        if "float" in str(exc):
            raise InputError(f"{field} holds NaN or Infinity, which JSON cannot represent") from None
        raise InputError(f"{field} is not JSON-serializable: {exc}") from None
    except TypeError as exc:
        raise InputError(f"{field} is not JSON-serializable: {exc}") from None
    _check_size(dumped, field)
    return text(dumped, field)


def metadata_(value):
    """A dict of extra fields as JSON text; None or {} store nothing.  Text, a
    list or a number (what another tool may have stored, read back and
    exported as it is) is stored as given, as tool_calls are."""
    if value is None or value == {} or value == [] or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (dict, str, list, int, float)):
        raise InputError(f"metadata must be a dict or None, not {type(value).__name__}")
    return json_text(value, "metadata")


def role(value) -> str:
    if value not in ROLES:
        raise InputError(f"role must be one of {', '.join(ROLES)}, not {value!r}")
    return value


class MessageRow(NamedTuple):
    """One message as the archive stores it, validated: the messages table's
    columns after ``id``, in order, under their column names."""

    session_id: str
    role: str
    content: str | None
    reasoning: str | None
    tool_name: str | None
    tool_calls: str | None  # JSON text, or text as given
    tool_call_id: str | None
    timestamp: float
    metadata: str | None  # JSON text of a dict, or None

    def text_chars(self) -> int:
        """Characters of text the FTS indexes take in (what bounds a batch)."""
        return sum(len(getattr(self, c) or "") for c in FTS_COLUMNS)


# The columns a message is written with, in MessageRow's order.
MESSAGE_COLUMNS = MessageRow._fields


def message_row(session_id, role_, content=None, *, reasoning=None, tool_name=None, tool_calls=None,
                tool_call_id=None, timestamp_=None, metadata=None, no_time: bool = False) -> MessageRow:
    """The stored form of one message, validated (``timestamp_`` None: now, or
    none at all with ``no_time``)."""
    return MessageRow(
        ident(session_id, "session_id"),
        role(role_),
        text(content, "content"),
        text(reasoning, "reasoning"),
        text(tool_name, "tool_name"),
        tool_calls_text(tool_calls),
        text(tool_call_id, "tool_call_id"),
        timestamp(timestamp_, default_now=not no_time),
        metadata_(metadata),
    )


def parts_text(parts, extra: dict) -> str | None:
    """The text parts of a list-shaped content joined with newlines; the other parts go to
    ``extra["content_parts"]``."""
    texts, others = [], []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text") \
                and isinstance(part.get("text"), str):
            texts.append(part["text"])
        else:
            others.append(part)
    if others:
        extra["content_parts"] = others
    return "\n".join(texts) if texts else None


# JSON's escape of one character: a surrogate pair, one \uXXXX, or any other
# (\\, \", \n ...), matched whole so that an escaped backslash before "u" is not read
# as an escape of its own.
_JSON_ESCAPE = re.compile(r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})"
                          r"|\\u([0-9a-fA-F]{4})|\\.", re.S)


def _character(m: re.Match) -> str:
    if m.group(1):
        return chr(0x10000 + ((int(m.group(1), 16) - 0xD800) << 10) + int(m.group(2), 16) - 0xDC00)
    cp = int(m.group(3), 16) if m.group(3) else 0
    return chr(cp) if cp >= 0x80 and not 0xD800 <= cp <= 0xDFFF else m.group(0)


def readable_json(text: str) -> str:
    """JSON text with each \\uXXXX escape of a character past ASCII written as that
    character: the same JSON value, in which the characters can be found (json.dumps
    writes CJK as \\u escapes unless told not to).  Anything else stays as it is,
    and text that is not JSON is returned unchanged."""
    if "\\u" not in text:
        return text
    try:
        value = json.loads(text)
        out = _JSON_ESCAPE.sub(_character, text)
        return out if json.loads(out) == value else text
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's reach
        return text


def _readable_call(call):
    fn = call.get("function") if isinstance(call, dict) else None
    if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
        return {**call, "function": {**fn, "arguments": readable_json(fn["arguments"])}}
    return call


def readable_calls(calls):
    """Tool calls (a list of calls, or one) with each call's ``function.arguments``
    (JSON text) readable_json; anything else as it is."""
    return [_readable_call(c) for c in calls] if isinstance(calls, list) else _readable_call(calls)


def tool_calls_text(value):
    """``tool_calls`` as stored: json_text of the calls made readable (readable_calls);
    a string stays as given."""
    return json_text(readable_calls(value), "tool_calls")


def openai_row(session_id, msg) -> MessageRow:
    """The stored form of an OpenAI-style message dict in session ``session_id`` (see module doc)."""
    if not isinstance(msg, dict):
        raise InputError(f"a message must be a dict, not {type(msg).__name__}")
    extra = {k: v for k, v in msg.items() if k not in _KNOWN_KEYS}
    role_ = "tool" if msg.get("role") == "function" else msg.get("role")
    # a participant's name, or a tool's beside another tool_name given: kept in metadata
    named = "name" in msg and (role_ != "tool" or msg.get("tool_name", msg["name"]) != msg["name"])
    given_meta = msg.get("metadata")
    if given_meta is not None and not isinstance(given_meta, dict):
        if extra or named:
            raise InputError("metadata must be a dict when the message has other fields to keep in it")
        extra = given_meta  # stored as given (metadata_)
    elif given_meta:
        # nothing dropped: a field that metadata also names, with another value, is kept apart
        clash = {k: v for k, v in extra.items() if k in given_meta and given_meta[k] != v}
        extra = {**given_meta, **{k: v for k, v in extra.items() if k not in clash}}
        if clash:
            extra["message_fields"] = clash
    if named:
        extra["name"] = msg["name"]
    content = msg.get("content")
    if isinstance(content, list):
        content = parts_text(content, extra)
    reasoning = [r for r in (msg.get("reasoning"), msg.get("reasoning_content")) if r is not None]
    if any(not isinstance(r, str) for r in reasoning):
        # e.g. structured reasoning details: keep them, index nothing from them
        extra["reasoning"] = [r for r in reasoning if not isinstance(r, str)]
        reasoning = [r for r in reasoning if isinstance(r, str)]
    if len(reasoning) == 2 and reasoning[0] == reasoning[1]:
        reasoning = reasoning[:1]
    reasoning_text = "\n\n".join(reasoning) if reasoning else None
    tool_calls = msg.get("tool_calls")
    if tool_calls == []:
        tool_calls = None
    return message_row(
        session_id, role_, content,
        reasoning=reasoning_text,
        tool_name=msg.get("tool_name", msg.get("name") if role_ == "tool" else None),
        tool_calls=tool_calls,
        tool_call_id=msg.get("tool_call_id"),
        timestamp_=msg.get("timestamp"),
        metadata=extra or None,
        # "timestamp": null says there is no time (an export of a row without one);
        # no timestamp at all is the time of writing
        no_time=msg.get("timestamp", 0) is None,
    )
