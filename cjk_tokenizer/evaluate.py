"""The query's meaning, evaluated in Python on a row's text.

This is the reference every route is tested against, and the routes use it
too, only where their index gives a superset (``cjk_term_match`` in SQL), for
``matched_in`` and for snippets.  The rules are in query.py's docstring; this
module is their only implementation.
"""
from __future__ import annotations

import re
import threading
from contextlib import contextmanager
from typing import Iterator, Sequence

from . import _native
from .query import And, Not, Or, Term, positive_terms, term_from_key, terms as all_terms
from .records import stored_text
from .units import (_CACHE_LIMIT, CACHE_CHARS, CJK, WORD, Analysis, Unit, _fold_map, _SizedCache, analyze, clean, pieces,
                    word_fold)


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


# ---- big texts -------------------------------------------------------------
#
# A text over _CACHE_LIMIT characters (a tool output of many megabytes) is read
# in pieces (units.pieces): every unit lies inside one piece, so a one-unit
# term is checked piece by piece, and a term of k units carries the last k-1
# units of the pieces before.  Memory stays that of one piece, whatever the
# size of the row.


def _scan_big(terms, text: str, found: dict) -> None:
    """Set ``found[t]`` to the first raw span of each term in a big ``text``
    (None: no match), in one pass over its pieces."""
    pending = list(terms)
    variants = any(t.variants for t in pending)  # one archive, one folding: every term folds alike
    # per term of k units: the last k-1 units of the pieces before, as
    # (unit, raw start, raw end, raw text of a CJK run)
    carries: dict = {t: [] for t in pending}
    for base, piece in pieces(text):
        an = Analysis(piece, variants)
        cmap = None

        def raw_entry(entry):
            nonlocal cmap
            if len(entry) == 4:  # from an earlier piece: raw already
                return entry
            u, a, b = entry
            if len(an.folded) != len(piece):  # folding merged characters: map offsets back
                cmap = cmap or _fold_map(an.raw)
                a, b = cmap[a], cmap[b]
            return u, base + a, base + b, piece[a:b] if u.kind == CJK else None

        for t in list(pending):
            k = len(t.units)
            if k == 1:
                word = t.units[0].kind == WORD and not t.prefix
                sp = None if word and t.units[0].text not in an.words else next(spans(t, an), None)
                if sp is not None:
                    ra, rb = an.raw_span(*sp)
                    sp = (base + ra, base + rb)
            elif not _may_end_in(t, an):  # no match ends here: only the carry moves on
                sp = None
                carries[t] = [raw_entry(e) for e in (carries[t] + _tail_units(an, k - 1))[-(k - 1):]]
            else:
                seq, sp = carries[t] + list(zip(an.units, an.starts, an.ends)), None
                q0 = t.units[0]
                for i in range(len(seq) - k + 1):
                    d = seq[i][0]
                    if d.kind != q0.kind or (d.kind == WORD and d.text != q0.text):
                        continue  # the first unit decides most positions
                    if all(_unit_span(t.units[j], seq[i + j][0], j, k, t.prefix, 0, len(seq[i + j][0].text))
                           for j in range(k)):
                        sp = _raw_match(t, [raw_entry(seq[i + j]) for j in range(k)])
                        break
                carries[t] = [raw_entry(e) for e in seq[max(0, len(seq) - k + 1):]]
            if sp is not None:
                found[t] = sp
                pending.remove(t)
        if not pending:
            return
    for t in pending:
        found[t] = None


def _may_end_in(term: Term, an: Analysis) -> bool:
    """Could a match of ``term`` end in this piece?  (Its last unit is there.)"""
    last = term.units[-1]
    if last.kind == CJK:
        return last.text in an.folded
    if term.prefix:
        return any(w.startswith(last.text) for w in an.words)
    return last.text in an.words


def _tail_units(an: Analysis, m: int) -> list:
    """The last ``m`` units of a piece as (unit, start, end), without building them all."""
    f = an.folded
    tail = [(a, b, None) for a, b in an.runs[-m:]] + an.tokens[-m:]
    tail.sort(key=lambda e: e[0])
    return [(Unit(CJK, f[a:b], f[a:b]) if t is None else Unit(WORD, t, f[a:b]), a, b) for a, b, t in tail[-m:]]


def _raw_match(term: Term, entries: list) -> tuple[int, int]:
    """Raw span of ``term`` over the units ``entries`` (it matches them)."""
    k = len(term.units)
    out = None
    for j, (u, ra, rb, raw) in enumerate(entries):
        n = len(u.text)
        # the unit as a span of its own folded text 0..n, then as raw offsets
        sp = _unit_span(term.units[j], u, j, k, term.prefix, 0, n)
        if sp != (0, n):  # part of a CJK run: map within the run
            cmap = _fold_map(raw)
            sp = (ra + cmap[sp[0]], ra + cmap[sp[1]])
        else:
            sp = (ra, rb)
        out = sp if out is None else (out[0], sp[1])
    return out


# The last big text read and the first span of each term in it: a row is
# checked by the route, then for matched_in and its snippet, and each would
# otherwise read it again.  Holds that one text, no analysis of it.
_last_big: tuple = ("", {})


_UNKNOWN, _MATCHES = object(), object()


def _big_found(text: str) -> dict:
    global _last_big
    cached, found = _last_big
    if not (cached is text or cached == text) or len(found) > 256:
        found = {}
        _last_big = (text, found)
    return found


_hint = threading.local()


@contextmanager
def checking(node):
    """While a query runs: its terms, so that the first check of a big text
    (one term, from SQL) reads it once for all of them."""
    _hint.terms = all_terms(node)
    try:
        yield
    finally:
        _hint.terms = ()


def _first_big_spans(terms, text: str, *, need_span: bool = True) -> dict:
    """term -> first raw span of it in a big ``text``, or None if it does not
    match (``need_span=False``: _MATCHES may stand for the span)."""
    found = _big_found(text)
    hinted = [t for t in getattr(_hint, "terms", ()) if t not in found]
    if hinted and any(t not in found for t in terms):
        _scan_big(list(dict.fromkeys(hinted + [t for t in terms if t not in found])), text, found)
    for t in terms:
        if t not in found and t.is_cjk_run:  # cheap first: a substring of the folded text?
            needle = t.units[0].text
            found[t] = _MATCHES if any(needle in _native.fold(clean(p), t.variants) for _, p in pieces(text)) else None
    todo = [t for t in dict.fromkeys(terms) if t not in found or (need_span and found[t] is _MATCHES)]
    if todo:
        _scan_big(todo, text, found)
    return {t: found[t] for t in terms}


# ---- checks ------------------------------------------------------------------


_SEPARATED: dict = {}  # term -> the patterns _may_match searches for (empty: nothing to check)


class _Folded:
    """A text as _may_match reads it: folded as the indexes fold it, and (when first
    asked) with each word character folded as unicode61 folds it inside a word."""

    __slots__ = ("text", "variants", "folded", "_words")

    def __init__(self, text: str, variants: bool):
        self.text, self.variants = text, variants
        self.folded = _native.fold(clean(text), variants)
        self._words: str | None = None

    @property
    def words(self) -> str:
        if self._words is None:
            self._words = self.folded.translate(word_fold())
        return self._words


# A row is checked for every term of a query, and again by each route and for its
# snippet: its folded texts are kept, within the same bound as the analyses (a big
# text, which that bound would drop at once, is kept alone, per thread).
_fold_cache = _SizedCache(CACHE_CHARS, _Folded)
_folds = threading.local()


def _folded(text: str, variants: bool) -> _Folded:
    if len(text) <= _CACHE_LIMIT:
        return _fold_cache.get(text, variants)
    last = getattr(_folds, "last", None)
    if last is None or last.variants != variants or not (last.text is text or last.text == text):
        last = _folds.last = _Folded(text, variants)
    return last


def _separated(term: Term) -> list:
    patterns = _SEPARATED.get(term)
    if patterns is None:
        pairs = [(u.text[-1], v.text[0]) for u, v in zip(term.units, term.units[1:]) if u.kind == v.kind == CJK]
        cjk = "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in _native.cjk_ranges()) if pairs else ""
        patterns = [re.compile(f"{re.escape(a)}[^{cjk}0-9A-Za-z]+{re.escape(b)}") for a, b in pairs]
        if len(_SEPARATED) > 512:
            _SEPARATED.clear()
        _SEPARATED[term] = patterns
    return patterns


def _may_match(term: Term, text: str) -> bool:
    """A necessary condition for ``term`` to match ``text``, checked at C speed before the
    text is tokenized here (which costs about a microsecond a character): rows an index
    cannot tell apart from matches, or rows a route reads without an index, mostly fail it.

    - Each unit stands in the text as folded: a CJK unit as it is, a word as unicode61
      folds it inside a word (units.word_fold), so a rare word glued to CJK text costs a
      row a substring search, not a tokenizing.
    - Two CJK units in a row (the phrase "大 学") stand in two runs: the first one's last
      character and the second one's first have at least one character between them that
      is neither CJK nor an ASCII letter or digit (both are tokens).  Rows where they stand
      in one run (大学), which the cjk index matches too, fail it."""
    f = _folded(text, term.variants)
    return (all(u.text in (f.folded if u.kind == CJK else f.words) for u in term.units)
            and all(p.search(f.folded) for p in _separated(term)))


def term_matches(term: Term, text: str | None) -> bool:
    """Does ``term`` match this one column text?"""
    if not text:
        return False
    if term.is_cjk_run and len(text) <= _CACHE_LIMIT:  # substring of the folded text: no tokenizing needed
        return term.units[0].text in _native.fold(clean(text), term.variants)
    if len(text) > _CACHE_LIMIT:
        found = _big_found(text)  # read once for every term of the query, or refused once
        if term not in found and not _may_match(term, text):
            found[term] = None
            return False
        return _first_big_spans([term], text, need_span=False)[term] is not None
    if not _may_match(term, text):
        return False
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


def live_terms(node, texts: Sequence[str | None]) -> list[Term]:
    """The searched-for terms of the parts of ``node`` that match a row whose searched
    columns hold ``texts``, as FTS5 reports a row's phrase matches: a term in an OR
    branch the row does not match counts for nothing, although the term itself may
    occur (``alpha OR beta gamma`` on a row with alpha and beta: alpha only), and
    nothing under a NOT counts.  So every route feeds the snippet rule the same
    matches."""
    if isinstance(node, Term):
        return [node] if evaluate(node, texts) else []
    if isinstance(node, Not):
        return []
    if isinstance(node, And):
        return [t for c in node.children for t in live_terms(c, texts)] if evaluate(node, texts) else []
    if isinstance(node, Or):
        return [t for c in node.children for t in live_terms(c, texts)]
    raise TypeError(f"not a query node: {node!r}")


def matched_terms(node, columns: dict[str, str | None]) -> dict[str, list[Term]]:
    """Per column (in the given order), the distinct searched-for terms that match it,
    among those of the parts of ``node`` the row matches (live_terms)."""
    wanted = list(dict.fromkeys(positive_terms(node)))
    for text in columns.values():
        if text and len(text) > _CACHE_LIMIT:  # every term in one pass over a big text
            _first_big_spans(wanted, text, need_span=False)
    live = set(live_terms(node, list(columns.values())))
    return {name: [t for t in wanted if t in live and term_matches(t, text)] for name, text in columns.items()}


def matched_in(node, columns: dict[str, str | None]) -> list[str]:
    """Columns (in the given order) where a searched-for term matches."""
    return [name for name, found in matched_terms(node, columns).items() if found]


def first_match(node, text: str | None, live=None) -> tuple[int, int] | None:
    """Character span in ``text`` of the earliest searched-for term occurrence
    (``live``: of these terms only)."""
    if not text:
        return None
    terms = [t for t in positive_terms(node) if live is None or t in live]
    if len(text) > _CACHE_LIMIT:
        best = None
        for sp in _first_big_spans(terms, text).values():  # earliest; ties: the earlier term
            if sp is not None and (best is None or sp[0] < best[0]):
                best = sp
        return best
    best = None
    for t in terms:
        an = analyze(text, t.variants)  # one parse: every term folds alike
        sp = next(spans(t, an), None)
        if sp is not None and (best is None or sp[0] < best[0]):
            best = sp
    if best is None:
        return None
    return an.raw_span(best[0], best[1])


def all_matches(node, text: str | None, live=None) -> list[tuple[int, int, int]]:
    """Every occurrence of every searched-for term in ``text``: ``(start, end, k)``,
    character spans of ``text``, k numbering the query's distinct searched-for
    terms as FTS5 numbers its phrases (what the snippet rule ranks windows by).
    ``live``: only these terms (the row's live_terms); None: every one.

    A text over _CACHE_LIMIT characters is read in pieces and never whole: it
    gives its earliest match only."""
    if not text:
        return []
    if len(text) > _CACHE_LIMIT:
        sp = first_match(node, text, live)
        return [] if sp is None else [(sp[0], sp[1], 0)]
    out = []
    for k, t in enumerate(dict.fromkeys(positive_terms(node))):
        if live is not None and t not in live:
            continue
        an = analyze(text, t.variants)
        out.extend((*an.raw_span(a, b), k) for a, b in spans(t, an))
    return out


def sql_term_match(key: str, *texts) -> int:
    """SQL function ``cjk_term_match(term_key, col, ...)``: 1 if the term matches a column."""
    term = term_from_key(key)
    texts = [stored_text(t) for t in texts]  # columns come as their bytes (records.read_sql)
    return int(any(term_matches(term, t) for t in texts if isinstance(t, str)))
