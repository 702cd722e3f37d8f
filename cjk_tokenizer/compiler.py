"""One compiler per route, from a term of the AST (query.py) to SQL.

Every compiler turns one term into a boolean SQL expression over the row
``m`` of ``messages`` (``TermSql.sql``) that means exactly what query.py says
the term means, or says it cannot (returns None).  Where an index can only
narrow the rows down (a superset), the expression adds the Python reference
check ``cjk_term_match(term, columns...)`` (evaluate.py) on those rows, so
the meaning never changes with the route.  What the fragment is, its
assembler (router.py, which puts whole queries together) reads from typed
fields, never from the SQL text: ``match`` is the term's FTS5 expression when
the MATCH alone is the meaning ("pure": only then can a whole query run as
one MATCH with bm25), ``rank_match`` the index part that can rank it,
``cost`` what evaluating it per row costs (``Cost``) and ``functions`` the
Python SQL functions it calls (search.ensure_functions registers them).

What each route can express
---------------------------
cjk        every term.  A 1-character CJK run is ``"X"*`` (the index keeps a
           unigram for every run-final character, so X* finds every X), or
           ``"X"`` on an index with a unigram for every character; longer
           runs and mixed terms are phrases of bigrams and words.  A
           1-character CJK unit after another unit (``abc别``, ``"大别 山"``)
           needs the prefix form, which also matches a 2-character run
           ending in that character: such terms are checked in Python.  So
           are, on an index with unigrams, terms that start with a
           1-character CJK unit (``用API``): that unit must end its run, and
           a unigram also stands where the run goes on (用户API).
unicode61  terms made only of words.  Each is the phrase as typed plus its
           full-width spelling (unicode61 does not fold widths).  unicode61
           sees ``修改youer服务`` as one token, so words glued to CJK text are
           looked up in the trigram index (the word as normalized and as
           typed, all ASCII or all full-width) and checked in Python; where
           trigram cannot look the term up (not live, or every word under 3
           characters) every non-ASCII row unicode61 did not find is checked
           instead.  The one gap, with the trigram lookup: an occurrence glued
           to CJK text, or mixing full-width and ASCII letters, spelled
           neither like the query nor in uniform width with accents removed
           (``修改café服务``, ``ｃafe`` for cafe): trigram folds neither.
           Checking every non-ASCII row instead would close it at the price
           of reading each such row once per word of the query.
trigram    terms made only of CJK runs of >= 3 characters: every raw spelling
           (half-width, decomposed voiced marks; Han variants on an archive
           that folds them) of the run, or of its longest
           part with few enough spellings, checked in Python unless the run
           can only be written one way.  Words are not expressible (trigram
           knows neither word boundaries nor accent folding).  Not flagged:
           a run interrupted by a variation selector (辻+U+E0101村) holds
           no trigram of the run, so it is not found here.
scan       every term, by reading rows: ``instr()`` on the text (on
           ``cjk_fold(text)`` when a character has other spellings;
           ``cjk_fold(text, 1)`` on an archive that folds Han variants) for a CJK
           run, exact (rows holding a variation selector get the folded
           check); other terms are checked in Python on the rows that
           hold their CJK units.  Slow: the route of last resort.  When the
           router uses it for CJK mixed with words (no cjk index), trigram
           narrows the rows down by the CJK units first.

Column restriction is an FTS5 column filter ``{content tool_name tool_calls} :``
on every MATCH and the same column list for ``instr``/``cjk_term_match``.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from . import spellings
from .constants import FTS_ROUTES, ROUTES
from .query import Term
from .records import read_sql
from .schema import FTS_COLUMNS, FTS_INDEXES
from .units import CJK


# bm25 column weights, in FTS column order (content, reasoning, tool_name,
# tool_calls): what was said ranks above what was thought; a hit in a tool's
# name or arguments sits between.
BM25_WEIGHTS = (10.0, 2.0, 3.0, 3.0)
assert len(BM25_WEIGHTS) == len(FTS_COLUMNS)

# Most raw spellings one trigram lookup may OR together.
TRIGRAM_SPELLINGS = 32
# trigram matches nothing under this many characters.
TRIGRAM_MIN = 3
# Most raw spellings the scan looks for before it folds a row in Python (each
# is one more instr() over the row's bytes; the fold costs far more).
SCAN_SPELLINGS = 4
# Units of one term looked up to narrow rows down (the Python check does the
# rest): a few selective ones suffice, and FTS5 limits expression depth.
MAX_LOOKUPS = 4

# The Python SQL functions compiled SQL may call (search.ensure_functions).
TERM_MATCH = "cjk_term_match"
FOLD = "cjk_fold"


class Cost(enum.IntEnum):
    """What a fragment costs per row, cheapest first (the assembler's order)."""

    INDEX = 0  # FTS5 lookups only: nothing is read or called per row
    CHECKED = 1  # index lookups narrow the rows down, a check runs on those
    SCAN = 2  # a check on every row in scope


@dataclass(frozen=True)
class Fragment:
    """A boolean SQL expression over messages m, and what evaluating it takes."""

    sql: str
    params: tuple = ()
    functions: frozenset = frozenset()  # Python SQL functions it calls
    lookup: bool = False  # only FTS5 MATCH lookups (index speed)


@dataclass(frozen=True)
class TermSql:
    route: str
    sql: str  # boolean expression over messages m
    params: tuple
    match: str | None  # FTS5 expression (no column filter) when the MATCH alone is the meaning
    rank_match: str | None  # FTS5 expression on ``route`` that can rank the term (None: scan)
    cost: Cost
    functions: frozenset  # Python SQL functions ``sql`` calls
    how: str  # for explain()

    @property
    def pure(self) -> bool:
        """The MATCH alone is the meaning: the term can join a single-MATCH plan."""
        return self.match is not None

    @property
    def fragment(self) -> Fragment:
        return Fragment(self.sql, self.params, self.functions, self.cost == Cost.INDEX)


def _term(route: str, frag: Fragment, *, match=None, rank_match=None, cost: Cost, how: str) -> TermSql:
    return TermSql(route, frag.sql, frag.params, match, rank_match, cost, frag.functions, how)


def table(route: str) -> str:
    return FTS_INDEXES[route][0]


def phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def column_filter(columns) -> str:
    return "{" + " ".join(columns) + "}"


class _Bound:
    """Stands in a lookup's parameters for an end of its rowid range (Plan.where fills it in)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


# An index lookup reads the rowids between these two: every rowid (where()'s
# default), or the stretch of messages a newest/oldest walk reads next, so that
# it does not read a frequent term's whole doclist into a list for one page.
LOOKUP_LO, LOOKUP_HI = _Bound("LOOKUP_LO"), _Bound("LOOKUP_HI")


def _in_fts(route: str, columns, expr: str) -> Fragment:
    t = table(route)
    return Fragment(f"m.id IN (SELECT rowid FROM {t} WHERE {t} MATCH ? AND rowid BETWEEN ? AND ?)",
                    (f"{column_filter(columns)} : ({expr})", LOOKUP_LO, LOOKUP_HI), lookup=True)


def _verify(term: Term, columns) -> Fragment:
    cols = ", ".join(read_sql(f"m.{c}") for c in columns)  # any stored value reaches Python: records.stored_text
    return Fragment(f"{TERM_MATCH}(?, {cols})", (term.key(),), frozenset({TERM_MATCH}))


def _stable_piece(needle: str, variants: bool) -> str:
    """The longest run of characters in ``needle`` that have one spelling only.

    Where the folded text holds ``needle``, the raw text holds this run as it
    is (each of its characters can only have come from itself), so a plain
    instr() on it can rule rows out before the folding."""
    best = cur = ""
    for ch in needle:
        cur = cur + ch if spellings.is_stable(ch, variants) else ""
        if len(cur) > len(best):
            best = cur
    return best


# Rows holding a variation selector: a CJK letter followed by one is that
# letter to every route that folds, so raw text may hide a run there (辻+VS村
# holds 辻村).  Rare in practice; such rows get the folded check.
VS_GLOB = "*[\ufe00-\ufe0f\U000e0100-\U000e01ef]*"


def _has_selector(column: str) -> str:
    """SQL true where ``column`` holds a variation selector (one parameter:
    VS_GLOB).  GLOB reads a row character by character, many times slower
    than a LIKE scan (bench/RESULTS.md, section "fallback"); instr() over the
    bytes first keeps it to the rows holding the two bytes every selector
    starts with (EF B8: U+FE00..FE3F; F3 A0: U+E0000..E0FFF)."""
    raw = f"CAST({column} AS BLOB)"
    return f"((instr({raw}, x'EFB8') > 0 OR instr({raw}, x'F3A0') > 0) AND {column} GLOB ?)"


def _holds(column: str) -> str:
    """SQL true where ``column``'s raw text holds the text parameter.  instr()
    on the bytes: on text it counts characters as it goes, which costs more
    than the search.  The same rows: a parameter's first byte starts a
    character, so a byte match starts where a character does."""
    return f"ifnull(instr(CAST({column} AS BLOB), CAST(? AS BLOB)), 0) > 0"


def _instr(needle: str, columns, variants: bool = False) -> Fragment:
    """Exact: the folded text of a searched column contains ``needle``."""
    fold = FOLD + ("(" + read_sql("{}") + (", 1)" if variants else ")"))  # as _verify passes columns
    uses = frozenset({FOLD})
    if spellings.all_stable(needle, variants):  # raw text holds it where folded text does, but for selectors
        parts = [f"({_holds(f'm.{c}')} OR "
                 f"(CASE WHEN {_has_selector(f'm.{c}')} THEN instr({fold.format(f'm.{c}')}, ?) > 0 ELSE 0 END))"
                 for c in columns]
        return Fragment("(" + " OR ".join(parts) + ")", (needle, VS_GLOB, needle) * len(columns), uses)
    # Pieces of raw text one of which a row holds wherever its folded text holds
    # ``needle`` (or it holds a selector): the longest run written one way only,
    # else every spelling of the longest run written SCAN_SPELLINGS ways or fewer.
    piece = _stable_piece(needle, variants)
    window = None if piece else spellings.best_window(needle, 1, SCAN_SPELLINGS, variants)
    pieces = [piece] if piece else window[1] if window else []
    if not pieces:
        parts = [f"instr({fold.format(f'm.{c}')}, ?) > 0" for c in columns]
        return Fragment("(" + " OR ".join(parts) + ")", (needle,) * len(columns), uses)
    # CASE keeps the order: the Python fold runs only on rows holding a piece
    # (or a variation selector).
    parts = [f"(CASE WHEN {' OR '.join([_holds(f'm.{c}')] * len(pieces))} OR {_has_selector(f'm.{c}')} "
             f"THEN instr({fold.format(f'm.{c}')}, ?) > 0 ELSE 0 END)" for c in columns]
    return Fragment("(" + " OR ".join(parts) + ")", (*pieces, VS_GLOB, needle) * len(columns), uses)


def _nonascii(columns) -> Fragment:
    # Rows of pure ASCII tokenize the same under unicode61 and cjk_unicode61.
    parts = [f"ifnull(length(CAST(m.{c} AS BLOB)) > length(m.{c}), 0)" for c in columns]
    return Fragment("(" + " OR ".join(parts) + ")")


def _longest(lookups: list[tuple[int, str]]) -> list[str]:
    """The MAX_LOOKUPS lookups of the longest units."""
    return [x for _, x in sorted(lookups, key=lambda p: -p[0])[:MAX_LOOKUPS]]


def checked(narrow: list[Fragment], check: Fragment) -> Fragment:
    """``narrow[0] AND narrow[1] AND ... AND check``, evaluated in that order,
    so the slow checks (Python functions) run only on the rows the index
    lookups let through.  A plain AND does not promise the order: SQLite may
    evaluate a cheap-looking function before an IN (subquery) beside it."""
    sql, params, uses = check.sql, check.params, set(check.functions)
    for cond in reversed(narrow):
        sql, params = f"(CASE WHEN {cond.sql} THEN {sql} ELSE 0 END)", cond.params + params
        uses |= cond.functions
    return Fragment(sql, params, frozenset(uses))


# ---- parameters --------------------------------------------------------------
# The SQL written here and in search.py holds '?' only as placeholders (values
# always travel as parameters), so a statement's text splits at them.


def _pieces(sql: str, params: tuple) -> list[str]:
    pieces = sql.split("?")
    if len(pieces) != len(params) + 1:
        raise RuntimeError(f"{len(pieces) - 1} placeholders but {len(params)} values in {sql[:200]!r}")
    return pieces


def name_params(sql: str, params: tuple, prefix: str) -> tuple[str, dict]:
    """``sql`` with ``:<prefix><i>`` for its i-th placeholder, and those names' values
    (for hosts that take named parameters only)."""
    pieces = _pieces(sql, params)
    named = {f"{prefix}{i}": v for i, v in enumerate(params)}
    return pieces[0] + "".join(f":{prefix}{i}" + piece for i, piece in enumerate(pieces[1:])), named


def sql_literal(value) -> str:
    """``value`` as an SQLite literal of the same type and value."""
    if value is None:
        return "NULL"
    if isinstance(value, (bool, int)):
        return str(int(value))
    if isinstance(value, float):
        if math.isnan(value):
            return "NULL"  # what SQLite stores for a NaN parameter
        return repr(value) if math.isfinite(value) else ("9e999" if value > 0 else "-9e999")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "X'" + bytes(value).hex() + "'"
    return "'" + str(value).replace("'", "''") + "'"


def inline_params(sql: str, params: tuple) -> str:
    """``sql`` with its parameters written in as literals: one statement to paste into the sqlite3 shell."""
    pieces = _pieces(sql, params)
    return pieces[0] + "".join(sql_literal(v) + piece for v, piece in zip(params, pieces[1:]))


def _trigram_lookup(text: str, variants: bool = False) -> str | None:
    """trigram expression finding every raw spelling of (a part of) ``text``."""
    found = spellings.best_window(text, TRIGRAM_MIN, TRIGRAM_SPELLINGS, variants)
    if found is None:
        return None
    return "(" + " OR ".join(phrase(s) for s in found[1]) + ")"


# ---- cjk -------------------------------------------------------------------


def cjk_expr(term: Term, unigrams: bool = False) -> str:
    units = term.units
    if unigrams and not term.prefix and len(units) == 1 and units[0].kind == CJK and len(units[0].text) == 1:
        return phrase(units[0].text)  # every occurrence has its unigram: one doclist
    star = term.prefix or (units[-1].kind == CJK and len(units[-1].text) == 1)
    return phrase(" ".join(u.text for u in units)) + ("*" if star else "")


def cjk_term(term: Term, columns, *, unigrams: bool = False, **_) -> TermSql:
    expr = cjk_expr(term, unigrams)
    lookup = _in_fts("cjk", columns, expr)
    units = term.units
    if any(u.kind == CJK and len(u.text) == 1 for u in units[1:]):
        why = "a one-character CJK unit after another unit"
    elif unigrams and len(units) > 1 and units[0].kind == CJK and len(units[0].text) == 1:
        # the unit must end its run, but "X" is also the unigram of every X a run goes on after
        why = "a one-character CJK unit before another unit, on an index with a unigram for every character"
    else:
        return _term("cjk", lookup, match=expr, rank_match=expr, cost=Cost.INDEX, how=expr)
    return _term("cjk", checked([lookup], _verify(term, columns)), rank_match=expr, cost=Cost.CHECKED,
                 how=f"{expr}, checked in Python ({why})")


# ---- unicode61 -------------------------------------------------------------


def _full_width(text: str) -> str:
    out = []
    for c in text:
        wide = [p for p in spellings.preimages(c) if len(p) == 1 and p != c]
        out.append(wide[0] if wide else c)
    return "".join(out)


def unicode61_expr(term: Term) -> str:
    star = "*" if term.prefix else ""
    text = " ".join(u.text for u in term.units)
    expr = phrase(text) + star
    wide = _full_width(text)
    return f"({expr} OR {phrase(wide)}{star})" if wide != text else expr


def _word_lookup(unit) -> str | None:
    """trigram lookup for a word where unicode61 does not see it (glued to CJK
    text): the word as normalized and as typed, each in ASCII and in
    full-width letters.  Uniform widths only: all 2^n mixtures would make
    long, unselective lookups.  None under TRIGRAM_MIN characters."""
    if len(unit.text) < TRIGRAM_MIN:
        return None
    forms = []
    for text in (unit.text, unit.surface.lower() or unit.text):
        for form in (text, _full_width(text)):
            if len(form) >= TRIGRAM_MIN and form not in forms:
                forms.append(form)
    return "(" + " OR ".join(phrase(s) for s in forms) + ")"


def unicode61_term(term: Term, columns, *, trigram: bool = False, **_) -> TermSql | None:
    if not term.words_only:
        return None
    expr = unicode61_expr(term)
    found = _in_fts("unicode61", columns, expr)
    # A word glued to CJK text is no word to unicode61: trigram narrows those rows
    # down where it can look a word up, else every row that may hide one is checked
    usable = _longest([(len(u.text), x) for u in term.units if (x := _word_lookup(u))]) if trigram else []
    if usable:
        narrow = _in_fts("trigram", columns, " AND ".join(usable))
        how = f"{expr}, plus trigram {' AND '.join(usable)} checked in Python for words glued to CJK text"
    else:
        why = "no trigram index" if not trigram else f"under {TRIGRAM_MIN} characters for trigram"
        narrow = None
        how = (f"{expr}, plus a Python check of every row with non-ASCII text for words glued to CJK text "
               f"({why})")
    # Rows unicode61 already found are skipped before the Python check (SQLite's
    # OR optimization may evaluate each branch on its own).
    not_found = Fragment(f"NOT {found.sql}", found.params)
    glued = checked([f for f in (narrow, not_found, _nonascii(columns)) if f], _verify(term, columns))
    either = Fragment(f"({found.sql} OR {glued.sql})", found.params + glued.params, glued.functions)
    return _term("unicode61", either, rank_match=expr, cost=Cost.CHECKED if narrow else Cost.SCAN, how=how)


# ---- trigram ---------------------------------------------------------------


def trigram_term(term: Term, columns, **_) -> TermSql | None:
    if any(u.kind != CJK for u in term.units):
        return None
    lookups = [(len(u.text), _trigram_lookup(u.text, term.variants)) for u in term.units]
    if not all(x for _, x in lookups):
        return None
    expr = " AND ".join(_longest(lookups))
    lookup = _in_fts("trigram", columns, expr)
    text = term.units[0].text
    if len(term.units) == 1 and expr == "(" + phrase(text) + ")" and spellings.all_stable(text, term.variants):
        return _term("trigram", lookup, match=expr, rank_match=expr, cost=Cost.INDEX, how=expr)
    check = _instr(text, columns, term.variants) if term.is_cjk_run else _verify(term, columns)
    return _term("trigram", checked([lookup], check), rank_match=expr, cost=Cost.CHECKED,
                 how=f"{expr}, checked on the folded text")


# ---- scan ------------------------------------------------------------------


def scan_term(term: Term, columns, *, trigram: bool = False, **_) -> TermSql:
    if term.is_cjk_run:
        return _term("scan", _instr(term.units[0].text, columns, term.variants), cost=Cost.SCAN,
                     how=f"instr() for {term.units[0].text!r} in every row")
    parts, via = [], []
    # narrow the rows down before the Python check by the CJK units, exactly (all
    # spellings by trigram, or instr on the text); not by the words, which no
    # index finds exactly where they are glued to CJK text (see unicode61_term)
    for u in sorted((u for u in term.units if u.kind == CJK), key=lambda u: -len(u.text))[:MAX_LOOKUPS]:
        lookup = _trigram_lookup(u.text, term.variants) if trigram else None
        if lookup:
            parts.append(_in_fts("trigram", columns, lookup))
            via.append(f"trigram {lookup}")
        else:
            parts.append(_instr(u.text, columns, term.variants))
            via.append(f"instr() {u.text!r}")
    # the index lookups first: they are the cheap, selective ones
    parts.sort(key=lambda part: not part.lookup)
    cost = Cost.CHECKED if parts and parts[0].lookup else Cost.SCAN
    how = "Python check of " + (f"rows with {' and '.join(via)}" if via else "every row")
    return _term("scan", checked(parts, _verify(term, columns)), cost=cost, how=how)


COMPILERS = {"cjk": cjk_term, "unicode61": unicode61_term, "trigram": trigram_term, "scan": scan_term}


def compile_term(route: str, term: Term, columns, *, trigram: bool = False, unigrams: bool = False) -> TermSql | None:
    """The term on ``route``, or None if the route cannot express it.

    ``trigram``: the trigram index may narrow rows down (unicode61's glued
    words, scan's CJK text); pass True only when it is live.  ``unigrams``:
    the cjk index has a unigram for every CJK character (schema.CJK_UNIGRAMS).
    """
    return COMPILERS[route](term, columns, trigram=trigram, unigrams=unigrams)


__all__ = [
    "BM25_WEIGHTS", "FTS_ROUTES", "ROUTES", "TRIGRAM_MIN", "TRIGRAM_SPELLINGS", "Cost", "Fragment", "TermSql",
    "checked", "column_filter", "compile_term", "inline_params", "name_params", "sql_literal", "table",
]
