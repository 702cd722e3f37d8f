"""Character-limited snippets around a match, on every route.

A snippet is at most ``max_chars`` characters, ellipses included, always holds
the whole match when the match fits, starts after a sentence end (CJK 。！？；
or ASCII, or a newline) when one is close before the match, and ends at one
when it can.  It never splits a character from the combining marks after it,
and lone surrogates become U+FFFD, so it always encodes as UTF-8.
"""
from __future__ import annotations

import unicodedata

from .units import clean

ELLIPSIS = "…"
SENTENCE_ENDS = frozenset("。！？；.!?;\n")


def _is_mark(ch: str) -> bool:
    return unicodedata.category(ch).startswith("M")


def make_snippet(text: str | None, span: tuple[int, int] | None, max_chars: int) -> tuple[str, tuple[int, int] | None]:
    """``(snippet, highlight)``: highlight is the match's span inside the snippet."""
    text = clean(text or "")
    n = len(text)
    if n <= max_chars:
        return text, span
    if span is None:
        s = e = 0
    else:
        s, e = span
    if e - s > max_chars - 2:  # the match alone is too long: show its start
        e = s + max_chars - 2
    budget = max_chars - 2 - (e - s)
    left = min(s, max(budget // 3, budget - (n - e)))
    right = min(n - e, budget - left)
    start, end = s - left, e + right
    # begin a sentence rather than mid-way, when a sentence end is near
    for k in range(s - 1, start - 1, -1):
        if text[k] in SENTENCE_ENDS:
            start = k + 1
            break
    while start < s and text[start].isspace():
        start += 1
    # end at a sentence end when one lies after the match
    for k in range(end - 1, e - 1, -1):
        if text[k] in SENTENCE_ENDS:
            end = k + 1
            break
    while start < s and _is_mark(text[start]):
        start += 1
    while end > e and end < n and _is_mark(text[end]):
        end -= 1
    head = ELLIPSIS if start > 0 else ""
    tail = ELLIPSIS if end < n else ""
    out = head + text[start:end] + tail
    if span is None:
        return out, None
    return out, (s - start + len(head), e - start + len(head))
