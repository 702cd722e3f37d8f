"""``session_search``: one call, four shapes, for an agent looking through its own archive.

The shape (``mode``) is inferred from the arguments, first match wins:

============  ==========================================  ====================================
mode          arguments                                   returns
============  ==========================================  ====================================
scroll        ``around_message_id`` (``session_id``       the anchor and ``window`` messages
              optional: taken from the message)           before/after it; next/prev anchors
discovery     ``query`` (``session_id`` narrows it to     up to ``limit`` sessions, best hit
              one session)                                first: snippet, where it matched,
                                                          messages around it, session bookends
read          ``session_id`` only                         the whole session, or its first 20
                                                          and last 10 messages (``truncated``)
browse        none of the above                           recent sessions: title, preview,
                                                          times, message count
============  ==========================================  ====================================

So scroll beats query: a call with both ``query`` and ``around_message_id``
scrolls (``ignored_arguments`` says the query was not used).

What comes back is stored messages verbatim -- nothing is summarised.  The
only change is cutting: a message field longer than its budget keeps that
many characters and says how much went, e.g. ``[… 12,345 more characters
cut]`` (``cut`` gives the numbers).  Budgets (characters per field of a
message; content, reasoning and tool_calls are budgeted separately):

* ``HIT_CHARS`` for the hit message in discovery (the kept part is the window
  the one snippet rule chooses around the match, as for its snippet) and for
  every message in scroll and read (their first characters);
* ``CONTEXT_CHARS`` for the other messages around a hit in discovery;
* ``BOOKEND_CHARS`` for the head/tail bookends in discovery;
* ``PREVIEW_CHARS`` for a session's preview in browse.

A whole result is held to about RESULT_CHARS characters of JSON: one over it
is rendered again with every budget scaled down (to MIN_SCALE of itself, and
no field below MIN_FIELD_CHARS), then with the window halved until it fits,
and says so in ``budget_scale`` and ``notes``.  Budgets count characters, and
JSON writes a control character (a terminal's colour codes) as six: a result
of such text can stay over RESULT_CHARS at the least budgets, and its note
then gives its size and how to ask for less.

Said versus thought: ``matched_in`` lists the columns a hit matched in
(content, reasoning, tool_name, tool_calls); ``where`` is the plain-language
label of the column its snippet comes from (visible columns first, so a term
in both content and reasoning reports ``"said"``).  Labels (``LABELS``):
content is ``said`` (``tool output`` for a tool message), reasoning is
``thought`` -- the model thought it, it did not say it -- tool_calls is
``tool call``, tool_name ``tool name``.  Reasoning is searched and shown only
with ``include_reasoning=True``, and then in its own ``reasoning`` field;
otherwise a message with reasoning carries ``reasoning_hidden_chars``.

A discovery hit's ``snippet`` wraps the match in the pair of characters
given as ``marks`` (``⟦`` ``⟧`` unless the snippet holds either; see MARKS),
so the content's own markdown ``**`` is never mistaken for the match; the hit
message itself is cut around the match's real position (``Hit.span``), not
around text looked up again.  Messages whose session has no row in
``sessions`` (the archive's triggers make one for whoever writes a message;
a writer with foreign keys off may delete it) are shown in discovery, scroll
and read; their session carries a ``note`` saying so.  Browse lists rows.

Arguments are checked before anything runs: ``parse_arguments`` turns them
as given (a dict from the agent tool or the MCP server, or the keywords of
``session_search``) into a ``SessionSearchArgs`` or raises
SearchArgumentError; ``execute`` runs validated arguments and renders the
result; ``respond`` does both and returns errors as results.

Argument rules (documented safe meanings, else a structured error):

* None means "not given", for every argument; a name that is not one of
  ``ARGUMENTS`` is an ``unknown_argument`` error naming it.  A string holding
  half of a surrogate pair (``"\\ud83d"`` in JSON: text no UTF-8 can hold)
  is a ``bad_argument`` error.

* ``window``: messages each side of the hit/anchor; an int.  Scroll: default
  5, clamped to 0..20.  Discovery: default 2, clamped to 0..10.  A clamp is
  reported in ``clamped``.
* ``limit``: an int.  Discovery: sessions, default 3, clamped to 1..10.
  Browse: sessions, default 10, clamped to 1..50.  Not used by scroll/read.
* ``after`` / ``before``: ``after <= timestamp < before``; the package's one
  time rule (timeutil.py): epoch seconds (number or numeric string), an
  ISO-8601 string or a ``datetime`` -- no zone means UTC, a date alone is its
  midnight UTC.  Discovery filters messages; browse
  lists sessions active in the range (started before ``before``, last active
  at or after ``after``).  ``after >= before`` is an error.
* ``roles`` (a role or list of roles) and ``sort`` (relevance, newest,
  oldest) apply to discovery only.  ``include_reasoning`` applies to every
  mode that shows messages.  Arguments a mode does not use are listed in
  ``ignored_arguments``, never silently dropped.
* ``offset``: sessions to skip, for the next page (``next_offset``).
  Discovery: clamped to 0..100 (past that, ``notes`` says how to go on);
  browse: 0..10,000.  ``cursor`` (discovery, newest/oldest): the
  ``next_cursor`` of the previous page; the next page starts at the first hit
  of the first session not shown, and new messages arriving meanwhile do not
  shift it.  A session can show up again on a later page with its older
  (newest) or newer (oldest) hits.  A page gives ``next_offset`` (relevance,
  browse) or ``next_cursor`` (newest/oldest), never both, and a call given
  both is an error.  Sessions are found FETCH hits at a time (up to
  FETCH_MAX when sessions are long); each further read leaves out the
  sessions already found and, by relevance, ranks the matches the first
  ranked (``rank_floor``), so one busy session never hides the others, the
  order is that of one long read, and ``more_sessions`` is exact.
  ``ranked_among`` (relevance) says the query matched more messages than
  search.RELEVANCE_BOUND and bm25 ranked the newest that many.
* Each discovery session lists its best hit, up to OTHER_HITS more hit ids
  (``other_hit_ids``) and ``hits_in_session``: how many of its messages
  match, within the filters.  With ``session_id``, newest/oldest give a
  ``next_cursor`` that goes on after the last hit listed, to page through
  the session's hits.
* ``exclude_session_ids`` (a list, or one id; at most MAX_EXCLUDED): sessions
  left out of discovery and browse (e.g. the caller's current one).  A session named explicitly by
  ``session_id`` is still served (``notes`` says so).
* ``around_message_id`` may be an int or a string of digits.

Errors never raise: the result is ``{"mode": ..., "error": {"code": ...,
"message": ..., "argument": ...}}`` with code one of ``ERROR_CODES``.
"""
from __future__ import annotations

import contextlib
import json
import unicodedata
from contextvars import ContextVar
from dataclasses import dataclass, fields
from typing import Any, Iterable, Mapping

from . import _native
from .errors import CjkTokenizerError, QueryError, TimeValueError, shown
from .constants import DEFAULT_SORT, ROLES, SORTS
from .search import paging
from .snippet import choose
from .timeutil import epoch_seconds, iso

__all__ = [
    "ARGUMENTS",
    "BOOKEND_CHARS",
    "CONTEXT_CHARS",
    "ERROR_CODES",
    "HIT_CHARS",
    "LABELS",
    "PREVIEW_CHARS",
    "RESULT_CHARS",
    "SearchArgumentError",
    "SessionSearchArgs",
    "cut_text",
    "execute",
    "parse_arguments",
    "respond",
    "session_search",
]

HIT_CHARS = 1500
CONTEXT_CHARS = 600
LABEL_CHARS = 300  # a title, source, tool name or call id (the result's size bound holds them too)
BOOKEND_CHARS = 300
PREVIEW_CHARS = 200
# A whole result (its JSON, in characters) is held to about this much: agent
# hosts cap what a tool may return (MCP clients often near 25,000 tokens).
RESULT_CHARS = 60_000
MIN_SCALE = 0.1  # the budgets' least share of their usual size
MIN_FIELD_CHARS = 80  # no field budget goes below this
_SCALE: ContextVar[float] = ContextVar("session_search_budget_scale", default=1.0)
_WINDOW_CAP: ContextVar[int | None] = ContextVar("session_search_window_cap", default=None)


def _budget(chars: int) -> int:
    """A field budget at the scale this result is rendered at (execute)."""
    return max(MIN_FIELD_CHARS, int(chars * _SCALE.get()))

SCROLL_WINDOW = (5, 0, 20)  # default, min, max
DISCOVERY_WINDOW = (2, 0, 10)
DISCOVERY_LIMIT = (3, 1, 10)
DISCOVERY_OFFSET = (0, 0, 100)
BROWSE_LIMIT = (10, 1, 50)
BROWSE_OFFSET = (0, 0, 10_000)
MAX_EXCLUDED = 1000  # session ids one call may leave out
READ_HEAD, READ_TAIL = 20, 10
HEAD_MESSAGES, TAIL_MESSAGES = 3, 2  # discovery bookends
PREVIEW_SCAN = 10  # messages looked at for a browse preview
FETCH, FETCH_MAX = 50, 1000  # hits one search reads to fill the sessions of a page, first and at most
OTHER_HITS = 5  # a session's hits listed by id besides its best

LABELS = {
    "said": "visible message content (what the user or assistant said)",
    "thought": "the model's reasoning: it thought this, it did not say it",
    "tool output": "what a tool returned (content of a tool message)",
    "tool call": "arguments of a tool call the assistant made",
    "tool name": "the name of a tool",
}

ERROR_CODES = (
    "unknown_argument",    # a name that is not one of ARGUMENTS
    "bad_argument",        # wrong type or unusable value of an argument
    "bad_query",           # the query cannot be searched (e.g. empty)
    "bad_time_range",      # after >= before
    "unknown_session",     # no session with that id
    "unknown_message",     # no message with that id
    "anchor_not_in_session",
    "database_error",      # SQLite could not answer (e.g. locked); retrying may help
)
# The agent tool (agent_tool.handle_session_search) adds two of its own:
# "bad_json" (arguments that are not one JSON object) and "internal_error"
# (a defect: the message names the exception).

_EARLIER = "[… {:,} earlier characters cut] "
_LATER = " [… {:,} more characters cut]"


class SearchArgumentError(CjkTokenizerError, ValueError):
    """A structured error: ``code`` (one of ERROR_CODES), message, argument name."""

    def __init__(self, code: str, message: str, argument: str | None = None):
        super().__init__(message)
        self.code, self.argument = code, argument

    def as_dict(self) -> dict:
        out = {"code": self.code, "message": str(self)}
        if self.argument is not None:
            out["argument"] = self.argument
        return out


# ---- small helpers -----------------------------------------------------------------


def _time(value, name: str) -> float | None:
    """``value`` as epoch seconds by the package's time rule (timeutil.py), or None."""
    if value is None:
        return None
    try:
        return epoch_seconds(value, name)
    except TimeValueError as exc:
        raise SearchArgumentError("bad_argument", str(exc), name) from None


def _is_mark(ch: str) -> bool:
    return unicodedata.category(ch).startswith("M")


def _splits(text: str, i: int) -> bool:
    """Would an edge at ``i`` split a character from what extends it (the snippet rule's
    clusters, csrc/cjk_snippet.h: a mark, selector, skin-tone modifier or tag after it,
    or a zero-width joiner before; white space joins nothing)?"""
    if text[i - 1].isspace():
        return False
    extends = _native.is_extender if _native.available() else _is_mark
    return text[i - 1] == "\u200d" or extends(text[i])


def cut_text(text: str, budget: int, focus: tuple[int, int] | None = None) -> tuple[str, int]:
    """``(shown, cut)``: ``text`` whole if it fits ``budget`` characters, else at most
    ``budget`` characters of it with a marker on each cut side saying how many
    characters went; ``cut`` counts them.

    With ``focus`` (a match's ``(start, end)`` in ``text``) the kept part is the
    snippet window around that match, chosen by the one snippet rule
    (snippet.py) with ``budget`` characters to show: a hit message is cut the
    way its snippet is.  Without it this is reading, not a snippet: the
    message's first ``budget`` characters (never splitting a character from
    its combining marks)."""
    n = len(text)
    if n <= budget:
        return text, 0
    if focus is not None:
        start, end = choose(text, [(focus[0], focus[1], 0)], budget + 2).window
    else:
        start, end = 0, budget
        while 0 < end < n and _splits(text, end):  # no emoji or marks cut from their character
            end -= 1
    head = _EARLIER.format(start) if start else ""
    tail = _LATER.format(n - end) if end < n else ""
    return head + text[start:end] + tail, n - (end - start)


def _label(column: str | None, role: str) -> str | None:
    if column == "content":
        return "tool output" if role == "tool" else "said"
    return {"reasoning": "thought", "tool_calls": "tool call", "tool_name": "tool name"}.get(column)


# ---- rendering -----------------------------------------------------------------------


def _cut_into(cut: dict, name: str, text: str, budget: int, focus: tuple[int, int] | None = None) -> str:
    """cut_text of a field named ``name``, recording in ``cut`` how much went."""
    shown, n = cut_text(text, budget, focus)
    if n:
        cut[name] = n
    return shown


def render_message(m: dict, budget: int, include_reasoning: bool, *, focus_column: str | None = None,
                   focus: int | None = None) -> dict:
    """A stored message as shown to the caller: verbatim fields, long ones cut."""
    out = {"id": m["id"], "role": m["role"], "timestamp": m["timestamp"], "timestamp_iso": iso(m["timestamp"])}
    cut = {}

    def field(name, text):
        return _cut_into(cut, name, text, budget, focus if focus_column == name else None)

    content = m.get("content")
    out["content"] = None if content is None else field("content", content)
    reasoning = m.get("reasoning")
    if reasoning:
        if include_reasoning:
            out["reasoning"] = field("reasoning", reasoning)
        else:
            out["reasoning_hidden_chars"] = len(reasoning)
    for name in ("tool_name", "tool_call_id"):
        if m.get(name) is not None:
            out[name] = _cut_into(cut, name, m[name], _budget(LABEL_CHARS))
    calls = m.get("tool_calls")
    if calls is not None:
        text = calls if isinstance(calls, str) else json.dumps(calls, ensure_ascii=False)
        out["tool_calls"] = calls if len(text) <= budget else field("tool_calls", text)
    if cut:
        out["cut"] = cut
    return out


def render_session(s: dict) -> dict:
    cut: dict = {}
    label = {name: None if s.get(name) is None else _cut_into(cut, name, s[name], _budget(LABEL_CHARS))
             for name in ("title", "source")}
    out = {
        "session_id": s["id"],
        "title": label["title"],
        "source": label["source"],
        "started_at": s.get("started_at"),
        "started_at_iso": iso(s.get("started_at")),
        "last_active": s.get("last_active"),
        "last_active_iso": iso(s.get("last_active")),
        "message_count": s.get("message_count"),
    }
    if s.get("no_session_row"):
        out["note"] = "no session record: found through its messages (title and source unknown)"
    if cut:
        out["cut"] = cut
    return out


# Marker pairs for the match in a hit's snippet, first choice first: the first
# pair neither of whose characters occurs in the snippet is used, so every
# marker in the result is one of ours (the content's own ** or brackets stay
# plain text).  The pair is returned with the snippet (``marks``).
MARKS = (("⟦", "⟧"), ("⟪", "⟫"), ("⦃", "⦄"), ("⦗", "⦘"), ("⟬", "⟭"), ("⦅", "⦆"))


def marked_snippet(hit) -> tuple[str, list | None]:
    """``(snippet, marks)``: the hit's snippet with its match between the two
    ``marks``; marks is None (the snippet as is) when nothing is highlighted
    or every pair of MARKS already occurs in the snippet."""
    snippet, span = hit.snippet, getattr(hit, "highlight", None)
    if not span or not 0 <= span[0] < span[1] <= len(snippet):
        return snippet, None
    for opening, closing in MARKS:
        if opening not in snippet and closing not in snippet:
            s, e = span
            return f"{snippet[:s]}{opening}{snippet[s:e]}{closing}{snippet[e:]}", [opening, closing]
    return snippet, None


def _match_focus(message: dict, column: str | None, hit) -> tuple[int, int] | None:
    """Where in the shown text of ``column`` the hit's match lies: its ``(start, end)``.

    ``hit.span`` is the match's real position in the stored column text.  Text
    columns are shown as stored, so the span applies as is; tool calls stored
    as JSON are shown re-serialized, where the matched text is looked up
    nearest to the stored position.
    """
    span = getattr(hit, "span", None)
    if not span or column is None:
        return None
    value = message.get(column)
    if isinstance(value, str):
        return span[0], span[1]
    shown = _column_text(message, column) or ""
    hs = getattr(hit, "highlight", None)
    matched = hit.snippet[hs[0]:hs[1]] if hs else ""
    best, at = None, shown.find(matched) if matched else -1
    while at >= 0:
        if best is None or abs(at - span[0]) < abs(best - span[0]):
            best = at
        at = shown.find(matched, at + 1)
    if best is None:
        at = min(span[0], len(shown))
        return at, at
    return best, best + len(matched)


# ---- argument checks -----------------------------------------------------------------


def _int(name: str, value, allow_digits: bool = False, bounded: bool = True):
    if value is None:
        return None
    if allow_digits and isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        value = value.strip()
        value = int(value) if len(value) <= 20 else 2**64  # past any rowid, and past what int() writes
    elif isinstance(value, bool) or not isinstance(value, int):
        if not (isinstance(value, float) and value.is_integer()):
            raise SearchArgumentError("bad_argument", f"{name} must be an integer, not {shown(value)}", name)
        value = int(value)
    # a count past any archive's is clamped and reported with the number asked for (_clamp);
    # one too long to write in that report (errors.shown) is refused instead
    if bounded and value.bit_length() > 256:
        raise SearchArgumentError("bad_argument", f"{name} must be an integer of at most 77 digits, "
                                                  f"not {shown(value)}", name)
    return value


def _clamp(name: str, value, spec, clamped: dict) -> int:
    default, lo, hi = spec
    if value is None:
        return default
    used = min(max(value, lo), hi)
    if used != value:
        clamped[name] = {"requested": value, "used": used, "allowed": [lo, hi]}
    return used


def _encodable(name: str, value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SearchArgumentError("bad_argument", f"{name} holds half of a surrogate pair "
                                                  f"({value[exc.start]!r} at character {exc.start}), "
                                                  "which is no text: send the whole character", name) from None
    return value


def _str(name: str, value):
    if value is not None and not isinstance(value, str):
        raise SearchArgumentError("bad_argument", f"{name} must be a string, not {type(value).__name__}", name)
    return value if value is None else _encodable(name, value)


def _str_list(name: str, value) -> list | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple, set, frozenset)) or not all(isinstance(v, str) for v in value):
        raise SearchArgumentError("bad_argument", f"{name} must be a string or a list of strings, not "
                                                  f"{shown(value, 200)}", name)
    return [_encodable(name, v) for v in value]


@dataclass(frozen=True)
class SessionSearchArgs:
    """One call's arguments, validated by ``parse_arguments`` (see the module doc for the rules).

    Types are checked, ``around_message_id`` is an int, times are epoch
    seconds, ``roles`` and ``exclude_session_ids`` are collections, and
    ``sort`` is resolved (the default, or the one a ``cursor`` belongs to).
    ``window``, ``limit`` and ``offset`` stay None when not given: their
    defaults and clamps depend on the mode.
    """

    query: str | None = None
    session_id: str | None = None
    around_message_id: int | None = None
    window: int | None = None
    limit: int | None = None
    include_reasoning: bool = False
    roles: tuple[str, ...] | None = None
    after: float | None = None
    before: float | None = None
    sort: str = DEFAULT_SORT
    exclude_session_ids: frozenset[str] = frozenset()
    offset: int | None = None
    cursor: str | None = None

    @property
    def mode(self) -> str:
        return infer_mode(self.query, self.session_id, self.around_message_id)


# The argument names, in the order the agent tool's schema lists them.
ARGUMENTS = tuple(f.name for f in fields(SessionSearchArgs))


def _given(raw: Mapping[str, Any]) -> dict:
    """The arguments actually given: None means "not given" (models often send every key)."""
    if not isinstance(raw, Mapping):
        raise SearchArgumentError("bad_argument", f"arguments must be a mapping of names to values, "
                                                  f"not {type(raw).__name__}")
    return {k: v for k, v in raw.items() if v is not None}


def _check_ids_and_counts(given: dict) -> dict:
    out = {"query": _str("query", given.get("query")), "session_id": _str("session_id", given.get("session_id"))}
    anchor = _int("around_message_id", given.get("around_message_id"), allow_digits=True, bounded=False)
    if anchor is not None and not 0 < anchor < 2**63:
        raise SearchArgumentError("unknown_message", f"no message with id {shown(given['around_message_id'])} "
                                                     "(message ids are positive integers)", "around_message_id")
    out["around_message_id"] = anchor
    out["window"] = _int("window", given.get("window"))
    out["limit"] = _int("limit", given.get("limit"))
    offset = _int("offset", given.get("offset"))
    if offset is not None and offset < 0:
        raise SearchArgumentError("bad_argument", f"offset must be 0 or more, not {offset}", "offset")
    out["offset"] = offset
    if offset and given.get("cursor") is not None and \
            infer_mode(given.get("query"), given.get("session_id"), given.get("around_message_id")) == "discovery":
        raise SearchArgumentError("bad_argument", "give offset or cursor, not both: a cursor already says where "
                                                  "the next page starts", "offset")
    reasoning = given.get("include_reasoning", False)
    if not isinstance(reasoning, bool):
        raise SearchArgumentError("bad_argument",
                                  f"include_reasoning must be true or false, not {shown(reasoning, 200)}",
                                  "include_reasoning")
    out["include_reasoning"] = reasoning
    excluded = _str_list("exclude_session_ids", given.get("exclude_session_ids")) or ()
    if len(excluded) > MAX_EXCLUDED:
        raise SearchArgumentError("bad_argument", f"exclude_session_ids holds {len(excluded):,} ids; at most "
                                                  f"{MAX_EXCLUDED:,}", "exclude_session_ids")
    out["exclude_session_ids"] = frozenset(excluded)
    return out


def _check_filters(given: dict) -> dict:
    roles = _str_list("roles", given.get("roles")) or None  # [] is "not given", as for exclude_session_ids
    if roles is not None and any(r not in ROLES for r in roles):
        raise SearchArgumentError("bad_argument",
                                  f"roles must be chosen from {', '.join(ROLES)}; got {shown(roles, 200)}", "roles")
    sort = given.get("sort")
    if sort is not None and sort not in SORTS:
        raise SearchArgumentError("bad_argument", f"sort must be one of {', '.join(SORTS)}, not {shown(sort, 200)}",
                                  "sort")
    cursor = _str("cursor", given.get("cursor"))
    if cursor is not None:
        try:
            sort = paging(sort or DEFAULT_SORT, 0, cursor)[0]
        except QueryError as exc:
            raise SearchArgumentError("bad_argument", str(exc), "cursor") from None
    after, before = _time(given.get("after"), "after"), _time(given.get("before"), "before")
    if after is not None and before is not None and after >= before:
        raise SearchArgumentError("bad_time_range", f"after ({iso(after)}) must be earlier than "
                                                    f"before ({iso(before)})", "after")
    return {"roles": None if roles is None else tuple(roles), "sort": sort or DEFAULT_SORT, "cursor": cursor,
            "after": after, "before": before}


def parse_arguments(raw: Mapping[str, Any]) -> SessionSearchArgs:
    """Validate a call's arguments as given -- a dict from the agent tool (and so the MCP
    server) or the keywords of :func:`session_search` -- into a SessionSearchArgs.

    A value of None means the argument was not given.  Raises
    SearchArgumentError (``unknown_argument``, ``bad_argument``,
    ``bad_time_range`` or ``unknown_message``) naming the argument.
    """
    given = _given(raw)
    unknown = sorted(str(k) for k in given if k not in ARGUMENTS)
    if unknown:
        raise SearchArgumentError("unknown_argument", f"unknown argument(s) {', '.join(map(repr, unknown))}; "
                                                      f"allowed: {', '.join(ARGUMENTS)}", unknown[0])
    return SessionSearchArgs(**_check_ids_and_counts(given), **_check_filters(given))


def infer_mode(query=None, session_id=None, around_message_id=None) -> str:
    if around_message_id is not None:
        return "scroll"
    if query is not None:
        return "discovery"
    if session_id is not None:
        return "read"
    return "browse"


# Arguments each mode uses (the rest are reported in ignored_arguments).
_USES = {
    "scroll": {"session_id", "around_message_id", "window", "include_reasoning"},
    "discovery": {"query", "session_id", "window", "limit", "include_reasoning", "roles", "after", "before",
                  "sort", "exclude_session_ids", "offset", "cursor"},
    "read": {"session_id", "include_reasoning"},
    "browse": {"limit", "after", "before", "exclude_session_ids", "offset"},
}


def _ignored(mode: str, given: dict) -> list[str]:
    """Arguments given (not None, not a default or empty value) that ``mode`` does not use."""
    return sorted(k for k, v in given.items()
                  if k not in _USES[mode] and not (k == "include_reasoning" and v is False) and v not in ([], ()))


# ---- the four shapes -----------------------------------------------------------------


def _session_or_error(archive, session_id: str) -> dict:
    s = archive.session(session_id)
    if s is None:
        s = _orphan_session(archive, session_id)
    if s is None:
        raise SearchArgumentError("unknown_session", f"no session with id {session_id!r}", "session_id")
    return s


def _orphan_session(archive, session_id: str) -> dict | None:
    """A session known only from its messages, or None if it has none.

    A tool writing the file without the archive's foreign keys (e.g. the
    stdlib sqlite3, where they are off by default) can add messages without a
    sessions row; search finds them, so every mode shows them too.  The
    fields the row would hold are unknown (None); times come from the
    messages.
    """
    first = archive.messages_of(session_id, limit=1, order="asc")
    if not first:
        return None
    last = archive.messages_of(session_id, limit=1, order="desc")
    return {"id": session_id, "title": None, "source": None, "started_at": first[0]["timestamp"],
            "metadata": {}, "message_count": archive.count_messages(session_id),
            "last_active": last[0]["timestamp"], "no_session_row": True}


def _around(archive, session_id: str, anchor_id: int, window: int) -> tuple[list, list, bool, bool]:
    """(before, after, more_before, more_after): up to ``window`` messages each side."""
    before = archive.messages_of(session_id, before_id=anchor_id, limit=window + 1, order="desc")
    after = archive.messages_of(session_id, after_id=anchor_id, limit=window + 1, order="asc")
    more_before, more_after = len(before) > window, len(after) > window
    return before[:window][::-1], after[:window], more_before, more_after


def _scroll(archive, a: SessionSearchArgs, out: dict) -> dict:
    anchor = archive.get_message(a.around_message_id)
    if anchor is None:
        raise SearchArgumentError("unknown_message", f"no message with id {a.around_message_id}",
                                  "around_message_id")
    sid = a.session_id
    if sid is None:
        sid = anchor["session_id"]
    elif anchor["session_id"] != sid:
        _session_or_error(archive, sid)
        raise SearchArgumentError(
            "anchor_not_in_session",
            f"message {anchor['id']} belongs to session {anchor['session_id']!r}, not {sid!r}; "
            "leave session_id out to scroll the message's own session", "around_message_id")
    session = _session_or_error(archive, sid)
    w = _window(a.window, SCROLL_WINDOW, out)
    before, after, more_before, more_after = _around(archive, sid, anchor["id"], w)
    reason = a.include_reasoning
    msgs = [render_message(m, _budget(HIT_CHARS), reason) for m in before]
    shown_anchor = render_message(anchor, _budget(HIT_CHARS), reason)
    shown_anchor["anchor"] = True
    msgs.append(shown_anchor)
    msgs.extend(render_message(m, _budget(HIT_CHARS), reason) for m in after)
    first, last = (before[0] if before else anchor), (after[-1] if after else anchor)
    out.update({
        "session": render_session(session),
        "anchor_id": anchor["id"],
        "window": w,
        "messages": msgs,
        "more_before": more_before,
        "more_after": more_after,
        # Re-anchor on these to page: the window around prev_anchor ends at the
        # message just before the first one shown (if there are enough), and
        # the one around next_anchor starts right after the last one shown.
        "prev_anchor": _page_anchor(archive, sid, first["id"], w, "desc") if more_before else None,
        "next_anchor": _page_anchor(archive, sid, last["id"], w, "asc") if more_after else None,
    })
    return out


def _page_anchor(archive, sid: str, edge_id: int, window: int, order: str) -> int:
    if order == "asc":
        rows = archive.messages_of(sid, after_id=edge_id, limit=window + 1, order="asc")
    else:
        rows = archive.messages_of(sid, before_id=edge_id, limit=window + 1, order="desc")
    return rows[min(window, len(rows) - 1)]["id"]


def _read(archive, a: SessionSearchArgs, out: dict) -> dict:
    session = _session_or_error(archive, a.session_id)
    sid, reason = session["id"], a.include_reasoning
    head = archive.messages_of(sid, limit=READ_HEAD + READ_TAIL + 1, order="asc")
    out["session"] = render_session(session)
    if len(head) <= READ_HEAD + READ_TAIL:
        out.update({"truncated": False, "total_messages": len(head),
                    "messages": [render_message(m, _budget(HIT_CHARS), reason) for m in head]})
        return out
    head = head[:READ_HEAD]
    tail = archive.messages_of(sid, after_id=head[-1]["id"], limit=READ_TAIL, order="desc")[::-1]
    total = max(archive.count_messages(sid), len(head) + len(tail))
    out.update({
        "truncated": True,
        "total_messages": total,
        "omitted_messages": total - len(head) - len(tail),
        "messages": [render_message(m, _budget(HIT_CHARS), reason) for m in head],
        "tail_messages": [render_message(m, _budget(HIT_CHARS), reason) for m in tail],
        "continue_with": {"session_id": sid, "around_message_id": head[-1]["id"],
                          "note": "scroll from the last head message to see the omitted middle"},
    })
    return out


def _group_hits(archive, a: SessionSearchArgs, limit: int) -> tuple[list, bool, int, int | None, set]:
    """Hits grouped by session, sessions in the order of their best hit:
    (groups, more_sessions, hits_read, ranked_among, complete).

    ``limit`` counts the sessions wanted, those the offset skips included.
    Each search reads FETCH hits (up to FETCH_MAX when sessions are long);
    the next one leaves out the sessions found so far, so it adds at least one session, and every hit it finds ranks
    below the hits read before (they were the best of a set holding it):
    the order of sessions is that of one long read.  ``complete`` holds the
    sessions all of whose hits were read (found by a search that ran out)."""
    skip = set() if a.session_id is not None else set(a.exclude_session_ids)
    groups: dict = {}
    complete: set = set()
    read, ranked_among, fetch = 0, None, FETCH
    floor: dict = {}  # relevance: the first search's rank_floor, so that every search ranks the same matches
    while True:
        hits = archive.search(
            a.query, include_reasoning=a.include_reasoning, roles=a.roles, session_id=a.session_id,
            after=a.after, before=a.before, sort=a.sort, limit=fetch, cursor=a.cursor,
            exclude_session_ids=sorted(skip | groups.keys()) or None, **floor,
        )
        ranked_among = ranked_among or getattr(hits, "ranked_among", None)
        if a.sort == "relevance" and not floor and getattr(hits, "rank_floor", None) is not None:
            floor = {"rank_floor": hits.rank_floor}
        read += len(hits)
        found = []
        for h in hits:
            if h.session_id not in groups:
                found.append(h.session_id)
            groups.setdefault(h.session_id, []).append(h)
        if len(hits) < fetch:
            complete.update(found)
            break
        if len(groups) > limit:
            break
        if len(found) < 2:  # long sessions: read more at a time
            fetch = min(fetch * 4, FETCH_MAX)
    return list(groups.values()), len(groups) > limit, read, ranked_among, complete


def _discovery(archive, a: SessionSearchArgs, out: dict) -> dict:
    if a.session_id is not None:
        _session_or_error(archive, a.session_id)
        if a.session_id in a.exclude_session_ids:
            out["notes"].append("session_id is also in exclude_session_ids; the named session is searched")
    w = _window(a.window, DISCOVERY_WINDOW, out)
    limit = _clamp("limit", a.limit, DISCOVERY_LIMIT, out["clamped"])
    offset = _clamp("offset", a.offset, DISCOVERY_OFFSET, out["clamped"])
    reason = a.include_reasoning
    groups, more, seen, ranked_among, complete = _group_hits(archive, a, offset + limit)
    sort = a.sort
    paged = {"offset": offset}
    if ranked_among:
        paged["ranked_among"] = ranked_among
        out["notes"].append(f"more than {ranked_among:,} messages match: relevance ranks the newest "
                            f"{ranked_among:,}; use after/before or sort newest/oldest to reach older ones")
    if more and sort != "relevance":  # continue at the first hit of the first session not shown
        first = groups[offset + limit][0].message_id
        paged["next_cursor"] = f"{sort}:{first + 1 if sort == 'newest' else first - 1}"
        out["notes"].append("next_cursor goes on at the first session not shown; a session shown here can show "
                            "again there with its other hits: add its id to exclude_session_ids to skip it")
    elif more and offset + limit <= DISCOVERY_OFFSET[2]:  # a page past the cap is not offered (not moved back)
        paged["next_offset"] = offset + limit
    elif more:
        out["notes"].append(f"relevance pages reach offset {DISCOVERY_OFFSET[2]}; sort newest/oldest "
                            "(next_cursor) or after/before reach the other sessions")
    listed = groups[offset:offset + limit]
    # a search with a cursor read the hits after it only; otherwise a session is
    # complete when the search that found it ran out
    counted = archive.count_by_session(
        a.query, [h[0].session_id for h in listed if a.cursor or h[0].session_id not in complete],
        include_reasoning=reason, roles=a.roles, after=a.after, before=a.before) if listed else {}
    pages = [_more_hits(archive, a, hits, counted) for hits in listed]
    results = []
    for hits in pages:
        best = hits[0]
        session = archive.session(best.session_id) or _orphan_session(archive, best.session_id)
        message = archive.get_message(best.message_id)
        if message is None:  # deleted since the search
            continue
        if session is None:  # an id another tool stored as bytes: found by the search, not by its id
            session = {"id": best.session_id, "title": None, "source": None, "started_at": message["timestamp"],
                       "metadata": {}, "message_count": None, "last_active": message["timestamp"],
                       "no_session_row": True}
            out["notes"].append(f"session {shown(best.session_id)} has an id another tool stored as bytes (a BLOB, "
                                "or text that is not UTF-8): its hits are shown, but it cannot be read or scrolled "
                                "by that id")
        total = max(counted.get(best.session_id, 0), len(hits))  # counted where the read may have missed some
        results.append(_session_result(archive, session, message, best, hits, w, reason, total))
    if a.session_id is not None and results and len(pages[0]) > 1 + OTHER_HITS:  # hits read past those listed
        paged["more_hits_in_session"] = True
        if sort != "relevance":
            paged["next_cursor"] = f"{sort}:{pages[0][OTHER_HITS].message_id}"
            out["notes"].append("next_cursor goes on with this session's hits after the last one listed")
        else:
            out["notes"].append("sort newest or oldest pages through this session's other hits (next_cursor)")
    out.update({
        "query": a.query,
        "include_reasoning": reason,
        "sort": sort,
        "window": w,
        "sessions": results,
        "more_sessions": more,
        **paged,
        "hits_considered": seen,
        "labels": LABELS,
    })
    if not results and groups:  # there are matches, all before the offset
        out["notes"].append(f"offset {offset} is past the last session that matches ({len(groups)} match)")
    elif not results and a.cursor is not None:
        out["notes"].append("no more matches after the cursor")
    elif not results:
        out["notes"].append("no match" + ("" if reason else "; reasoning was not searched "
                                                            "(include_reasoning=true searches it too)"))
    return out


def _more_hits(archive, a: SessionSearchArgs, hits: list, counted: dict) -> list:
    """A session's hits, read on in that session when the read that found it held
    fewer than its best and OTHER_HITS more but the session has more."""
    best = hits[0]
    if len(hits) > OTHER_HITS or counted.get(best.session_id, 0) <= len(hits):
        return hits
    more = archive.search(a.query, include_reasoning=a.include_reasoning, roles=a.roles, session_id=best.session_id,
                          after=a.after, before=a.before, sort=a.sort, limit=2 + OTHER_HITS, cursor=a.cursor)
    return [best] + [h for h in more if h.message_id != best.message_id][:OTHER_HITS]


def _session_result(archive, session, message, best, hits, w, reason, total: int) -> dict:
    sid = session["id"]
    snippet, marks = marked_snippet(best)
    column = getattr(best, "column", None) or (best.matched_in[0] if best.matched_in else None)
    before, after, more_before, more_after = _around(archive, sid, message["id"], w)
    shown_hit = render_message(message, _budget(HIT_CHARS), reason, focus_column=column,
                               focus=_match_focus(message, column, best))
    shown_hit["hit"] = True
    window = [render_message(m, _budget(CONTEXT_CHARS), reason) for m in before]
    window.append(shown_hit)
    window.extend(render_message(m, _budget(CONTEXT_CHARS), reason) for m in after)
    in_window = {m["id"] for m in before} | {message["id"]} | {m["id"] for m in after}
    first_id = before[0]["id"] if before else message["id"]
    last_id = after[-1]["id"] if after else message["id"]
    head = [m for m in archive.messages_of(sid, limit=HEAD_MESSAGES, order="asc")
            if m["id"] < first_id and m["id"] not in in_window]
    tail = [m for m in archive.messages_of(sid, limit=TAIL_MESSAGES, order="desc")[::-1]
            if m["id"] > last_id and m["id"] not in in_window]
    gap_before = more_before and bool(archive.messages_of(
        sid, after_id=head[-1]["id"] if head else None, before_id=first_id, limit=1))
    gap_after = more_after and bool(archive.messages_of(
        sid, after_id=last_id, before_id=tail[0]["id"] if tail else None, limit=1))
    return {
        "session": render_session(session),
        "hit": {
            "message_id": best.message_id,
            "role": best.role,
            "timestamp": best.timestamp,
            "timestamp_iso": iso(best.timestamp),
            "where": _label(column, best.role),
            "matched_in": list(best.matched_in),
            "snippet": snippet,
            "marks": marks,
            "route": best.route,
        },
        "other_hit_ids": [h.message_id for h in hits[1:1 + OTHER_HITS]],
        "hits_in_session": total,
        "head": [render_message(m, _budget(BOOKEND_CHARS), reason) for m in head],
        "messages_between_head_and_window": gap_before,
        "window": window,
        "messages_between_window_and_tail": gap_after,
        "tail": [render_message(m, _budget(BOOKEND_CHARS), reason) for m in tail],
    }


def _column_text(message: dict, column: str | None) -> str | None:
    value = message.get(column) if column else None
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _preview(archive, sid: str) -> str | None:
    msgs = archive.messages_of(sid, limit=PREVIEW_SCAN, order="asc")
    pick = next((m for m in msgs if m["role"] == "user" and (m["content"] or "").strip()), None)
    if pick is None:
        pick = next((m for m in msgs if (m["content"] or "").strip()), None)
    return None if pick is None else cut_text(pick["content"], _budget(PREVIEW_CHARS))[0]


def _browse(archive, a: SessionSearchArgs, out: dict) -> dict:
    limit = _clamp("limit", a.limit, BROWSE_LIMIT, out["clamped"])
    skip = _clamp("offset", a.offset, BROWSE_OFFSET, out["clamped"])
    lo, hi, excluded = a.after, a.before, a.exclude_session_ids
    picked, read, page, more, done, passed = [], 0, max(limit * 2, 20), False, False, 0
    while not done:
        batch = archive.sessions(limit=page, offset=read)
        read += len(batch)
        done = len(batch) < page
        for s in batch:
            if lo is not None and (s["last_active"] is None or s["last_active"] < lo):
                done = True  # most recently active first: the rest are older (or empty)
                break
            if s["id"] in excluded or (hi is not None and (s["started_at"] is None or s["started_at"] >= hi)):
                continue
            if passed < skip:  # the sessions of earlier pages
                passed += 1
                continue
            if len(picked) == limit:
                more = done = True
                break
            picked.append(s)
    sessions = []
    for s in picked:
        entry = render_session(s)
        entry["preview"] = _preview(archive, s["id"])
        sessions.append(entry)
    out.update({"sessions": sessions, "more_sessions": more, "offset": skip,
                "total_sessions": archive.count_sessions()})
    if more and skip + limit <= BROWSE_OFFSET[2]:
        out["next_offset"] = skip + limit
    elif more:
        out["notes"].append(f"browse pages reach offset {BROWSE_OFFSET[2]:,}; before/after reach the other sessions")
    elif not sessions and passed:
        out["notes"].append(f"offset {skip} is past the last session ({passed} listed before it)")
    return out


_RUN = {"scroll": _scroll, "discovery": _discovery, "read": _read, "browse": _browse}


def session_search(archive, query=None, session_id=None, around_message_id=None, window=None, limit=None,
                   include_reasoning=False, roles=None, after=None, before=None, sort=None,
                   exclude_session_ids=None, offset=None, cursor=None) -> dict:
    """Search, scroll, read or browse ``archive`` (see the module doc).  Never raises for bad
    input: the result then has ``error``.  The result is JSON-serializable."""
    return respond(archive, {"query": query, "session_id": session_id, "around_message_id": around_message_id,
                             "window": window, "limit": limit, "include_reasoning": include_reasoning,
                             "roles": roles, "after": after, "before": before, "sort": sort,
                             "exclude_session_ids": exclude_session_ids, "offset": offset, "cursor": cursor})


# An error names what was wrong, quoting it: held to this much, as results are to
# RESULT_CHARS (a 100,000-character session id was quoted whole).
ERROR_CHARS = 500


def _held(error: dict) -> dict:
    for key, limit in (("message", ERROR_CHARS), ("argument", 100)):
        if isinstance(error.get(key), str):
            error[key] = cut_text(error[key], limit)[0]
    return error


def respond(archive, raw: Mapping[str, Any]) -> dict:
    """:func:`session_search` for arguments as a dict (names as in ARGUMENTS; None means not
    given): validate them, run the call, and return the result or the error as a dict."""
    try:
        given = _given(raw)
    except SearchArgumentError as exc:
        return {"mode": "unknown", "error": _held(exc.as_dict())}
    mode = infer_mode(given.get("query"), given.get("session_id"), given.get("around_message_id"))
    try:
        return execute(archive, parse_arguments(given), ignored=_ignored(mode, given))
    except SearchArgumentError as exc:
        return {"mode": mode, "error": _held(exc.as_dict())}
    except QueryError as exc:
        return {"mode": mode, "error": _held({"code": "bad_query", "message": str(exc), "argument": "query"})}
    except Exception as exc:  # noqa: BLE001 -- an agent loop must get an answer, not a traceback
        if _is_database_error(exc):
            return {"mode": mode, "error": _held({"code": "database_error",
                                                  "message": f"{type(exc).__name__}: {exc}"})}
        raise


def execute(archive, a: SessionSearchArgs, *, ignored: Iterable[str] = ()) -> dict:
    """Run validated arguments on ``archive`` and render the result.

    ``ignored`` (arguments given that the mode does not use) is reported in the
    result.  Raises SearchArgumentError (unknown session or message ...),
    QueryError and SQLite's errors; ``respond`` turns them into results.
    A result over RESULT_CHARS is rendered again with every budget scaled
    down (see the module doc)."""
    scale, cap, over = 1.0, None, False
    # every rendering reads the same hits: searched once, in one snapshot (_Once)
    reading = getattr(archive, "reading", None)
    with reading() if reading is not None else contextlib.nullcontext():
        once = _Once(archive)
        while True:
            out = _render(once, a, list(ignored), scale, cap)
            size = len(json.dumps(out, ensure_ascii=False, default=str))
            if size <= RESULT_CHARS:
                break
            if scale > MIN_SCALE:  # first every budget, then the window (fewer messages)
                scale = max(MIN_SCALE, scale * 0.9 * RESULT_CHARS / size)
            elif out.get("window"):
                cap = out["window"] // 2
            else:
                over = True
                break
    if scale < 1:
        out["budget_scale"] = round(scale, 3)
        window = "" if cap is None else f" and the window is {cap}"
        out.setdefault("notes", []).append(
            f"the result is held to about {RESULT_CHARS:,} characters, so messages are cut shorter than usual "
            f"(each cut says how much){window}; scroll or read a session to see more of it" if not over else
            f"the result is about {size:,} characters, over the usual {RESULT_CHARS:,} at the least budgets"
            f"{window}: each field keeps at least {MIN_FIELD_CHARS} characters, and JSON writes some as several "
            "(control characters such as a terminal's colour codes take six); ask for fewer (limit) or read one "
            "session at a time")
    return out


def _frozen(value):
    """``value`` as a dictionary key: collections as tuples (their order as given)."""
    if isinstance(value, (list, tuple, set, frozenset)):
        return tuple(_frozen(v) for v in value)
    return value


class _Once:
    """``archive`` whose ``search`` and ``count_by_session`` answer each set of
    arguments once: execute renders a wide result again, smaller, and each
    rendering asks the same questions (the hits do not depend on the budgets)."""

    def __init__(self, archive):
        self._archive, self._kept = archive, {}

    def __getattr__(self, name):
        return getattr(self._archive, name)

    def _once(self, name, args, kwargs):
        try:
            key = (name, _frozen(args), tuple(sorted((k, _frozen(v)) for k, v in kwargs.items())))
            hash(key)
        except TypeError:  # an argument that cannot be a key: ask every time
            return getattr(self._archive, name)(*args, **kwargs)
        if key not in self._kept:
            self._kept[key] = getattr(self._archive, name)(*args, **kwargs)
        return self._kept[key]

    def search(self, *args, **kwargs):
        return self._once("search", args, kwargs)

    def count_by_session(self, *args, **kwargs):
        return self._once("count_by_session", args, kwargs)


def _window(value, spec, out: dict) -> int:
    """The window to use: clamped to ``spec``, then to what the result's size allows (execute)."""
    w = _clamp("window", value, spec, out["clamped"])
    cap = _WINDOW_CAP.get()
    return w if cap is None else min(w, cap)


def _render(archive, a: SessionSearchArgs, ignored: list, scale: float, cap: int | None) -> dict:
    mode = a.mode
    out: dict = {"mode": mode, "clamped": {}, "notes": []}
    if ignored:
        out["ignored_arguments"] = ignored
        out["notes"].append(f"{', '.join(ignored)} not used in {mode} mode")
    if mode in ("scroll", "read") and a.session_id is not None and a.session_id in a.exclude_session_ids:
        out["notes"].append("session_id is also in exclude_session_ids; the named session is shown")
    token, token_cap = _SCALE.set(scale), _WINDOW_CAP.set(cap)
    reading = getattr(archive, "reading", None)  # one snapshot for all the reads of the call
    try:
        with reading() if reading is not None else contextlib.nullcontext():
            _RUN[mode](archive, a, out)
    finally:
        _SCALE.reset(token)
        _WINDOW_CAP.reset(token_cap)
    for key in ("clamped", "notes", "ignored_arguments"):  # bookkeeping last, and only when there is some
        value = out.pop(key, None)
        if value:
            out[key] = value
    return out


def _is_database_error(exc: BaseException) -> bool:
    try:
        import apsw
    except ImportError:  # pragma: no cover - the archive needs apsw
        return False
    return isinstance(exc, apsw.Error)
