"""The query language: one parser, one AST, for every route.

Any string is a query.  It is read once, here; the compilers (compiler.py) and
the router (router.py) only ever see the AST.

Syntax
------
``word``            a term.  A bareword that holds several units becomes a
                    phrase: ``foo-bar``, ``file.py:42``, ``修改youer服务``.
``"a phrase"``      a term whose units must appear in this order, adjacent.
``word*``           prefix: the last word of the term may continue
                    (``"error mess"*`` matches "error message").  ``*`` after
                    CJK text changes nothing (CJK text already matches inside
                    longer runs); ``*`` anywhere else is punctuation.
``a b``, ``a AND b``  both (implicit AND).
``a OR b``          either.  OR binds looser than AND: ``a b OR c`` is
                    ``(a b) OR c``.
``NOT a``, ``-a``   without.  ``-`` negates only at the start of a word
                    (``x-y`` is the phrase "x y").  A group with only negated
                    terms (``-a``, ``NOT a``, ``x OR -y``) means every message
                    in scope without them.
``( ... )``         grouping.  ``(`` inside a word is part of it
                    (``print(x)`` is the phrase "print x").

Only uppercase ``OR``, ``AND``, ``NOT`` are operators.

Meaning of a term
-----------------
A term's text becomes units (see units.py): CJK runs and unicode61 words,
after width folding, case folding and accent removal.  A term matches a column
when the column's units contain the term's units consecutively, where

- a word unit equals a word of the column (or starts it, for the last unit of
  a prefix term);
- a term that is a single CJK run matches anywhere inside a CJK run (substring:
  大 finds 大别山);
- in a term of several units, a CJK unit must end its run when it comes first,
  start it when it comes last, and be the whole run in between (修改youer
  matches 请修改youer服务; the units are adjacent whatever the spacing).

A message matches a term when one of the searched columns does.

Safe meanings for everything else
---------------------------------
- An unmatched ``"`` runs to the end of the query; an unmatched ``(`` closes
  at the end; a ``)`` with no ``(`` is ignored.
- An operator with nothing to apply to (``OR`` first or last, ``NOT`` at the
  end, the second OR of ``a OR OR b``) is ignored.  To search for the word,
  write it in lowercase or quote it: ``"OR"``.
- FTS5 syntax is not syntax here: ``:^{}+``, ``NEAR``, ``col:``, ``*`` inside a
  word are text; punctuation separates words (``content:error`` is the phrase
  "content error").
- NUL and other control characters separate words; lone surrogates (not
  valid Unicode text) do too.
- Terms with no letters or digits (``!!!``, ``-``, emoji) are dropped; if
  nothing searchable is left the query raises :class:`QueryError`.

Limits (QueryError beyond them): MAX_QUERY_CHARS characters, MAX_TERMS terms,
MAX_UNITS units in all terms together, MAX_DEPTH nested groups.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache

from .errors import QueryError
from .units import CJK, WORD, Unit, clean, query_units

MAX_QUERY_CHARS = 20_000
MAX_TERMS = 100
MAX_UNITS = 500
MAX_DEPTH = 32


# ---- AST -------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """A phrase of units; ``prefix`` only ever applies to a last word unit."""

    text: str  # as typed, for explain()
    units: tuple[Unit, ...]
    prefix: bool = False
    # Han variants fold (an archive created with fold_variants=True): the units
    # are folded so, and so is every text the term is compared with
    variants: bool = False

    @property
    def is_cjk_run(self) -> bool:
        """A single CJK run: substring semantics."""
        return len(self.units) == 1 and self.units[0].kind == CJK

    @property
    def words_only(self) -> bool:
        return all(u.kind == WORD for u in self.units)

    def key(self) -> str:
        """A compact, stable serialization (the SQL verification function's argument)."""
        return json.dumps([[u.kind[0], u.text] for u in self.units] + [int(self.prefix), int(self.variants)],
                          ensure_ascii=False)

    def __str__(self) -> str:
        inner = " ".join(u.text for u in self.units).replace('"', '""')
        return f'"{inner}"' + ("*" if self.prefix else "")


@dataclass(frozen=True)
class And:
    children: tuple

    def __str__(self) -> str:
        return "(" + " AND ".join(map(str, self.children)) + ")"


@dataclass(frozen=True)
class Or:
    children: tuple

    def __str__(self) -> str:
        return "(" + " OR ".join(map(str, self.children)) + ")"


@dataclass(frozen=True)
class Not:
    child: object

    def __str__(self) -> str:
        return f"NOT {self.child}"


Node = object  # Term | And | Or | Not


@lru_cache(maxsize=1024)
def term_from_key(key: str) -> Term:
    data = json.loads(key)
    units = tuple(Unit(CJK if k == "c" else WORD, t) for k, t in data[:-2])
    return Term(" ".join(u.text for u in units), units, bool(data[-2]), bool(data[-1]))


def terms(node) -> list[Term]:
    """Every term of the AST, in order."""
    if isinstance(node, Term):
        return [node]
    if isinstance(node, Not):
        return terms(node.child)
    return [t for c in node.children for t in terms(c)]


def positive_terms(node, negated: bool = False) -> list[Term]:
    """Terms that are searched for (not under a NOT)."""
    if isinstance(node, Term):
        return [] if negated else [node]
    if isinstance(node, Not):
        return positive_terms(node.child, not negated)
    return [t for c in node.children for t in positive_terms(c, negated)]


def negative_terms(node, negated: bool = False) -> list[Term]:
    """Terms that are excluded (under a NOT)."""
    if isinstance(node, Term):
        return [node] if negated else []
    if isinstance(node, Not):
        return negative_terms(node.child, not negated)
    return [t for c in node.children for t in negative_terms(c, negated)]


def has_positive(node) -> bool:
    """False for a node that only excludes (NOT x, or an AND of NOTs)."""
    if isinstance(node, Term):
        return True
    if isinstance(node, Not):
        return False
    if isinstance(node, And):
        return any(has_positive(c) for c in node.children)
    return all(has_positive(c) for c in node.children)


# ---- lexer -----------------------------------------------------------------

# token kinds
_TERM, _LP, _RP, _OR, _AND, _NOT, _NEG = "TERM", "(", ")", "OR", "AND", "NOT", "-"
_OPERATORS = {"OR": _OR, "AND": _AND, "NOT": _NOT}


def _lex(q: str) -> list[tuple]:
    """Tokens: (kind, text, prefix).  Never fails."""
    out: list[tuple] = []
    i, n = 0, len(q)
    while i < n:
        c = q[i]
        if c.isspace():
            i += 1
        elif c == '"':
            j = q.find('"', i + 1)
            end = n if j < 0 else j
            text = q[i + 1 : end]
            i = n if j < 0 else j + 1
            prefix = False
            while i < n and q[i] == "*":
                prefix = True
                i += 1
            out.append((_TERM, text, prefix))
        elif c == "(":
            out.append((_LP, c, False))
            i += 1
        elif c == ")":
            out.append((_RP, c, False))
            i += 1
        elif c == "-" and i + 1 < n and not q[i + 1].isspace() and q[i + 1] not in ")-" and _at_word_start(q, i):
            out.append((_NEG, c, False))
            i += 1
        else:
            j, depth = i, 0
            while j < n:
                d = q[j]
                if d.isspace() or d == '"':
                    break
                if d == "(":
                    depth += 1
                elif d == ")":
                    if depth == 0:
                        break
                    depth -= 1
                j += 1
            word = q[i:j]
            i = j
            if word in _OPERATORS:
                out.append((_OPERATORS[word], word, False))
                continue
            stripped = word.rstrip("*")
            prefix = len(stripped) < len(word) and stripped != ""
            out.append((_TERM, stripped if prefix else word, prefix))
    return out


def _at_word_start(q: str, i: int) -> bool:
    return i == 0 or q[i - 1].isspace() or q[i - 1] in "(-"


def _resolve_operators(toks: list[tuple]) -> list[tuple]:
    """Drop operators that have nothing to apply to."""
    starts = {_TERM, _LP, _NEG}
    # NOT needs an operand after it; decide right to left so NOT NOT x works.
    kept: list[tuple] = []
    for tok in reversed(toks):
        if tok[0] == _NOT and not (kept and (kept[-1][0] in starts or kept[-1][0] == _NOT)):
            continue
        kept.append(tok)
    kept.reverse()
    # OR / AND need an operand on both sides.
    out: list[tuple] = []
    for k, tok in enumerate(kept):
        if tok[0] in (_OR, _AND):
            prev = out[-1][0] if out else None
            nxt = kept[k + 1][0] if k + 1 < len(kept) else None
            if prev not in (_TERM, _RP) or not (nxt in starts or nxt == _NOT):
                continue
        out.append(tok)
    return out


# ---- parser ----------------------------------------------------------------


class _Parser:
    def __init__(self, toks: list[tuple], variants: bool = False):
        self.toks = toks
        self.i = 0
        self.units = 0
        self.variants = variants

    def peek(self):
        return self.toks[self.i][0] if self.i < len(self.toks) else None

    def parse(self):
        node = self.expr(0)
        return node

    def expr(self, depth: int):
        branches = [self.conj(depth)]
        while self.peek() == _OR:
            self.i += 1
            branches.append(self.conj(depth))
        return _make(Or, branches)

    def conj(self, depth: int):
        items = []
        while True:
            kind = self.peek()
            if kind is None or kind == _OR:
                break
            if kind == _RP:
                if depth > 0:
                    break
                self.i += 1  # a ')' with no '(' is ignored
                continue
            if kind == _AND:
                self.i += 1
                continue
            items.append(self.unary(depth))
        return _make(And, items)

    def unary(self, depth: int):
        negate = False
        while self.peek() in (_NOT, _NEG):
            negate = not negate
            self.i += 1
        node = self.primary(depth)
        if node is None or not negate:
            return node
        return node.child if isinstance(node, Not) else Not(node)

    def primary(self, depth: int):
        kind = self.peek()
        if kind == _LP:
            if depth + 1 > MAX_DEPTH:
                raise QueryError(f"query nests groups more than {MAX_DEPTH} deep; simplify the parentheses")
            self.i += 1
            node = self.expr(depth + 1)
            if self.peek() == _RP:
                self.i += 1
            return node
        if kind == _TERM:
            _, text, prefix = self.toks[self.i]
            self.i += 1
            return self.term(text, prefix)
        # unreachable after _resolve_operators, kept for safety: skip the token
        self.i += 1
        return None

    def term(self, text: str, prefix: bool):
        units = query_units(text, self.variants)
        if not units:
            return None
        self.units += len(units)
        if self.units > MAX_UNITS:
            raise QueryError(f"query has more than {MAX_UNITS} words and CJK runs; shorten it")
        return Term(text, units, prefix and units[-1].kind == WORD, self.variants)


def _make(cls, items):
    """Build an And/Or, dropping empty parts, flattening, unwrapping singletons."""
    flat = []
    for it in items:
        if it is None:
            continue
        if isinstance(it, cls):
            flat.extend(it.children)
        else:
            flat.append(it)
    flat = list(dict.fromkeys(flat))  # a OR a is a, a AND a is a
    if not flat:
        return None
    if len(flat) == 1:
        return flat[0]
    return cls(tuple(flat))


def parse(query: str, *, fold_variants: bool = False) -> Node:
    """Parse ``query`` into an AST.  Raises QueryError when nothing is searchable.

    ``fold_variants``: the archive folds Han variants (its terms then do too).
    """
    if not isinstance(query, str):
        raise QueryError(f"query must be a str, not {type(query).__name__}")
    return _parse(query, bool(fold_variants))


# Every search parses its query, and agents repeat queries (paging, retries);
# the AST is immutable, so parses are kept (a QueryError is raised, not kept).
@lru_cache(maxsize=256)
def _parse(query: str, fold_variants: bool) -> Node:
    if len(query) > MAX_QUERY_CHARS:
        raise QueryError(f"query is {len(query)} characters long; the limit is {MAX_QUERY_CHARS}")
    toks = _lex(clean(query))
    n_terms = sum(1 for t in toks if t[0] == _TERM)
    if n_terms > MAX_TERMS:
        raise QueryError(f"query has {n_terms} terms; the limit is {MAX_TERMS}")
    node = _Parser(_resolve_operators(toks), fold_variants).parse()
    if node is None:
        raise QueryError(
            f"nothing to search for in {query[:80]!r}: a query needs a word, number or CJK text "
            "(punctuation, symbols and operators alone are not searchable)"
        )
    return node
