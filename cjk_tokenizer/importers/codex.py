"""OpenAI Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``.

Each line is ``{"timestamp", "type", "payload"}``:

* ``session_meta`` (first line): the session (``id``, ``cwd``,
  ``cli_version``, ``originator``, ``model_provider`` kept);
  ``turn_context``: the model, kept in the session's metadata;
* ``response_item`` — the conversation itself: ``message`` (its
  ``input_text``/``output_text`` parts), ``reasoning`` (the ``summary`` texts
  and any ``reasoning_text`` content become an assistant message's reasoning;
  an encrypted-only item is skipped), ``function_call`` /
  ``custom_tool_call`` / ``local_shell_call`` / ``web_search_call`` as
  tool_calls, ``function_call_output`` / ``custom_tool_call_output`` as tool
  messages named after their call;
* ``event_msg``: UI events.  The conversational ones (``user_message``,
  ``agent_message``, ``agent_reasoning``) mirror response items, so every
  event is skipped (counted) and nothing is stored twice.

Older rollouts whose lines are bare response items (no ``payload``) read the
same way.  A line's identity is its session's id (``session_meta``) and its
line number, wherever the file lies, since rollouts only grow and Codex moves
an archived one to ``~/.codex/archived_sessions/``: the same line read from
there is not stored again (``global_key``).  Without a session id it is the
line number in that file.  A line holding other text than the one imported
under its key is a new record (``POSITIONAL_KEYS``): another rollout of the
same session may hold other lines at those numbers.
"""
from __future__ import annotations

import json

from .base import Record, SessionInfo, Skip, compact, epoch, json_lines, text_of

NAME = "codex"
# A key names a place in a session's rollout, not one text: found elsewhere with
# other text, the record is another one (the driver stores it).
POSITIONAL_KEYS = True


def global_key(key: str) -> bool:
    """Does ``key`` name its record wherever the file lies (a session id's line)?"""
    return key.startswith("session ")
_LINE_TYPES = {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
_CALLS = {"function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
_OUTPUTS = {"function_call_output", "custom_tool_call_output"}


# An older rollout: a bare session_meta first ({"id", "timestamp", "instructions", ...}),
# ``{"record_type": "state"}`` lines, and the response items as lines of their own.
_OLDER_ITEMS = {"message", "reasoning"} | _CALLS | _OUTPUTS


def detect(objs: list) -> bool:
    if any(o.get("type") in _LINE_TYPES and isinstance(o.get("payload"), dict) for o in objs):
        return True
    first = objs[0] if objs else {}
    meta = isinstance(first.get("id"), str) and "timestamp" in first and "instructions" in first
    items = [o for o in objs[1:] if "record_type" not in o]
    return meta and all(o.get("type") in _OLDER_ITEMS for o in items) and (
        bool(items) or any(o.get("record_type") == "state" for o in objs))


def _output_text(output):
    if isinstance(output, str) and output.startswith("{"):
        # shell outputs are often JSON text {"output": ..., "metadata": {...}}: keep the
        # output itself, so its text (CJK included) is indexed as text, not as JSON escapes
        try:
            parsed = json.loads(output)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("output"), str):
            return parsed["output"]
    if isinstance(output, dict):  # some versions wrap it: {"content": ..., "success": ...}
        inner = output.get("content", output.get("output"))
        if inner is not None:
            return text_of(inner)
    return text_of(output)


def _call(item: dict) -> dict:
    kind = item.get("type")
    if kind == "function_call":
        name, args = item.get("name"), item.get("arguments")
    elif kind == "custom_tool_call":
        name, args = item.get("name"), item.get("input")
    elif kind == "local_shell_call":
        name, args = "local_shell", item.get("action")
    else:
        name, args = "web_search", item.get("action")
    if not isinstance(args, str):
        args = json.dumps(args, ensure_ascii=False)
    return {"id": item.get("call_id") or item.get("id"), "type": "function",
            "function": {"name": name, "arguments": args}}


def _item(item: dict, sid: str, ts, tool_names: dict):
    """The messages of one response item, or a skip kind (str)."""
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        content = item.get("content")
        parts = content if isinstance(content, list) else [content]
        texts = [p.get("text") for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
        texts += [p for p in parts if isinstance(p, str)]
        others = [p for p in parts if isinstance(p, dict) and not isinstance(p.get("text"), str)]
        return [{"session_id": sid, "role": role, "content": "\n".join(texts) if texts else None,
                 "timestamp": ts, "metadata": compact({"content_parts": others, "id": item.get("id")})}]
    if kind == "reasoning":
        pieces = [s.get("text") for s in item.get("summary") or [] if isinstance(s, dict)]
        pieces += [c.get("text") for c in item.get("content") or [] if isinstance(c, dict)]
        thought = "\n\n".join(p for p in pieces if isinstance(p, str) and p.strip())
        if not thought:
            return "reasoning (encrypted only)"
        return [{"session_id": sid, "role": "assistant", "reasoning": thought, "timestamp": ts}]
    if kind in _CALLS:
        call = _call(item)
        tool_names[call["id"]] = call["function"]["name"]
        return [{"session_id": sid, "role": "assistant", "tool_calls": [call], "timestamp": ts}]
    if kind in _OUTPUTS:
        call_id = item.get("call_id")
        return [{"session_id": sid, "role": "tool", "content": _output_text(item.get("output")),
                 "tool_call_id": call_id, "tool_name": tool_names.get(call_id), "timestamp": ts}]
    return f"response_item {kind}"


def read(src):
    tool_names: dict = {}
    sid = None
    named = False  # sid is the session_meta's id, not the file's name
    model = None
    for number, obj in json_lines(src):
        if isinstance(obj, Skip):
            yield obj
            continue
        try:
            kind = obj.get("type")
            payload = obj.get("payload")
            if obj.get("record_type") == "state" and not isinstance(payload, dict):  # an older rollout's
                yield Skip("state")
                continue
            if not isinstance(payload, dict):  # an older rollout: the line is the item
                if "type" not in obj and "role" in obj:  # a chat message line, not an item of a rollout
                    yield Skip("untyped line with a role (not Codex)")
                    continue
                kind, payload = ("response_item", obj) if "type" in obj else ("session_meta", obj)
            ts = epoch(obj.get("timestamp"))
            if kind == "session_meta":
                if sid is None:
                    sid = payload.get("id") or src.stem
                    if not isinstance(sid, str):
                        raise ValueError("session_meta id must be a string")
                    named = bool(payload.get("id"))
                    yield SessionInfo(sid, source=NAME, started_at=epoch(payload.get("timestamp")) or ts,
                                      metadata=compact({k: payload.get(k) for k in
                                                        ("cwd", "cli_version", "originator", "model_provider")}),
                                      line=number)
                elif payload.get("id", sid) != sid:  # a forked rollout repeats its parent's
                    yield Skip("session_meta of another session")
                continue
            if sid is None:
                sid = src.stem
                yield SessionInfo(sid, source=NAME, started_at=ts, line=number)
            if kind == "turn_context":
                if payload.get("model") and payload.get("model") != model:
                    model = payload["model"]
                    yield SessionInfo(sid, metadata={"model": model}, line=number)
                yield Skip("turn_context")
                continue
            if kind != "response_item":
                yield Skip(str(kind))
                continue
            got = _item(payload, sid, ts, tool_names)
            if isinstance(got, str):
                yield Skip(got)
            else:
                here = f"line {number}"
                yield Record(f"session {sid} {here}" if named else here, number, got, legacy=here if named else None)
        except ValueError as exc:
            yield Skip("bad", number, str(exc))
