"""The ``session_search`` tool for an agent: its JSON Schema and a handler.

Wiring it into an agent loop takes three lines (OpenAI-style tool calls; use
``SESSION_SEARCH_TOOL_ANTHROPIC`` and ``block.input`` for Anthropic)::

    from cjk_tokenizer.agent_tool import SESSION_SEARCH_TOOL_OPENAI, handle_session_search
    tools.append(SESSION_SEARCH_TOOL_OPENAI)
    if call.function.name == "session_search": result = handle_session_search(archive, call.function.arguments)

``handle_session_search(archive, arguments)`` takes the model's arguments as a
JSON string or a dict and returns a JSON string (``ensure_ascii=False``, so
CJK stays readable and costs fewer tokens).  It never raises: bad JSON,
unknown keys, wrong types and search errors all come back as
``{"mode": ..., "error": {"code": ..., "message": ...}}`` for the model to
read and correct.  Rules for arguments the model sends:

* ``null`` means the argument was not given (models often send every key);
  an empty string or whitespace as the whole ``arguments`` means ``{}``
  (browse).
* Keys not in the schema are an ``unknown_argument`` error naming them.
* Types are checked as ``session_search`` checks them (see its module doc),
  so ``"around_message_id": "42"`` and ``"after": 1714550400`` are accepted.
"""
from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any, Mapping

from .constants import ROLES, SORTS
from .session_search import respond

if TYPE_CHECKING:
    from .archive import Archive

__all__ = [
    "SESSION_SEARCH_TOOL_ANTHROPIC",
    "SESSION_SEARCH_TOOL_OPENAI",
    "TOOL_NAME",
    "handle_session_search",
    "parameters_schema",
    "tool_definitions",
]

TOOL_NAME = "session_search"

DESCRIPTION = (
    "Search and read your archive of past conversation sessions (Chinese, Japanese, Korean, English and code). "
    "Returns stored messages verbatim; long messages are cut with a marker saying how many characters were cut. "
    "The shape of the call is chosen by which arguments you give:\n"
    "1. DISCOVERY - give `query`: finds the sessions that match, best first (at most `limit`, default 3). For "
    "each: the hit's snippet (the match between the two characters in `marks`, usually ⟦ and ⟧), `where` it "
    "matched, the messages around the hit, the first and last messages of the session, its title and times. Add "
    "`session_id` to search inside one session only. More sessions (`more_sessions`): call again with `offset` = "
    "`next_offset` (relevance) or `cursor` = `next_cursor` (newest/oldest), never both; inside one session, "
    "`next_cursor` pages through its hits.\n"
    "2. SCROLL - give `around_message_id` (a message id from earlier results; `session_id` optional): the "
    "messages before and after it (`window` each side, default 5, max 20). Page by calling again with "
    "`prev_anchor` or `next_anchor` from the result. Wins over `query` if both are given.\n"
    "3. READ - give only `session_id`: the whole session, or its first 20 and last 10 messages "
    "(`truncated`: true) when it is longer; scroll to see the middle.\n"
    "4. BROWSE - give nothing (or only `limit`/`after`/`before`): the most recently active sessions with "
    "title, preview, times and message count; `offset` = `next_offset` for the next page.\n"
    "`where` says how a hit was found: \"said\" (visible content), \"thought\" (the model's private reasoning: "
    "it thought it, it did NOT say it), \"tool output\", \"tool call\", \"tool name\". Reasoning is searched and "
    "shown only with include_reasoning=true. Query language: words, \"exact phrase\", prefix*, OR, NOT or "
    "-word, parentheses; CJK text is matched as written, no spaces needed. Words side by side are ANDed and "
    "that AND binds tighter than OR: `部署 OR deploy 失败` means `部署 OR (deploy AND 失败)`; write "
    "`(部署 OR deploy) 失败` for either word together with 失败. Times (`after`, `before`): ISO-8601 "
    "(2024-05-01, 2024-05-01T08:30:00Z) or epoch seconds; no zone means UTC. Errors come back as "
    "{\"error\": {\"code\", \"message\"}} - fix the argument and call again."
)

_PROPERTIES = {
    "query": {
        "type": "string",
        "description": "Text to find (DISCOVERY). Words are ANDed; \"quotes\" for a phrase, word* for a prefix, "
                       "OR, NOT/-word. AND binds tighter than OR: a OR b c is a OR (b AND c); use "
                       "parentheses: (a OR b) c. E.g. 部署 回滚, \"connection refused\", (デプロイ OR deploy) 失败.",
    },
    "session_id": {
        "type": "string",
        "description": "A session id from earlier results. Alone: READ that session. With query: search only "
                       "inside it. With around_message_id: the session the anchor belongs to (optional).",
    },
    "around_message_id": {
        "type": "integer",
        "description": "SCROLL: show the messages around this message id (from a hit, window, or "
                       "prev_anchor/next_anchor).",
    },
    "window": {
        "type": "integer",
        "minimum": 0,
        "maximum": 20,
        "description": "Messages to show on each side of the hit or anchor. SCROLL: default 5, max 20. "
                       "DISCOVERY: default 2, max 10. Larger values are clamped (the result says so).",
    },
    "limit": {
        "type": "integer",
        "minimum": 1,
        "maximum": 50,
        "description": "How many sessions: DISCOVERY default 3 (max 10), BROWSE default 10 (max 50).",
    },
    "include_reasoning": {
        "type": "boolean",
        "description": "Also search and show the model's reasoning (default false). Hits found there are "
                       "labelled \"thought\": the model thought it, it was not said.",
    },
    "roles": {
        "type": "array",
        "items": {"type": "string", "enum": list(ROLES)},
        "description": "DISCOVERY: only hits in messages of these roles, e.g. [\"user\"].",
    },
    "after": {
        "type": "string",
        "description": "Only messages (DISCOVERY) or sessions active (BROWSE) at or after this time: ISO-8601 "
                       "(2024-05-01 or 2024-05-01T08:30:00Z; no zone = UTC) or epoch seconds.",
    },
    "before": {
        "type": "string",
        "description": "Only messages (DISCOVERY) or sessions started (BROWSE) before this time; same formats "
                       "as after.",
    },
    "sort": {
        "type": "string",
        "enum": list(SORTS),
        "description": "DISCOVERY order of hits: relevance (default), newest or oldest.",
    },
    "exclude_session_ids": {
        "type": "array",
        "items": {"type": "string"},
        "description": "Session ids to leave out of DISCOVERY and BROWSE, e.g. the current session.",
    },
    "offset": {
        "type": "integer",
        "minimum": 0,
        "maximum": 10000,
        "description": "DISCOVERY (up to 100) and BROWSE: sessions to skip, for the next page: pass next_offset "
                       "from the previous result.",
    },
    "cursor": {
        "type": "string",
        "description": "DISCOVERY with sort newest/oldest: next_cursor from the previous result, for the next "
                       "page (stable while new messages arrive).",
    },
}


def parameters_schema() -> dict[str, Any]:
    """The JSON Schema of the tool's arguments (a fresh copy)."""
    return {"type": "object", "properties": copy.deepcopy(_PROPERTIES), "required": [],
            "additionalProperties": False}


def tool_definitions() -> dict[str, dict[str, Any]]:
    """``{"openai": ..., "anthropic": ...}``: fresh copies of both tool definitions."""
    return {
        "openai": {"type": "function",
                   "function": {"name": TOOL_NAME, "description": DESCRIPTION, "parameters": parameters_schema()}},
        "anthropic": {"name": TOOL_NAME, "description": DESCRIPTION, "input_schema": parameters_schema()},
    }


SESSION_SEARCH_TOOL_OPENAI = tool_definitions()["openai"]
SESSION_SEARCH_TOOL_ANTHROPIC = tool_definitions()["anthropic"]


def _error(mode: str, code: str, message: str, argument: str | None = None) -> dict:
    err = {"code": code, "message": message}
    if argument is not None:
        err["argument"] = argument
    return {"mode": mode, "error": err}


def _parse(arguments) -> tuple[dict | None, dict | None]:
    """``(arguments as a dict, None)`` or ``(None, error result)``."""
    if isinstance(arguments, (bytes, bytearray)):
        try:
            arguments = arguments.decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, _error("unknown", "bad_json", f"arguments are not UTF-8: {exc}")
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return {}, None
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError as exc:
            return None, _error("unknown", "bad_json", f"arguments are not valid JSON: {exc}; send one JSON object")
        except RecursionError:
            return None, _error("unknown", "bad_json", "arguments are nested too deeply to read; send one JSON "
                                                       "object of strings, numbers and lists of strings")
    if not isinstance(arguments, dict):
        return None, _error("unknown", "bad_argument",
                            f"arguments must be a JSON object, not {type(arguments).__name__}")
    return arguments, None


def handle_session_search(archive: Archive, arguments: str | bytes | bytearray | Mapping[str, Any] | None) -> str:
    """Run the tool for ``arguments`` (JSON text or dict); the JSON result as a string."""
    try:
        # strict JSON (no NaN/Infinity, which JSON.parse and other hosts refuse), made inside
        # the try: a value that cannot be written is an error result too, never an exception
        return json.dumps(_handle(archive, arguments), ensure_ascii=False, allow_nan=False)
    except Exception as exc:  # noqa: BLE001 -- the agent loop must go on
        return json.dumps(_error("unknown", "internal_error", f"{type(exc).__name__}: {exc}"), ensure_ascii=False)


def _handle(archive, arguments) -> dict:
    given, error = _parse(arguments)
    if error is not None:
        return error
    return respond(archive, given)  # nulls, unknown keys and types: session_search.parse_arguments
