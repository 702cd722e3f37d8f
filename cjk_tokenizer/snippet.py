"""Snippets: which part of a text a hit shows, on every route.

There is one snippet rule, stated in one paragraph at the top of
csrc/cjk_snippet.h and defined by the C code below it (the project's
character rules live in C).  The cjk route's ``cjk_match`` applies it inside
SQLite; this module asks the same code (``_native.snippet_window``) for every
route that checks rows in Python, and session_search cuts a hit message
around its match with it too.

``max_chars`` here counts the whole snippet, ellipses included, so the rule's
budget is ``max_chars - 2`` (what search.py hands ``cjk_match`` as well).
Lone surrogates become U+FFFD, so a snippet always encodes as UTF-8.

Without the compiled module (a broken install, ``_native.available()`` False)
the safe meaning is a plain cut centred on the first match: same budget, same
ellipses, not splitting a character from its combining marks, but without the
sentence and word rules.
"""
from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Iterable

from . import _native
from .units import clean

ELLIPSIS = "…"


@dataclass(frozen=True)
class Snippet:
    """A snippet of a text: what is shown and where its highlight lies."""

    text: str  # the snippet, ellipses included
    highlight: tuple[int, int] | None  # the first highlight shown, within ``text``
    span: tuple[int, int] | None  # that highlight's whole match, within the source text
    window: tuple[int, int]  # [start, end) of the source text the snippet shows


def render(text: str, window: tuple[int, int], cut: tuple[bool, bool], first: tuple[int, int] | None) -> Snippet:
    """The snippet of ``text`` showing ``window``, with an ellipsis on each ``cut`` side,
    highlighting ``first`` (a match's span in ``text``) clipped to the window.

    The highlight's place is ``placed``'s, which search.py also applies to the
    C function's snippets: computed in one place, from data, never by searching
    the snippet for the matched text."""
    start, end = window
    head = ELLIPSIS if cut[0] else ""
    shown = head + text[start:end] + (ELLIPSIS if cut[1] else "")
    highlight, span = placed(window, cut, first)
    return Snippet(shown, highlight, span, (start, end))


def placed(window: tuple[int, int], cut: tuple[bool, bool], first: tuple[int, int] | None):
    """(highlight within the snippet, span within the source text) of ``first`` in the
    snippet showing ``window`` with an ellipsis on each ``cut`` side: clipped to the
    window, (None, None) when it lies outside.  The one place that rule lives."""
    start, end = window
    if first is None or not (first[0] < end and first[1] > start):
        return None, None
    head = len(ELLIPSIS) if cut[0] else 0
    return (max(first[0], start) - start + head, min(first[1], end) - start + head), first


def choose(text: str | None, matches: Iterable[tuple[int, int, int]], max_chars: int) -> Snippet:
    """The snippet of ``text`` by the one rule.  ``matches``: ``(start, end, term)``
    character spans of every occurrence of the searched-for terms (``term``
    numbers the query's distinct terms from 0); none shows the text's start."""
    text = clean(text or "")
    matches = [m for m in matches if 0 <= m[0] <= m[1] <= len(text)]
    budget = max(1, max_chars - 2)
    if not _native.available():
        return _centred(text, matches, budget)
    start, end, cut_before, cut_after, first = _native.snippet_window(text, matches, budget)
    return render(text, (start, end), (cut_before, cut_after), first)


def make_snippet(text: str | None, span: tuple[int, int] | None, max_chars: int) -> tuple[str, tuple[int, int] | None]:
    """``(snippet, highlight)`` for one match ``span`` of ``text`` (None: the text's
    start); highlight is the match's span inside the snippet."""
    out = choose(text, [] if span is None else [(span[0], span[1], 0)], max_chars)
    return out.text, out.highlight


def _is_mark(ch: str) -> bool:
    return unicodedata.category(ch).startswith("M")


def _centred(text: str, matches: list, budget: int) -> Snippet:
    """The safe meaning without the compiled module: a cut centred on the first match."""
    n = len(text)
    first = min(matches)[:2] if matches else None
    if n <= budget:
        return render(text, (0, n), (False, False), first)
    s, e = first if first else (0, 0)
    e = min(e, s + budget)
    start = max(0, min(s - (budget - (e - s)) // 2, n - budget))
    end = start + budget
    while start < s and _is_mark(text[start]):
        start += 1
    while end > e and end < n and _is_mark(text[end]):
        end -= 1
    return render(text, (start, end), (start > 0, end < n), first)
