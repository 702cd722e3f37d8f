"""What every format reader shares: sources, the items a reader yields, time, JSON lines.

A reader turns one source (a file, stdin, a SQLite file) into a stream of

* :class:`SessionInfo` — what the source says about a session (fields left
  None are not known here and leave the archive's value alone);
* :class:`Record` — one unit of the source with its own identity (a line, a
  source row id), holding zero or more messages.  A record is imported whole
  or not at all;
* :class:`Skip` — a unit that yields no message: ``kind`` names why (a line
  type the archive does not keep, or ``"bad"`` with the reason, reported with
  its 1-based line).

Messages are dicts in the shape ``records.openai_row`` reads (``session_id``,
``role``, ``content``, ``reasoning``, ``tool_name``, ``tool_calls``,
``tool_call_id``, ``timestamp``, ``metadata``), so every format goes through
the archive's one validation path.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass, field

from ..errors import ImportFileError
from ..timeutil import epoch_seconds

__all__ = ["ImportFileError"]  # re-exported: it lives in errors.py, under CjkTokenizerError


@dataclass
class SessionInfo:
    id: str
    title: str | None = None
    source: str | None = None
    started_at: float | None = None
    metadata: dict = field(default_factory=dict)
    line: int | None = None  # where the source said it, for error messages


@dataclass
class Record:
    key: str
    line: int | None
    messages: list
    legacy: str | None = None  # the key an earlier version gave it (already-imported records keep theirs)
    same_as: str | None = None  # the key of a record of this source it copies: stored once, under both keys


def digest(messages) -> str:
    """What a record's messages read as, in a few bytes: equal digests, equal messages."""
    data = json.dumps(messages, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(data.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


@dataclass
class Skip:
    kind: str
    line: int | None = None
    reason: str | None = None


def epoch(value, name: str = "timestamp"):
    """Seconds since the epoch (float) of a source's timestamp, or None when it
    has none.  The package's one time rule (timeutil.py) decides the rest:
    numbers are epoch seconds, ISO-8601 without a zone means UTC; a bad value
    raises TimeValueError (a ValueError) naming it."""
    if value is None or value == "":
        return None
    return epoch_seconds(value, name)


def compact(d: dict) -> dict:
    """``d`` without None / empty values (metadata keeps only what a source said)."""
    return {k: v for k, v in d.items() if v is not None and v != "" and v != [] and v != {}}


class Source:
    """One file (or stdin, ``"-"``) to import: its display name, identity and size."""

    def __init__(self, path: str, fmt: str):
        self.fmt = fmt
        if path == "-":
            self.name = "<stdin>"
            self.identity = "-"
            self.size = None
            self.read_path = None  # set to a spooled copy by the driver
        else:
            self.name = path
            self.identity = os.path.realpath(path)
            self.size = os.path.getsize(path)
            self.read_path = self.identity
        self.done = 0  # bytes (or a proportional stand-in) read so far, for progress

    @property
    def stem(self) -> str:
        if self.name == "<stdin>":
            return "stdin"
        base = os.path.basename(self.identity)
        return base[:-6] if base.endswith(".jsonl") else base


UNFINISHED = "unfinished last line"  # a Skip kind (json_lines)


def json_lines(src: Source):
    """Yield ``(line_number, obj)``; ``obj`` is a dict or a :class:`Skip` of kind "bad".

    Lines are read as bytes so progress can count them; invalid UTF-8 is kept
    as lone surrogates, which the archive then refuses for that line only.
    """
    stream = sys.stdin.buffer if src.read_path is None else open(src.read_path, "rb")
    try:
        for number, raw in enumerate(stream, 1):
            src.done += len(raw)
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a byte order mark (Windows editors write one)
                raw = raw[3:]
            line = raw.decode("utf-8", "surrogateescape")
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                if not raw.endswith(b"\n"):
                    # the last line, not finished: an agent still writing its transcript.
                    # Not a bad record: the next import or sync reads it whole.
                    yield number, Skip(UNFINISHED, number)
                    continue
                # exc.msg may end in "at", the position being left to str(exc)
                where = f"{'' if exc.msg.endswith(' at') else ' at'} column {exc.colno}"
                yield number, Skip("bad", number, f"not valid JSON ({exc.msg}{where})")
                continue
            except RecursionError:
                yield number, Skip("bad", number, "not valid JSON (nested too deeply)")
                continue
            if not isinstance(obj, dict):
                yield number, Skip("bad", number, f"expected a JSON object, got {type(obj).__name__}")
                continue
            yield number, obj
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def peek_objects(path: str, limit: int = 5) -> list:
    """The first few JSON objects of a file (for format detection); bad lines are passed over."""
    out = []
    with open(path, "rb") as f:
        for number, raw in enumerate(f):
            if number >= 50 or len(out) >= limit:
                break
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError):  # RecursionError: nested too deeply to parse
                continue
            if isinstance(obj, dict):
                out.append(obj)
    return out


def text_of(value) -> str | None:
    """Text of a content value that may be a string, a list of text parts/blocks, or absent."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts) if parts else None
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        return value["text"]
    return json.dumps(value, ensure_ascii=False)


def join_text(*pieces) -> str | None:
    """Non-empty distinct pieces joined by a blank line (reasoning from several fields)."""
    out = []
    for p in pieces:
        if isinstance(p, str) and p.strip() and p not in out:
            out.append(p)
    return "\n\n".join(out) if out else None
