"""Claude Code transcripts: ``~/.claude/projects/<project>/<session-id>.jsonl``.

Each line is one JSON object with ``type``; conversational lines carry
``uuid``, ``sessionId``, ``timestamp`` (ISO-8601), ``cwd``, ``gitBranch`` and a
``message`` in the Anthropic Messages shape.  What becomes of each:

* ``user``: string content, or ``text`` blocks, is one user message; each
  ``tool_result`` block (string or list-of-blocks content, ``is_error``) is a
  tool message linked by ``tool_use_id`` and named after the ``tool_use`` that
  asked for it.
* ``assistant``: ``text`` blocks are what was said, ``thinking`` blocks the
  reasoning, ``tool_use`` blocks the tool_calls (OpenAI shape, arguments as
  JSON text).  Claude Code writes one line per content block; each stays its
  own message.
* ``summary``: the session title (not counted as skipped).
* ``system``, ``progress``, ``file-history-snapshot`` and unknown types are
  skipped and counted by type.

A line's identity is its ``uuid`` (its line number when it has none), in
whichever file it is read (``global_key``).
Unknown fields are ignored; ``cwd``, ``gitBranch``, ``version``, ``uuid``,
``isSidechain`` and the model are kept in each message's metadata.
"""
from __future__ import annotations

import json

from .base import Record, SessionInfo, Skip, compact, epoch, json_lines, text_of

NAME = "claude-code"


def global_key(key: str) -> bool:
    """Does ``key`` name its record wherever the file lies?  A line's uuid does
    (a moved or copied transcript holds the same lines); a line number does not."""
    return not key.startswith("line ")

_TYPES = {"user", "assistant", "summary", "system", "progress", "file-history-snapshot"}


def detect(objs: list) -> bool:
    return any(o.get("type") in _TYPES and "payload" not in o
               and ("sessionId" in o or "leafUuid" in o or "uuid" in o or o.get("type") == "file-history-snapshot")
               for o in objs)


def _meta(obj: dict, message: dict) -> dict:
    return compact({
        "uuid": obj.get("uuid"),
        "cwd": obj.get("cwd"),
        "gitBranch": obj.get("gitBranch"),
        "version": obj.get("version"),
        "isSidechain": obj.get("isSidechain") or None,
        "isMeta": obj.get("isMeta") or None,
        "model": message.get("model"),
    })


def _blocks(message: dict) -> list:
    """message.content as a list of block dicts (a string is one text block)."""
    content = message.get("content")
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise ValueError("message.content must be a string or a list of blocks")
    return [b for b in content if isinstance(b, dict)]


def _user(obj, message, sid, ts, tool_names):
    meta = _meta(obj, message)
    out, texts, others = [], [], []
    for block in _blocks(message):
        kind = block.get("type")
        if kind == "text":
            texts.append(block.get("text") or "")
        elif kind == "tool_result":
            call_id = block.get("tool_use_id")
            out.append({
                "session_id": sid, "role": "tool", "content": text_of(block.get("content")),
                "tool_call_id": call_id, "tool_name": tool_names.get(call_id), "timestamp": ts,
                "metadata": compact({**meta, "is_error": block.get("is_error") or None}),
            })
        else:
            others.append(block)
    if texts or others:
        user_meta = compact({**meta, "content_parts": others})
        out.insert(0, {"session_id": sid, "role": "user", "content": "\n".join(texts) if texts else None,
                       "timestamp": ts, "metadata": user_meta})
    return out


def _assistant(obj, message, sid, ts, tool_names):
    texts, thoughts, calls = [], [], []
    for block in _blocks(message):
        kind = block.get("type")
        if kind == "text":
            texts.append(block.get("text") or "")
        elif kind == "thinking":
            thoughts.append(block.get("thinking") or "")
        elif kind == "tool_use":
            tool_names[block.get("id")] = block.get("name")
            calls.append({"id": block.get("id"), "type": "function",
                          "function": {"name": block.get("name"),
                                       "arguments": json.dumps(block.get("input"), ensure_ascii=False)}})
    if not (texts or thoughts or calls):
        return []
    return [{
        "session_id": sid, "role": "assistant", "content": "\n".join(texts) if texts else None,
        "reasoning": "\n\n".join(t for t in thoughts if t) or None, "tool_calls": calls or None,
        "timestamp": ts, "metadata": _meta(obj, message),
    }]


def read(src):
    tool_names: dict = {}
    seen: set = set()
    pending_title = None
    last_sid = None
    for number, obj in json_lines(src):
        if isinstance(obj, Skip):
            yield obj
            continue
        kind = obj.get("type")
        try:
            if kind == "summary":
                title = obj.get("summary")
                if last_sid is None:
                    pending_title = title
                else:
                    yield SessionInfo(last_sid, title=title, line=number)
                continue
            if kind not in ("user", "assistant"):
                yield Skip(str(kind) if kind else "untyped")
                continue
            sid = obj.get("sessionId") or src.stem
            if not isinstance(sid, str):
                raise ValueError("sessionId must be a string")
            uuid = obj.get("uuid")
            if uuid is not None and not isinstance(uuid, str):  # "" is no uuid: the line number names it
                raise ValueError(f"uuid must be a string, not {repr(uuid)[:40]}")
            ts = epoch(obj.get("timestamp"))
            if sid not in seen:
                seen.add(sid)
                yield SessionInfo(sid, title=pending_title, source=NAME, started_at=ts,
                                  metadata=compact({"cwd": obj.get("cwd"), "gitBranch": obj.get("gitBranch")}),
                                  line=number)
                pending_title = None
            last_sid = sid
            message = obj.get("message")
            if not isinstance(message, dict):
                raise ValueError(f"a {kind} line needs a 'message' object")
            build = _user if kind == "user" else _assistant
            messages = build(obj, message, sid, ts, tool_names)
            yield Record(uuid or f"line {number}", number, messages)
        except ValueError as exc:
            yield Skip("bad", number, str(exc))
    if pending_title is not None:
        yield SessionInfo(src.stem, title=pending_title)
