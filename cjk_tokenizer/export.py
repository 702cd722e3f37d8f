"""Writing an archive (or one session) back out: JSONL that imports again, or Markdown to read.

JSONL is the ``openai`` importer's one-message-per-line shape: the messages in
the order they arrived (id order, sessions interleaved as they were written),
each session's line (``{"type": "session", "id", "title", "source",
"started_at", "metadata"}``) just before its first message, and sessions
without messages at the end; every stored field is included, so importing the
file into an empty archive gives back the same sessions and messages, in the
same order: text that reads as text (tool_calls given as a string, metadata
another tool wrote) is written as a string and stored back as it is, and a
message without a time says ``"timestamp": null``.  An archive that only grew
since it was last exported writes the same lines first and its new ones
after them, so importing the new export into the archive that imported the
old one (``sync``) adds exactly the new messages.

Markdown is one section per session; what was said is plain text, what was
thought is a quoted "thought" block, tool calls are listed as calls, and tool
output is a fenced block under its tool's name.
"""
from __future__ import annotations

import datetime as _dt
import json

from . import records

FORMATS = ("jsonl", "markdown")


def _sessions(archive, session_id):
    if session_id is None:
        rows = archive.conn.execute("SELECT id FROM sessions ORDER BY started_at, id").fetchall()
        # messages whose session has no row (a writer with foreign keys off deleted it) follow
        rows += archive.conn.execute("SELECT DISTINCT session_id FROM messages WHERE session_id NOT IN "
                                     "(SELECT id FROM sessions) ORDER BY session_id").fetchall()
        return [_session(archive, r[0]) for r in rows]
    found = _session(archive, session_id)
    if found is None:
        raise ValueError(f"no session {session_id!r} in {archive.path}")
    return [found]


def _session(archive, session_id):
    """The session's row, or for messages without one only their session id (None if neither)."""
    found = archive.session(session_id)
    if found is None and archive.messages_of(session_id, limit=1):
        return {"id": session_id, "title": None, "source": None, "started_at": None, "metadata": None}
    return found


def _messages(archive, sid, chunk: int = 1000):
    after = None
    while True:
        batch = archive.messages_of(sid, after_id=after, limit=chunk)
        yield from batch
        if len(batch) < chunk:
            return
        after = batch[-1]["id"]


def export(archive, out, *, session_id=None, format: str = "jsonl") -> int:
    """Write sessions (all, or ``session_id``) to the text stream ``out``; returns messages written."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    # one snapshot: the archive as one commit left it, whatever other processes write
    # meanwhile (read page by page, it matched no state the archive was ever in)
    with archive.reading():
        sessions = _sessions(archive, session_id)
        if format == "jsonl":
            return _jsonl(archive, sessions, session_id, out)
        return sum(_markdown(archive, session, out) for session in sessions)


def _header(session, out) -> None:
    header = {"type": "session", "id": session["id"], "title": session["title"], "source": session["source"],
              "started_at": session["started_at"], "metadata": session["metadata"] or None}
    out.write(json.dumps({k: v for k, v in header.items() if v is not None}, ensure_ascii=False) + "\n")


def _jsonl(archive, sessions, session_id, out) -> int:
    by_id = {s["id"]: s for s in sessions}
    headed: set = set()
    n = 0
    for m in _messages(archive, session_id):
        if m["session_id"] not in headed:
            headed.add(m["session_id"])
            _header(by_id.get(m["session_id"]) or _session(archive, m["session_id"]), out)
        # as the stored text where importing the calls would store other text: [] (import
        # reads it as no calls), or arguments another writer left escaped (import writes
        # them out: records.readable_calls)
        calls = m["tool_calls"]
        if calls == [] or (isinstance(calls, (list, dict)) and records.readable_calls(calls) != calls):
            calls = json.dumps(calls, ensure_ascii=False)  # the stored text: archive._maybe_json
        line = {"session_id": m["session_id"], "role": m["role"], "content": m["content"],
                "reasoning": m["reasoning"], "tool_name": m["tool_name"], "tool_calls": calls,
                "tool_call_id": m["tool_call_id"], "metadata": m["metadata"] or None}
        line = {k: v for k, v in line.items() if v is not None}
        line["timestamp"] = m["timestamp"]  # null too: import stores no time, not the import's
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
        n += 1
    for s in sessions:
        if s["id"] not in headed:
            _header(s, out)
    return n


def _when(ts) -> str:
    if ts is None:
        return ""
    try:
        return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):  # a time another tool stored, past what a date can say
        return f"{ts} (epoch seconds)"


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}\n{text}\n{ticks}"


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.split("\n"))


def _markdown(archive, session, out) -> int:
    out.write(f"# {session['title'] or session['id']}\n\n")
    facts = [f"session `{session['id']}`"]
    if session["source"]:
        facts.append(f"source {session['source']}")
    if session["started_at"] is not None:
        facts.append(f"started {_when(session['started_at'])}")
    out.write(" · ".join(facts) + "\n\n")
    n = 0
    for m in _messages(archive, session["id"]):
        n += 1
        who = m["role"] if m["role"] != "tool" else f"tool output ({m['tool_name'] or 'unnamed tool'})"
        out.write(f"## {who} · #{m['id']} · {_when(m['timestamp'])}\n\n")
        if m["reasoning"]:
            out.write("> **thought**\n>\n" + _quote(m["reasoning"]) + "\n\n")
        if m["content"]:
            out.write((_fence(m["content"]) if m["role"] == "tool" else m["content"]) + "\n\n")
        _calls(m["tool_calls"], out)
    return n


def _calls(calls, out) -> None:
    """Tool calls as stored: a list of calls, one call (a dict), or text.  An
    OpenAI-style call shows its name and arguments; any other shape its JSON whole."""
    if isinstance(calls, str):
        out.write(f"**calls**:\n\n{_fence(calls)}\n\n")
        return
    for call in [calls] if isinstance(calls, dict) else calls if isinstance(calls, list) else ():
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            args = fn.get("arguments", "")
            shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            out.write(f"**calls** `{fn['name']}`:\n\n{_fence(shown)}\n\n")
        else:
            out.write(f"**calls**:\n\n{_fence(json.dumps(call, ensure_ascii=False))}\n\n")
