"""Which route answers a query, and why.

Every term of the parsed query (query.py) gets a route; the compilers
(compiler.py) turn it into SQL, and the plan puts the terms' SQL together
into the whole query (``fts_expression``, ``Plan.where``,
``score_expression``), reading what each term's SQL is and costs from its
typed fields.  If all terms land on one index and each is a plain MATCH
there, the query runs as one FTS5 MATCH ranked by bm25 ("fts" plan).
Otherwise it runs as one boolean expression over ``messages`` whose terms are
``id IN (MATCH ...)`` subqueries, ``instr()`` scans and Python checks
("combined" plan) — same meaning, as each term's SQL is exact on its own.

Routing table
-------------
=============================  ==============================  =====================================
term                           cjk index live                  cjk index not live
=============================  ==============================  =====================================
CJK run, 1-2 characters        cjk: ``"X"*`` / ``"XY"``        scan: ``instr()`` on every row
CJK run, >= 3 characters       cjk: phrase of bigrams          trigram (every raw spelling); scan
                                                               if trigram is not live
words only (Latin, code, ...)  cjk (unicode61 semantics        unicode61 (word semantics, bm25),
                               inside)                         plus trigram + Python check for words
                                                               glued to CJK text (修改youer服务);
                                                               scan if unicode61 is not live
CJK mixed with words           cjk: one phrase                 scan: Python check of the rows that
                                                               hold the CJK parts (found by trigram
                                                               or instr())
=============================  ==============================  =====================================

The cjk route checks in Python only terms with a one-character CJK unit after
another unit (``abc别``), or, on an index with unigrams, before one.  Without
the cjk index, words glued to CJK text are found through trigram, or, where
trigram cannot look a term up (not live, or every word under 3 characters), by
checking every non-ASCII row unicode61 did not find (slow, but exact).  Through
trigram, an occurrence in another accent or a mixed width (修改café服务 for
cafe) is not found: compiler.py's one gap.

``route=`` forces one route for every term (QueryError if that route is not
live or cannot express a term: unicode61 cannot find CJK text, trigram only
finds CJK runs of >= 3 characters; scan can express everything, slowly).

Ranking: an fts plan orders by ``bm25(index, *BM25_WEIGHTS)`` (where the
extension is loaded, by its ``cjk_rank``, which gives bm25's order: search.py);
a combined plan by bm25 of its positive terms on the best index among them (cjk, then
unicode61, then trigram), rows found only by scan or glued-word checks last.
Ties and queries without positive terms: newest first.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .compiler import (
    BM25_WEIGHTS,
    FTS_ROUTES,
    LOOKUP_HI,
    LOOKUP_LO,
    ROUTES,
    TRIGRAM_MIN,
    TRIGRAM_SPELLINGS,
    Cost,
    Fragment,
    TermSql,
    checked,
    column_filter,
    compile_term,
    table,
)
from .errors import QueryError
from .query import And, Not, Or, Term, has_positive, positive_terms, terms

MIN_ROWID, MAX_ROWID = -(2**63), 2**63 - 1  # SQLite's


@dataclass
class Plan:
    node: object
    columns: tuple
    live: frozenset
    forced: str | None
    forms: dict = field(default_factory=dict)  # Term -> TermSql
    reasons: dict = field(default_factory=dict)  # Term -> why this route
    kind: str = "combined"  # "fts" or "combined"
    fts_route: str | None = None
    match: str | None = None
    score_route: str | None = None
    score_match: str | None = None

    @property
    def ranking(self) -> tuple[str | None, str | None]:
        """(route, MATCH) of the index query that ranks the plan by relevance: the fts plan's own
        MATCH, or a combined plan's score MATCH ((None, None) when nothing scores it)."""
        return (self.fts_route, self.match) if self.kind == "fts" else (self.score_route, self.score_match)

    @property
    def routes(self) -> list[str]:
        used = {f.route for f in self.forms.values()}
        return [r for r in ROUTES if r in used]

    @property
    def label(self) -> str:
        return "+".join(self.routes)

    @property
    def functions(self) -> frozenset:
        """The Python SQL functions the plan's SQL calls (none for an fts plan)."""
        if self.kind == "fts":
            return frozenset()
        return frozenset().union(*(f.functions for f in self.forms.values()))

    def where(self, window: tuple[int, int] | None = None) -> Fragment:
        """The whole query as one boolean SQL expression over messages m (see ``predicate``).

        ``window`` (lo, hi): its index lookups read only the rowids from lo to hi, for a
        statement that reads no other messages (the default: every rowid)."""
        frag = predicate(self.node, self.forms)
        lo, hi = window or (MIN_ROWID, MAX_ROWID)
        params = tuple(lo if x is LOOKUP_LO else hi if x is LOOKUP_HI else x for x in frag.params)
        return Fragment(frag.sql, params, frag.functions, frag.lookup)

    def explain(self, rank: str = "bm25") -> dict:
        """The plan in words; ``rank`` names the FTS5 ranking function its SQL calls
        (search.rank_function: cjk_rank where the extension is loaded, else bm25)."""
        out = {
            "query": str(self.node),
            "live_indexes": sorted(self.live),
            "columns": list(self.columns),
            "forced_route": self.forced,
            "route": self.label,
            "plan": self.kind,
            "terms": [],
        }
        if self.kind == "fts":
            t = table(self.fts_route)
            out["how"] = f"one MATCH on {t}"
            out["match"] = self.match
            out["rank"] = f"{rank}({t}, {', '.join(map(str, BM25_WEIGHTS))})"
        else:
            out["how"] = "one boolean expression over messages combining the terms' own SQL"
            out["rank"] = (
                f"{rank}({table(self.score_route)}, {', '.join(map(str, BM25_WEIGHTS))}) of {self.score_match}; "
                "other rows after"
                if self.score_match
                else "newest first (no indexed positive term to score)"
            )
        if not has_positive(self.node):
            out["note"] = "no positive term: every message in scope that lacks the excluded terms"
        for t in dict.fromkeys(terms(self.node)):
            f: TermSql = self.forms[t]
            out["terms"].append({
                "term": str(t),
                "typed": t.text,
                "units": [[u.kind, u.text] for u in t.units],
                "route": f.route,
                "why": self.reasons[t],
                "how": f.how,
            })
        return out


def _auto(term: Term, live: frozenset, columns, unigrams: bool = False) -> tuple[TermSql, str]:
    tri = "trigram" in live
    if "cjk" in live:
        return compile_term("cjk", term, columns, unigrams=unigrams), "the cjk index answers every term"
    if term.words_only:
        if "unicode61" in live:
            why = "words: the unicode61 index (word semantics, bm25); " + (
                "trigram for words glued to CJK text" if tri
                else "no trigram, so glued occurrences are checked on every non-ASCII row")
            return compile_term("unicode61", term, columns, trigram=tri), why
        return compile_term("scan", term, columns, trigram=tri), "words, but no word index is live"
    if all(u.kind == "cjk" for u in term.units):
        if tri:
            form = compile_term("trigram", term, columns)
            if form is not None:
                return form, f"CJK text of >= {TRIGRAM_MIN} characters without the cjk index: trigram"
            return compile_term("scan", term, columns, trigram=tri), (
                f"CJK text with a part under {TRIGRAM_MIN} characters (or too many spellings) "
                "without the cjk index: scan")
        return compile_term("scan", term, columns), "CJK text without the cjk or trigram index: scan"
    return (compile_term("scan", term, columns, trigram=tri), "CJK mixed with words without the cjk index: scan")


_CANNOT = {
    "unicode61": "unicode61 indexes a whole CJK run as one token, so it cannot find CJK text",
    "trigram": f"trigram only expresses CJK runs of >= {TRIGRAM_MIN} characters with a part of at most "
               f"{TRIGRAM_SPELLINGS} width/voiced-mark spellings (not words: it knows neither word boundaries "
               "nor accent folding)",
}


def _forced(term: Term, route: str, live: frozenset, columns, unigrams: bool = False) -> tuple[TermSql, str]:
    form = compile_term(route, term, columns, trigram=(route == "unicode61" and "trigram" in live),
                        unigrams=unigrams)
    if form is None:
        raise QueryError(f"route {route!r} cannot express {term}: {_CANNOT[route]}")
    return form, f"route={route!r} was requested"


def check_live(live_indexes) -> frozenset:
    live = frozenset(live_indexes)
    unknown = live - set(FTS_ROUTES)
    if unknown:
        raise ValueError(f"unknown index(es) {sorted(unknown)}; live_indexes is a subset of {list(FTS_ROUTES)}")
    return live


# ---- whole queries ----------------------------------------------------------


def fts_expression(node, forms: dict, columns) -> str | None:
    """One FTS5 MATCH for the whole query, or None if FTS5 cannot say it.

    Needs every term pure (``forms[term].match``) and every negation inside an
    AND that also has a positive part (FTS5's NOT is binary).
    """

    def build(n):
        if isinstance(n, Term):
            return forms[n].match
        if isinstance(n, Not):
            return None
        if isinstance(n, Or):
            parts = [build(c) for c in n.children]
            return None if None in parts else "(" + " OR ".join(parts) + ")"
        assert isinstance(n, And)
        pos = [build(c) for c in n.children if not isinstance(c, Not)]
        neg = [build(c.child) for c in n.children if isinstance(c, Not)]
        if not pos or None in pos or None in neg:
            return None
        expr = "(" + " AND ".join(pos) + ")"
        if neg:  # one binary NOT of the OR of the exclusions: nesting stays flat
            expr = f"({expr} NOT (" + " OR ".join(neg) + "))"
        return expr

    if not all(f.pure for f in forms.values()):
        return None
    body = build(node)
    return None if body is None else f"{column_filter(columns)} : ({body})"


def _cost(node, forms: dict) -> Cost:
    return max(forms[t].cost for t in terms(node))


def predicate(node, forms: dict) -> Fragment:
    """The whole query as one boolean SQL expression over messages m.

    In an AND, the parts that only use indexes come first, as plain AND terms
    the planner can drive the scan from; the parts with per-row checks follow,
    positive before negated and cheaper before dearer (Cost), each evaluated
    only on rows everything before it let through.
    """
    if isinstance(node, Term):
        return forms[node].fragment
    if isinstance(node, Not):
        inner = predicate(node.child, forms)
        return Fragment(f"(NOT {inner.sql})", inner.params, inner.functions, inner.lookup)
    parts = [(isinstance(c, Not), _cost(c, forms), predicate(c, forms)) for c in node.children]
    uses = frozenset().union(*(p.functions for _, _, p in parts))
    if isinstance(node, Or):
        return Fragment("(" + " OR ".join(p.sql for _, _, p in parts) + ")",
                        tuple(x for _, _, p in parts for x in p.params), uses, all(p.lookup for _, _, p in parts))
    ordered = sorted(parts, key=lambda x: (x[0], x[1]))
    fast = [p for _, cost, p in ordered if cost == Cost.INDEX]
    slow = [p for _, cost, p in ordered if cost != Cost.INDEX]
    pieces = list(fast)
    if slow:
        pieces.append(checked(fast + slow[:-1], slow[-1]))
    return Fragment("(" + " AND ".join(p.sql for p in pieces) + ")", tuple(x for p in pieces for x in p.params),
                    uses, not slow)


def score_expression(node, forms: dict, route: str, columns) -> str | None:
    """MATCH for ranking a combined query: its positive terms on ``route``."""
    exprs = []
    for t in positive_terms(node):
        f = forms[t]
        if f.route == route and f.rank_match and f.rank_match not in exprs:
            exprs.append(f.rank_match)
    if not exprs:
        return None
    return f"{column_filter(columns)} : (" + " OR ".join(exprs) + ")"


def plan(node, live_indexes, *, columns, route: str | None = None, cjk_unigrams: bool = False) -> Plan:
    """Choose the route of every term of ``node`` and how to run the whole query.

    ``cjk_unigrams``: the cjk index has a unigram for every CJK character
    (schema.CJK_UNIGRAMS), so one character is the plain string ``"X"``."""
    live = check_live(live_indexes)
    columns = tuple(columns)
    if route is not None:
        if route not in ROUTES:
            raise QueryError(f"unknown route {route!r}; choose one of {', '.join(ROUTES)}")
        if route != "scan" and route not in live:
            raise QueryError(f"route {route!r} is not available: its index is not live "
                             f"(live: {', '.join(sorted(live)) or 'none'})")
    p = Plan(node, columns, live, route)
    for t in dict.fromkeys(terms(node)):
        form, why = (_forced(t, route, live, columns, cjk_unigrams) if route
                     else _auto(t, live, columns, cjk_unigrams))
        p.forms[t] = form
        p.reasons[t] = why
    used = p.routes
    if len(used) == 1 and used[0] in FTS_ROUTES:
        match = fts_expression(node, p.forms, columns)
        if match is not None:
            p.kind, p.fts_route, p.match = "fts", used[0], match
            return p
    for r in FTS_ROUTES:
        if any(p.forms[t].route == r for t in positive_terms(node)):
            sm = score_expression(node, p.forms, r, columns)
            if sm:
                p.score_route, p.score_match = r, sm
                break
    return p
