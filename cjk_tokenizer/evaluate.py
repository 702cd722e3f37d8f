"""The query's meaning, evaluated in Python on a row's text.

This is the reference every route is tested against, and the routes use it
too, only where their index gives a superset (``cjk_term_match`` in SQL), for
``matched_in`` and for snippets.  The rules are in query.py's docstring; this
module is their only implementation.
"""
from __future__ import annotations

from typing import Iterator, Sequence

from . import _native
from .query import And, Not, Or, Term, positive_terms, term_from_key
from .units import CJK, WORD, Analysis, analyze, clean


def _unit_span(q, d, j: int, k: int, prefix: bool, start: int, end: int):
    """Span of doc unit ``d`` (at start:end) that query unit ``q`` covers as
    unit j of k, or None."""
    if q.kind != d.kind:
        return None
    if q.kind == WORD:
        if d.text == q.text or (prefix and j == k - 1 and d.text.startswith(q.text)):
            return start, end
        return None
    n = len(q.text)
    if j == 0 and d.text.endswith(q.text):
        return end - n, end
    if j == k - 1 and d.text.startswith(q.text):
        return start, start + n
    if d.text == q.text:
        return start, end
    return None


def spans(term: Term, an: Analysis) -> Iterator[tuple[int, int]]:
    """Every occurrence of ``term`` in ``an``, as spans of ``an.folded``, in order."""
    q_units = term.units
    k = len(q_units)
    if k == 1 and q_units[0].kind == CJK:
        # a run of CJK letters occurs in the folded text only inside a CJK run
        needle, text = q_units[0].text, an.folded
        i = text.find(needle)
        while i >= 0:
            yield i, i + len(needle)
            i = text.find(needle, i + 1)
        return
    if k == 1:
        q = q_units[0].text
        for a, b, t in an.tokens:
            if t == q or (term.prefix and t.startswith(q)):
                yield a, b
        return
    units, starts, ends = an.units, an.starts, an.ends
    first = q_units[0]
    for i in range(len(units) - k + 1):
        if units[i].kind != first.kind:
            continue
        out = None
        for j in range(k):
            sp = _unit_span(q_units[j], units[i + j], j, k, term.prefix, starts[i + j], ends[i + j])
            if sp is None:
                break
            out = sp if out is None else (out[0], sp[1])
        else:
            yield out


def term_matches(term: Term, text: str | None) -> bool:
    """Does ``term`` match this one column text?"""
    if not text:
        return False
    if term.is_cjk_run:  # substring of the folded text: no tokenizing needed
        return term.units[0].text in _native.fold(clean(text), term.variants)
    an = analyze(text, term.variants)
    if len(term.units) == 1:
        q = term.units[0].text
        if term.prefix:
            return any(w.startswith(q) for w in an.words)
        return q in an.words
    return next(spans(term, an), None) is not None


def evaluate(node, texts: Sequence[str | None]) -> bool:
    """Does a row whose searched columns hold ``texts`` match ``node``?"""
    if isinstance(node, Term):
        return any(term_matches(node, t) for t in texts)
    if isinstance(node, Not):
        return not evaluate(node.child, texts)
    if isinstance(node, And):
        return all(evaluate(c, texts) for c in node.children)
    if isinstance(node, Or):
        return any(evaluate(c, texts) for c in node.children)
    raise TypeError(f"not a query node: {node!r}")


def matched_terms(node, columns: dict[str, str | None]) -> dict[str, list[Term]]:
    """Per column (in the given order), the distinct searched-for terms that match it."""
    wanted = list(dict.fromkeys(positive_terms(node)))
    return {name: [t for t in wanted if term_matches(t, text)] for name, text in columns.items()}


def matched_in(node, columns: dict[str, str | None]) -> list[str]:
    """Columns (in the given order) where a searched-for term matches."""
    return [name for name, found in matched_terms(node, columns).items() if found]


def first_match(node, text: str | None) -> tuple[int, int] | None:
    """Character span in ``text`` of the earliest searched-for term occurrence."""
    if not text:
        return None
    best = None
    for t in positive_terms(node):
        an = analyze(text, t.variants)  # one parse: every term folds alike
        sp = next(spans(t, an), None)
        if sp is not None and (best is None or sp[0] < best[0]):
            best = sp
    if best is None:
        return None
    return an.raw_span(best[0], best[1])


def sql_term_match(key: str, *texts) -> int:
    """SQL function ``cjk_term_match(term_key, col, ...)``: 1 if the term matches a column."""
    term = term_from_key(key)
    return int(any(term_matches(term, t) for t in texts if isinstance(t, str)))
