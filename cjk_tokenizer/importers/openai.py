"""OpenAI-style chat JSONL, in both shapes found in the wild.

* One message per line: ``{"session_id": "s1", "role": "user", "content": "..."}``
  with any keys ``Archive.add_openai_message`` takes (``reasoning`` /
  ``reasoning_content``, ``tool_calls``, ``tool_call_id``, ``name``,
  ``timestamp``, ``metadata``).  A line without ``session_id`` belongs to a
  session named after the file.  Optionally a session header line before or
  after its messages: ``{"type": "session", "id": "s1", "title": "...",
  "source": "...", "started_at": 1764000000, "metadata": {...}}`` — its
  ``started_at`` wins over the first message's time.  This is also the shape
  ``cjk-tokenizer export`` writes.
* One session per line (the fine-tuning shape): ``{"messages": [...]}``, with
  optional ``id``/``session_id`` and ``title``; other keys (``tools``, …) are
  kept as session metadata.  Without an id the session is ``<file>:<line>``.

Timestamps: epoch seconds or ISO-8601 (naive means UTC).
"""
from __future__ import annotations

from .base import Record, SessionInfo, Skip, compact, epoch, json_lines

NAME = "openai"


def detect(objs: list) -> bool:
    first = objs[0] if objs else {}
    return (isinstance(first.get("messages"), list) or "role" in first
            or (first.get("type") == "session" and "id" in first))


def _message(obj: dict, sid: str) -> dict:
    msg = dict(obj)
    msg["session_id"] = sid
    if msg.get("timestamp") is not None:
        msg["timestamp"] = epoch(msg["timestamp"])
    return msg


def read(src):
    for number, obj in json_lines(src):
        if isinstance(obj, Skip):
            yield obj
            continue
        try:
            if obj.get("type") == "session":
                sid = obj.get("id")
                if not isinstance(sid, str) or not sid:
                    raise ValueError("a session line needs a string 'id'")
                meta = obj.get("metadata")  # an object; text or a list another tool stored is kept as given
                yield SessionInfo(sid, title=obj.get("title"), source=obj.get("source"),
                                  started_at=epoch(obj.get("started_at"), "started_at"), metadata=meta or {}, line=number)
            elif isinstance(obj.get("messages"), list):
                sid = obj.get("id", obj.get("session_id")) or f"{src.stem}:{number}"
                if not isinstance(sid, str):
                    raise ValueError("a session's 'id' must be a string")
                rest = compact({k: v for k, v in obj.items() if k not in ("messages", "id", "session_id", "title")})
                yield SessionInfo(sid, title=obj.get("title"), metadata=rest, line=number)
                msgs = obj["messages"]
                if not all(isinstance(m, dict) for m in msgs):
                    raise ValueError("every item of 'messages' must be an object")
                yield Record(str(number), number, [_message(m, sid) for m in msgs])
            else:
                sid = obj.get("session_id", src.stem)
                if not isinstance(sid, str) or not sid:
                    raise ValueError("'session_id' must be a non-empty string")
                yield Record(str(number), number, [_message(obj, sid)])
        except ValueError as exc:
            yield Skip("bad", number, str(exc))
