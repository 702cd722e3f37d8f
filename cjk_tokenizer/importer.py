"""Reading a JSONL file of OpenAI-style messages into an Archive.

Each line is one JSON object:

* a message: ``{"session_id": "s1", "role": "user", "content": "...", ...}``
  with any keys ``Archive.add_openai_message`` takes (``reasoning`` /
  ``reasoning_content``, ``tool_calls``, ``tool_call_id``, ``name``,
  ``timestamp``);
* optionally a session header before its messages:
  ``{"type": "session", "id": "s1", "title": "...", "source": "...", "started_at": 1764000000}``.

Blank lines are skipped.  A line that is not a JSON object stops the import
with an error naming the line; the batches before it stay committed.
"""
from __future__ import annotations

import json


class ImportFileError(ValueError):
    """A line of the import file is not usable; the message names the line."""


def read_jsonl(path):
    """Yield ``(line_number, object)`` for each non-blank line of ``path``."""
    with open(path, "r", encoding="utf-8", errors="surrogateescape") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ImportFileError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
            if not isinstance(obj, dict):
                raise ImportFileError(f"{path}:{number}: expected a JSON object, got {type(obj).__name__}")
            yield number, obj


def import_jsonl(archive, path, *, progress=None, batch_size: int = 2000) -> dict:
    """Import ``path`` into ``archive``; returns counts of messages and sessions."""
    headers: dict[str, dict] = {}

    def messages():
        for number, obj in read_jsonl(path):
            if obj.get("type") == "session":
                sid = obj.get("id")
                if not isinstance(sid, str) or not sid:
                    raise ImportFileError(f"{path}:{number}: a session line needs a string 'id'")
                headers[sid] = obj
                continue
            if not isinstance(obj.get("session_id"), str):
                raise ImportFileError(f"{path}:{number}: a message line needs a string 'session_id'")
            yield obj

    count = archive.bulk_import(messages(), batch_size=batch_size, progress=progress)
    for sid, header in headers.items():
        if archive.session(sid) is None:
            archive.add_session(sid, title=header.get("title"), source=header.get("source"),
                                started_at=header.get("started_at"), metadata=header.get("metadata"))
        else:
            changes = {k: header[k] for k in ("title", "source", "metadata") if k in header}
            if changes:
                archive.update_session(sid, **changes)
    return {"messages": count, "sessions": len(headers)}
