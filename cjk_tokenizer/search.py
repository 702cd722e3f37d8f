"""Search an archive connection: parse, route, run, build hits.

``run_search`` is what ``Archive.search`` calls; ``explain`` is what
``Archive.explain`` calls.  Both take the set of live FTS indexes from the
caller (the archive knows which are built and current).

Sorting
-------
relevance   bm25 with column weights compiler.BM25_WEIGHTS (content 10,
            reasoning 2, tool_name 3, tool_calls 3); ties newest first.
            Where the extension is loaded the SQL calls its ``cjk_rank``
            (csrc/cjk_rank.h): bm25 divided by the sum of the query's
            phrase IDFs, so the same order, but a query of one phrase is
            not first counted over the whole index, as bm25 counts it to
            find that phrase's IDF (which then divides out).  Without the
            extension, FTS5's own bm25.
newest      message id descending, oldest: ascending.  Ids are rowids, which
            grow with every append, so this is arrival order; an fts plan
            walks the FTS index in rowid order and stops after ``limit`` hits
            instead of scoring every match (a combined plan walks messages by
            id the same way, in stretches of ids: WALK_FIRST).  An import of
            old messages after new ones gets higher ids; ``timestamp`` is not
            consulted.
(How each plan ranks: router.py.)

Bounded relevance: scoring costs in proportion to the matches, so when the
ranking MATCH has more than ``relevance_bound`` matches (within the
filters), bm25 ranks only its newest ``relevance_bound`` and every older
match follows, newest first: still reachable by paging, by sort newest /
oldest and by narrowing after/before.  ``Hits.ranked_among`` is then the
bound (None when every match was scored); ``relevance_bound=None`` scores
every match.

Paging
------
``offset`` skips that many hits (0..MAX_OFFSET) in any sort.  For newest and
oldest, a full page carries ``Hits.next_cursor`` ("newest:<id>"): passed as
``cursor=``, the next page is the hits after that message in that order, so
messages that arrive meanwhile neither shift nor repeat a page (newest:
they sort before the cursor; oldest: they come at the end).  A cursor is not
tied to its query: it only says where to continue.

Filters
-------
roles (a role or a list of roles from constants.ROLES; any other name is an
error, not an empty result), session_id, exclude_session_ids (sessions left
out; at most MAX_EXCLUDED ids), and a half-open time range
``after <= timestamp < before`` (any value timeutil.py accepts: epoch seconds,
ISO-8601 text or a datetime; no zone means UTC).  ``limit`` is 1..MAX_LIMIT.
Bad values raise QueryError, never an empty result.

Hits
----
``matched_in`` lists the searched columns (FTS order: content, reasoning,
tool_name, tool_calls) where a searched-for term matches: 'content' is what
was said, 'reasoning' what was thought.  The snippet comes from the matched
column with the most distinct searched-for terms, ties going to the earlier
column (so visible content wins), is at most ``snippet_chars`` characters,
ellipses included, and contains the match; ``highlight`` is the match's span
in it, and ``span`` the same match's ``(start, end)`` in the column's whole
text (characters).  Matches that overlap or touch are one match (测试 in
测试测试: (0, 4)); one longer than the snippet shows its start, so
``highlight`` covers the part shown and ``span`` all of it.  A query with only
exclusions shows the start of the first non-empty column.  Which part of the text it shows is the one snippet rule
(snippet.py): on a single-MATCH plan over the cjk index the C auxiliary
function ``cjk_match`` applies it when the extension provides it; everywhere
else snippet.py applies the same C code to the matches evaluate.py finds.
``route`` names the route(s) that served the query ("cjk", "unicode61+scan").
``title`` is the hit's session title (None if untitled or if the message has no
session row).  ``score`` is the relevance the hits were ranked by, higher is
better: the ranking function's value (above) negated, as FTS5 orders by it
ascending.  With ``cjk_rank`` it lies between 0 and 2.2 whatever the query
(bm25's own scale grows with the terms' rarity); either way, compare scores
within one result.  It is None when no index scored the hit: ``sort`` newest
or oldest, or a scan-only plan.

SQL functions
-------------
``run_search`` registers on the connection (APSW or stdlib sqlite3), once:
``cjk_fold(text)`` and ``cjk_fold(text, 1)`` (the C folding without / with
Han variants, for scans: without the extension SQLite has no such function)
and ``cjk_term_match(term_key, col, ...)`` (evaluate.py's check of one term,
for the rows an index can only narrow down); ``ensure_functions(conn)`` does
it for other callers.  ``cjk_search_functions()`` marks a connection that has
them.

Explained SQL
-------------
``explain(..., sql=True)`` (``Archive.explain(query, sql=True, **search
arguments)``) prepares the search as ``run_search`` would, on the archive as
it is now, and adds:

sql            the statements that find the hits, in the order they run:
               each ``{"sql", "params", "literal"}``, ``literal`` being the
               statement with its parameters written in (paste it into the
               sqlite3 shell).  Their rows, concatenated, are the hits in
               order: ``(message id, cjk_match fields or NULL, rank or NULL)``,
               and where they call cjk_match, the hit's session id, role,
               timestamp and session title after those.  Usually one
               statement; a relevance page that straddles ``rank_floor``
               takes two, and so does relevance on a combined plan with a
               score MATCH (the scored rows, then the others; the second
               does not run when the first fills the page).  Elsewhere
               the snippets, titles and the other hit fields are then read
               by id.  A walk by id (``walk``) lists its first stretch's
               statement, asking for ``offset + limit`` rows.
walk           a combined plan sorted by id: how it walks the messages in
               stretches (WALK_FIRST); the next stretches' statements differ
               from the first only in their ids and LIMIT.
walk_sql       with ``walk``: one statement over every id that finds the
               same rows (slower: it reads every message), to paste whole.
sql_functions  the Python functions those statements call (above): present
               on connections ``run_search`` has used, or after
               ``ensure_functions(conn)``; the sqlite3 shell has none of them,
               so only statements that need none run there (with ``.load``
               of the extension when they use the cjk index).
rank_floor     when relevance is bounded: the id the ranked matches are above
               (found by a query just before, relevance_scope).
"""
from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterable

from . import _native, records
from .compiler import BM25_WEIGHTS, FOLD, TERM_MATCH, inline_params, table
from .constants import ROLES, SORTS
from .errors import QueryError, TimeValueError, shown
from .evaluate import all_matches, checking, matched_terms, sql_term_match
from .query import parse
from .router import MAX_ROWID, MIN_ROWID, Plan, plan as make_plan
from .schema import DEFAULT_COLUMNS, FTS_COLUMNS, MESSAGES, SESSIONS
from .snippet import ELLIPSIS, choose, placed
from .timeutil import TimeValue, epoch_seconds, iso
from .units import clean

MAX_LIMIT = 1000
# Deepest page ``offset`` reaches; beyond it a cursor (newest/oldest) or a
# time filter goes further at index speed.
MAX_OFFSET = 100_000
MAX_ROLE_VALUES = 10_000  # values read from a roles iterable, which may repeat roles
# Most session ids one search may leave out (each is one SQL parameter).
MAX_EXCLUDED = 10_000
# relevance_bound's default: a term matching more rows is ranked among its
# newest this many matches (bench/RESULTS.md has the measurement behind it).
RELEVANCE_BOUND = 5_000
# A bounded relevance page meets its hits by a MATCH per hit (_seeks_hits)
# only from this bound on: around half of it the two shapes cost the same
# within the noise of a run, and below that the walk over the page's rowid
# range is the shorter (bench/RESULTS.md, section "page", sweeps the bound).
SEEK_MIN_BOUND = 2_000
# A combined plan sorted by id walks messages in stretches of ids, newest
# (or oldest) first: WALK_FIRST ids, then WALK_GROWTH times as many each time,
# until the page is full.  Each statement's index lookups read only the rowids
# of its stretch, so a frequent term's page reads a short stretch of its
# doclist, not all of it into a list; a rare term's walk of every message takes
# a few statements more than one would (bench/RESULTS.md, section "fallback",
# sweeps the first stretch: a longer one costs a frequent word more).
WALK_FIRST = 2_000
WALK_GROWTH = 8
SNIPPET_CHARS = 160
MIN_SNIPPET_CHARS = 20
MAX_SNIPPET_CHARS = 1_000_000  # more than a message has shows it whole; the bound keeps it a C int
AUX_FUNCTION = "cjk_match"
RANK_FUNCTION = "cjk_rank"


@dataclass
class Hit:
    message_id: int
    session_id: str
    role: str
    timestamp: float | None
    snippet: str
    matched_in: list[str] = field(default_factory=list)
    route: str = ""
    column: str | None = None  # the column the snippet comes from
    highlight: tuple[int, int] | None = None  # (start, end) of the match within snippet
    span: tuple[int, int] | None = None  # (start, end) of the same match within the column's whole text
    title: str | None = None  # the session's title
    score: float | None = None  # relevance, higher is better (None: not ranked by an index)


class Hits(list[Hit]):
    """The hits of one search (a list of :class:`Hit`), plus how to go on.

    next_cursor   for sort newest/oldest, when this page is full: pass it as
                  ``cursor=`` for the next page.  It holds the sort and the
                  last message id shown, so the next page starts right after
                  that message even if new messages arrived meanwhile.
    offset        the ``offset`` this page started at.
    ranked_among  relevance only: N when the query matched more than N rows
                  and bm25 ranked its newest N (see "Bounded relevance"),
                  else None.
    rank_floor    with ranked_among: the id the ranked matches lie above.
                  Passed back as ``rank_floor=``, a search with other
                  filters ranks the matches above the same id (so that
                  searches leaving out more and more sessions keep one order).
    """

    next_cursor: str | None = None
    offset: int = 0
    ranked_among: int | None = None
    rank_floor: int | None = None


def plan_query(query: str, live_indexes: Iterable[str], *, columns: Iterable[str], route: str | None = None,
               cjk_unigrams: bool = False, fold_variants: bool = False) -> Plan:
    """How ``query`` runs on an archive with these settings: every entry point plans here.

    ``fold_variants`` and ``cjk_unigrams`` are the archive's (schema.fold_variants,
    schema.cjk_unigrams): a plan made without them misses matches (variants) or
    is slower (unigrams) on such an archive."""
    live, columns = live_indexes, tuple(columns)
    try:
        live = frozenset(live_indexes)
        key = (query, live, columns, route, bool(cjk_unigrams), bool(fold_variants))
        hash(key)
    except TypeError:  # an argument of the wrong type: make_plan says which
        return _make_plan(query, live, columns, route, cjk_unigrams, fold_variants)
    return _kept_plan(*key)


def _make_plan(query, live_indexes, columns, route, cjk_unigrams, fold_variants) -> Plan:
    return make_plan(parse(query, fold_variants=fold_variants), live_indexes, columns=columns, route=route,
                     cjk_unigrams=cjk_unigrams)


# Agents repeat queries (paging, retries), and planning one costs more than
# reading its parse back: plans are kept as parses are (query._parse).  A Plan
# is not changed once router.plan returns it, so one may serve every search.
_kept_plan = lru_cache(maxsize=256)(_make_plan)


def searched_columns(include_reasoning: bool) -> tuple[str, ...]:
    wanted = set(DEFAULT_COLUMNS) | ({"reasoning"} if include_reasoning else set())
    return tuple(c for c in FTS_COLUMNS if c in wanted)


# ---- SQL functions ------------------------------------------------------------

# Which connections have the functions: a connection answers that itself
# through one more function of ours, ``cjk_search_functions()``, which returns
# the number of its registration.  A table of connections could not hold
# stdlib sqlite3's (they can be neither weakly referenced nor given
# attributes), and one keyed by id() would take a new connection for a closed
# one that had the same id.
_MARK = "cjk_search_functions"
_registrations = itertools.count(1)
# registration -> {"aux": cjk_match usable}; bounded: a forgotten entry only
# costs one more probe for cjk_match
_states: dict = {}
_MAX_STATES = 256
_reg_lock = threading.Lock()


def _sql_fold(text, variants=0):
    text = records.stored_text(text)  # the statements pass columns as their bytes (records.read_sql)
    return _native.fold(clean(text), bool(variants)) if isinstance(text, str) else ""


def _register(conn, number: int) -> None:
    functions = [(FOLD, 1, _sql_fold), (FOLD, 2, _sql_fold), (TERM_MATCH, -1, sql_term_match),
                 (_MARK, 0, lambda: number)]
    for name, nargs, fn in functions:
        if hasattr(conn, "create_scalar_function"):  # APSW
            conn.create_scalar_function(name, fn, nargs, deterministic=True)
        else:  # stdlib sqlite3
            conn.create_function(name, nargs, fn, deterministic=True)


def ensure_functions(conn) -> dict:
    """Register ``cjk_fold(text[, 1])`` and ``cjk_term_match(term, col...)`` on ``conn``
    once (APSW or stdlib sqlite3); returns that registration's state."""
    with _reg_lock:
        try:
            number = conn.execute(f"SELECT {_MARK}()").fetchone()[0]
        except Exception:  # "no such function": not registered on this connection yet
            number = next(_registrations)
            _register(conn, number)
        state = _states.get(number)
        if state is None:
            while len(_states) >= _MAX_STATES:
                del _states[next(iter(_states))]
            state = _states[number] = {"aux": False}
        return state


def _aux_available(conn, state) -> bool:
    # The call _aux_call writes, run on a row, so that a cjk_match that takes other
    # arguments (an older build) fails here, not in a search; on an empty table
    # nothing runs, so only a call that ran is remembered.  A failure is not
    # remembered: the extension or the cjk table may come later.
    if not state["aux"]:
        t = table("cjk")
        call, params = _aux_call(SNIPPET_CHARS)
        try:
            ran = conn.execute(f"SELECT {call} FROM {t} LIMIT 1", params).fetchall()
        except Exception:  # "no such function" (no or another extension), or no cjk table
            return False
        state["aux"] = bool(ran)
    return True


def rank_function(conn, fts_table: str, state: dict | None = None) -> str:
    """The FTS5 function relevance ranks by on ``conn``: ``cjk_rank`` where the
    extension is loaded (bm25's order without its count of a lone phrase's
    rows), else ``bm25``.  ``state`` (ensure_functions') remembers the answer
    for the connection, so a search prepares no probe again."""
    if state is not None and state.get("rank"):
        return state["rank"]
    try:
        conn.execute(f"SELECT {RANK_FUNCTION}({fts_table}) FROM {fts_table} WHERE {fts_table} MATCH 'x' LIMIT 0"
                     ).fetchall()
        name = RANK_FUNCTION
    except Exception:  # "no such function": no extension (or an older one) on this connection
        name = "bm25"
    if state is not None:
        state["rank"] = name
    return name


def _plan_rank(conn, p: Plan, state: dict | None = None) -> str:
    """rank_function for the index that ranks ``p`` (bm25 when nothing does)."""
    route = p.ranking[0]
    return rank_function(conn, table(route), state) if route else "bm25"


# ---- argument checks -----------------------------------------------------------


def _time(name: str, value):
    if value is None:
        return None
    try:
        return epoch_seconds(value, name)
    except TimeValueError as exc:
        raise QueryError(str(exc)) from None


def _session_ids(ids, name: str) -> list[str]:
    """``ids`` (one session id or a collection of them) as a sorted list without repeats."""
    if ids is None:
        return []
    if isinstance(ids, str):
        ids = [ids]
    elif isinstance(ids, (bytes, dict)) or not hasattr(ids, "__iter__"):
        raise QueryError(f"{name} must be a session id or an iterable of session ids, not {type(ids).__name__}")
    ids = list(itertools.islice(ids, MAX_EXCLUDED + 1))
    if not all(isinstance(i, str) for i in ids):
        raise QueryError(f"{name} must be a session id or an iterable of session ids")
    if len(ids) > MAX_EXCLUDED:
        raise QueryError(f"{name} holds more than {MAX_EXCLUDED:,} ids")
    for i in ids:
        _encodable(i, name)
    return sorted(set(ids))


def _encodable(value: str, name: str) -> None:
    """QueryError for a string SQLite cannot be given (a lone surrogate: no stored id holds one)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise QueryError(f"{name} holds a lone surrogate {value[exc.start]!r} at position {exc.start}, "
                         "which no stored text can hold") from None


def _filters(roles, session_id, after, before, exclude_session_ids=None) -> tuple[str, tuple]:
    sql, params = [], []
    if roles is not None:
        if isinstance(roles, (str, bytes, dict)) or not hasattr(roles, "__iter__"):
            roles = [roles]  # one role (a bad one is named below)
        # every value is read (an endless iterable up to a bound), then each role once
        roles = list(itertools.islice(roles, MAX_ROLE_VALUES + 1))
        if len(roles) > MAX_ROLE_VALUES:
            raise QueryError(f"roles must list at most {MAX_ROLE_VALUES:,} role names")
        if not roles or not all(isinstance(r, str) for r in roles):
            raise QueryError(f"roles must be a role name or a non-empty list of role names, not {shown(roles)}")
        unknown = [r for r in roles if r not in ROLES]
        if unknown:
            raise QueryError(f"unknown role {shown(unknown[0])} in roles; roles are {', '.join(ROLES)}")
        roles = list(dict.fromkeys(roles))
        sql.append(f"m.role IN ({', '.join('?' * len(roles))})")
        params.extend(roles)
    if session_id is not None:
        if not isinstance(session_id, str):
            raise QueryError(f"session_id must be a str, not {type(session_id).__name__}")
        _encodable(session_id, "session_id")
        sql.append("m.session_id = ?")
        params.append(session_id)
    excluded = _session_ids(exclude_session_ids, "exclude_session_ids")
    if excluded:
        sql.append(f"m.session_id NOT IN ({', '.join('?' * len(excluded))})")
        params.extend(excluded)
    lo, hi = _time("after", after), _time("before", before)
    if lo is not None and hi is not None and lo >= hi:
        raise QueryError(f"empty time range: after ({iso(lo)}) must be earlier than before ({iso(hi)})")
    if lo is not None:
        # a time another tool stored as text or Infinity (no time, as it reads: records.stored_time)
        # compares above every number: kept out of either bound, as NULL is
        sql.append(f"m.timestamp >= ? AND m.timestamp <= {records.MAX_STORED_TIME!r}")
        params.append(lo)
    if hi is not None:
        sql.append(f"m.timestamp < ? AND m.timestamp >= {-records.MAX_STORED_TIME!r}")
        params.append(hi)
    return "".join(f" AND {s}" for s in sql), tuple(params)


def _check(sort, limit, snippet_chars):
    if sort not in SORTS:
        raise QueryError(f"sort must be one of {', '.join(SORTS)}, not {shown(sort)}")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise QueryError(f"limit must be an integer from 1 to {MAX_LIMIT}, not {shown(limit)}")
    if (isinstance(snippet_chars, bool) or not isinstance(snippet_chars, int)
            or not MIN_SNIPPET_CHARS <= snippet_chars <= MAX_SNIPPET_CHARS):
        raise QueryError(f"snippet_chars must be an integer from {MIN_SNIPPET_CHARS} to {MAX_SNIPPET_CHARS:,}, "
                         f"not {shown(snippet_chars)}")


def paging(sort, offset, cursor) -> tuple[str, int, int | None]:
    """``(sort, offset, last id shown)`` from the paging arguments.

    A cursor carries its sort; a caller who leaves ``sort`` at its default
    (relevance) gets the cursor's, an explicit other sort is an error."""
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= MAX_OFFSET:
        raise QueryError(f"offset must be an integer from 0 to {MAX_OFFSET:,} (go further with a cursor or "
                         f"after/before), not {shown(offset)}")
    if cursor is None:
        return sort, offset, None
    kind, _, last = cursor.partition(":") if isinstance(cursor, str) else ("", "", "")
    # ASCII digits only (str.isdigit also takes other scripts' digits), within SQLite's rowids
    if (kind not in ("newest", "oldest") or not (last.isascii() and last.isdigit()) or len(last) > 19
            or int(last) > MAX_ROWID):
        raise QueryError(f"cursor must be a next_cursor from an earlier newest/oldest search, "
                         f"not {shown(cursor)}")
    if sort not in ("relevance", kind):
        raise QueryError(f"cursor {cursor!r} continues a sort={kind!r} search, not sort={sort!r}")
    return kind, offset, int(last)


def _after_cursor(sort: str, last: int | None, column: str) -> tuple[str, tuple]:
    if last is None:
        return "", ()
    return (f" AND {column} < ?" if sort == "newest" else f" AND {column} > ?"), (last,)


def _check_bound(bound):
    """The bound to use: "default" is RELEVANCE_BOUND as it is at the call."""
    if isinstance(bound, str) and bound == "default":
        return RELEVANCE_BOUND
    if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or not 1 <= bound <= MAX_ROWID):
        raise QueryError(f"relevance_bound must be an integer from 1 to 2^63-1, or None (score every match), "
                         f"not {shown(bound)}")
    return bound


# ---- running a plan -------------------------------------------------------------


def _weights() -> str:
    return ", ".join(map(str, BM25_WEIGHTS))


# What a hit shows besides its snippet, read in the statements that call
# cjk_match (their rows are the page's hits; the hit then needs nothing else)
_HIT_FIELDS = f"m.session_id, m.role, m.timestamp, (SELECT s.title FROM {SESSIONS} s WHERE s.id = m.session_id)"
# The same, the text read as its bytes (records.read_sql), for a page where another tool
# wrote text that is not UTF-8 there (APSW refuses to decode it): _rows.
_HIT_FIELDS_READ = (f"{records.read_sql('m.session_id')}, {records.read_sql('m.role')}, "
                    f"{records.read_number_sql('m.timestamp')}, "
                    f"(SELECT {records.read_sql('s.title')} FROM {SESSIONS} s WHERE s.id = m.session_id)")


def _rows(conn, st: Statement) -> list:
    """The rows of ``st``; its hit fields read as bytes when one is not UTF-8 (rare:
    reading every page so would cost every search the decoding of its fields)."""
    try:
        return conn.execute(st.sql, st.params).fetchall()
    except UnicodeDecodeError:
        if _HIT_FIELDS not in st.sql:
            raise
        return conn.execute(st.sql.replace(_HIT_FIELDS, _HIT_FIELDS_READ), st.params).fetchall()


def _aux_call(snippet_chars: int) -> tuple[str, tuple]:
    # no highlight markers (Hit.highlight says where); its size excludes the
    # two ellipses, ours includes them; a hit shows its first highlight only,
    # so no list of every match (max_matches 0); values as text fields (layout
    # 'fields'): no JSON to parse, which costs as much as the rest of a hit
    t = table("cjk")
    return f"{AUX_FUNCTION}({t}, ?, ?, '', '', ?, 0, 'fields')", (",".join(FTS_COLUMNS), snippet_chars - 2, ELLIPSIS)


@dataclass(frozen=True)
class Statement:
    """One SQL statement of a search, with its parameters, exactly as it runs."""

    sql: str
    params: tuple

    def literal(self) -> str:
        """The statement with its parameters written in as SQL literals (for the sqlite3 shell)."""
        return inline_params(self.sql, self.params)

    def as_dict(self) -> dict:
        return {"sql": self.sql, "params": list(self.params), "literal": self.literal()}


def _page(limit: int, offset: int) -> str:
    """LIMIT and OFFSET as literals, not parameters: SQLite offers a LIMIT over
    an FTS5 table to its xBestIndex, and binding a parameter the planner saw
    makes it prepare the statement again at every run."""
    return f"LIMIT {int(limit)} OFFSET {int(offset)}"


def _fts_statement(p: Plan, sort: str, bounds: tuple[str, tuple], filters: tuple[str, tuple], aux: bool,
                   snippet_chars: int, limit: int, offset: int, few: bool = False, rank: str = "bm25",
                   seek_hits: bool = False) -> Statement:
    """The plan's one MATCH within ``bounds`` (more conditions on the rowid).

    Newest/oldest: FTS5 walks its index in rowid order and stops after the
    page, so there is no sorter and ``cjk_match`` (when ``aux``) runs only
    for the rows returned.  Relevance: a ranking query scores every match by
    ``rank`` (bm25 or cjk_rank) with our weights, computing nothing else, and SQLite sorts them
    (ties newest first); ``cjk_match`` then runs on the page's rows alone,
    met again in one walk of the same MATCH over the page's range of rowids,
    or, with ``seek_hits`` (_seeks_hits), by a MATCH of its own for each.
    (FTS5's own ``rank`` order costs more: it scores in a nested statement
    and counts each phrase's rows over the whole index once more.)  When
    ``few`` (the MATCH has at most ``limit`` rows, relevance_scope), every
    match is on the page: one query scores them and builds their snippets.
    """
    t = table(p.fts_route)
    (bsql, bparams), (fsql, fparams) = bounds, filters
    call, xparams = _aux_call(snippet_chars) if aux else ("NULL", ())
    fields = f", {_HIT_FIELDS}" if aux else ""
    if sort != "relevance":
        order = f"{t}.rowid DESC" if sort == "newest" else f"{t}.rowid ASC"
        sql = (f"SELECT {t}.rowid, {call}, NULL{fields} FROM {t} JOIN {MESSAGES} m ON m.id = {t}.rowid "
               f"WHERE {t} MATCH ?{bsql}{fsql} ORDER BY {order} {_page(limit, offset)}")
        return Statement(sql, (*xparams, p.match, *bparams, *fparams))
    # messages is joined only for the filters (or the few rows of a page): a
    # seek per scored row would cost as much as the scoring
    join = f"JOIN {MESSAGES} m ON m.id = {t}.rowid " if fsql or (few and aux) else ""
    score = f"{rank}({t}, {_weights()}) AS score"
    source = f"FROM {t} {join}WHERE {t} MATCH ?{bsql}{fsql} ORDER BY score, id DESC {_page(limit, offset)}"
    rparams = (p.match, *bparams, *fparams)
    if few or not aux:
        sql = f"SELECT {t}.rowid AS id, {call}, {score}{fields} {source}"
        return Statement(sql, (*xparams, *rparams))
    ranking = f"SELECT {t}.rowid AS id, {score} {source}"
    # CROSS JOIN fixes the loop order.  MATCH outer: one walk of the page's
    # rowid range (at most the bound's matches when bounded).  top outer: a
    # MATCH per hit, which FTS5 answers by seeking each term to the rowid in
    # every segment.  The page's rows are then joined to messages (joined in
    # that walk, messages would be read for every match in the range).
    meet = (f"FROM top CROSS JOIN {t} ON {t}.rowid = top.id WHERE {t} MATCH ?" if seek_hits else
            f"FROM {t} CROSS JOIN top ON top.id = {t}.rowid WHERE {t} MATCH ? "
            f"AND {t}.rowid BETWEEN (SELECT min(id) FROM top) AND (SELECT max(id) FROM top)")
    sql = (f"WITH top(id, score) AS MATERIALIZED ({ranking}), "
           f"page(id, aux, score) AS MATERIALIZED (SELECT top.id, {call}, top.score {meet}) "
           f"SELECT page.id, page.aux, page.score{fields} FROM page JOIN {MESSAGES} m ON m.id = page.id "
           f"ORDER BY page.score, page.id DESC")
    return Statement(sql, (*rparams, *xparams, p.match))


def _walks(p: Plan, sort: str) -> bool:
    """Does ``p`` sorted by ``sort`` walk messages by id (in stretches: _walk)?"""
    return p.kind != "fts" and (sort != "relevance" or not p.score_match)


def _combined_statements(p: Plan, sort: str, after: tuple[str, tuple], filters: tuple[str, tuple],
                         floor: int | None, limit: int, offset: int, rank: str = "bm25",
                         window: tuple[int, int] | None = None) -> list[Statement]:
    """The plan's boolean expression over messages, ranked by its score MATCH (if any).

    Walked by id (_walks), the statement reads the messages with ids in ``window``
    (lo, hi) only, if given, and so do its index lookups.

    By relevance with a score MATCH the rows it scores come first, by score,
    then the other matches newest first (a score is below zero, and a row
    without one ranks as zero).  So two statements: the scored rows that
    match, which evaluates the expression on those rows only; then the
    others, whose LIMIT and OFFSET count the first statement's rows and reach
    0 when the page is full, so that the rest of the messages is not walked
    (the expression may call a Python check on every row it meets there)."""
    cond = p.where(window)
    (csql, cparams), (fsql, fparams) = after, filters
    where, wparams = f"{cond.sql}{csql}{fsql}", (*cond.params, *cparams, *fparams)
    if _walks(p, sort):
        order = "m.id ASC" if sort == "oldest" else "m.id DESC"
        span, sparams = (" AND m.id BETWEEN ? AND ?", tuple(window)) if window else ("", ())
        return [Statement(f"SELECT m.id, NULL, NULL FROM {MESSAGES} m WHERE {where}{span} ORDER BY {order} "
                          f"{_page(limit, offset)}", (*wparams, *sparams))]
    st = table(p.score_route)
    above, aparams = ("", ()) if floor is None else (" AND rowid > ?", (floor,))
    sparams = (p.score_match, *aparams)
    # on the scored rows, all above the floor, the lookups need read no rowid below it
    high = cond if floor is None else p.where((floor + 1, MAX_ROWID))
    hwhere, hparams = f"{high.sql}{csql}{fsql}", (*high.params, *cparams, *fparams)
    scored = (f"WITH sc(id, score) AS MATERIALIZED (SELECT rowid, {rank}({st}, {_weights()}) FROM {st} "
              f"WHERE {st} MATCH ?{above}) SELECT m.id, NULL, sc.score FROM sc JOIN {MESSAGES} m ON m.id = sc.id "
              f"WHERE {hwhere} ORDER BY sc.score, m.id DESC {_page(limit, offset)}")
    n = "(SELECT k FROM n)"  # how many scored rows match
    rest = (f"WITH sc(id) AS MATERIALIZED (SELECT rowid FROM {st} WHERE {st} MATCH ?{above}), "
            f"n(k) AS MATERIALIZED (SELECT count(*) FROM sc JOIN {MESSAGES} m ON m.id = sc.id WHERE {hwhere}) "
            f"SELECT m.id, NULL, NULL FROM {MESSAGES} m WHERE m.id NOT IN (SELECT id FROM sc) AND {where} "
            f"ORDER BY m.id DESC LIMIT max(0, {int(limit)} - max(0, {n} - {int(offset)})) "
            f"OFFSET max(0, {int(offset)} - {n})")
    return [Statement(scored, (*sparams, *hparams)), Statement(rest, (*sparams, *hparams, *wparams))]


def id_statements(p: Plan, *, sort: str, limit: int, filters: tuple[str, tuple], aux: bool = False,
                  snippet_chars: int = SNIPPET_CHARS, offset: int = 0, last: int | None = None,
                  floor: int | None = None, bound: int = 0, few: bool = False, rank: str = "bm25",
                  seek_hits: bool = False, window: tuple[int, int] | None = None) -> list[Statement]:
    """The statements that find the plan's hits, best first.

    Run in order, their rows concatenated are the hits as ``(message id,
    cjk_match fields or NULL, rank or NULL)``; on an fts plan ``cjk_match``
    runs (when ``aux`` is true) for the returned rows only (_fts_statement
    says how), and then the rows go on with the hit's session id, role,
    timestamp and session title.  Ties in bm25 go newest first.  ``offset`` rows are
    skipped; ``last`` (newest/oldest) is the id a cursor ends at.  With a
    ``floor`` (``relevance_scope``, which found exactly ``bound`` matches
    above it), relevance ranks the matches above it by bm25 and lists the
    others after them, newest first, so paging still reaches every match:
    on an fts plan that is two statements when a page holds some of each
    (a combined plan ranked by a score MATCH has two always:
    _combined_statements).  ``rank`` is the FTS5 ranking function
    (rank_function); ``seek_hits``: see _seeks_hits.  ``window``: the stretch of
    message ids a walk by id reads (_combined_statements).
    """
    if p.kind != "fts":
        return _combined_statements(p, sort, _after_cursor(sort, last, "m.id"), filters, floor, limit, offset,
                                     rank, window)
    t = table(p.fts_route)
    if sort == "relevance" and floor is not None:
        ranked = min(limit, bound - offset) if offset < bound else 0  # rows this page takes above the floor
        out = []
        if ranked:
            out.append(_fts_statement(p, "relevance", (f" AND {t}.rowid > ?", (floor,)), filters, aux,
                                      snippet_chars, ranked, offset, rank=rank, seek_hits=seek_hits))
        if ranked < limit:
            out.append(_fts_statement(p, "newest", (f" AND {t}.rowid <= ?", (floor,)), filters, aux,
                                      snippet_chars, limit - ranked, max(0, offset - bound)))
        return out
    return [_fts_statement(p, sort, _after_cursor(sort, last, f"{t}.rowid"), filters, aux, snippet_chars,
                           limit, offset, few, rank)]


def _ranking_rows(p: Plan, filters: tuple[str, tuple], above: int | None = None) -> tuple[str, tuple]:
    """``SELECT rowid ...`` of the plan's ranking MATCH within the filters (and above
    the rowid ``above``), with its parameters: messages is joined only for filters."""
    route, match = p.ranking
    t = table(route)
    fsql, fparams = filters
    join = f" JOIN {MESSAGES} m ON m.id = {t}.rowid" if fsql else ""
    floor, fparams = ("", fparams) if above is None else (f" AND {t}.rowid > ?", (above, *fparams))
    return f"SELECT {t}.rowid FROM {t}{join} WHERE {t} MATCH ?{floor}{fsql}", (match, *fparams)


def _count_above(conn, p: Plan, filters: tuple[str, tuple], floor: int) -> int:
    """How many matches of the ranking MATCH within the filters lie above ``floor``
    (the rows a search given ``rank_floor`` ranks)."""
    rows, params = _ranking_rows(p, filters, floor)
    return conn.execute(f"SELECT count(*) FROM ({rows})", params).fetchone()[0]


def _has_prefix(match: str) -> bool:
    """Does the FTS5 expression ``match`` hold a prefix query: a ``*`` outside
    its double-quoted strings (where the compiler doubles a quote, which
    toggles twice)?"""
    quoted = False
    for c in match:
        if c == '"':
            quoted = not quoted
        elif c == "*" and not quoted:
            return True
    return False


def _seeks_hits(conn, p: Plan, bound: int) -> bool:
    """Should a page bounded at ``bound`` meet its hits again (for cjk_match)
    by a MATCH per hit rather than by one walk of the MATCH over their rowid
    range?  The range holds about the bound's newest matches, and the walk
    tests each; a hit's own MATCH makes FTS5 seek each term to the hit's
    rowid, once in every segment of the index.  So the seeks cost less where
    the bound is large (SEEK_MIN_BOUND) and the index is one segment (as an
    import that doubles the archive, or optimize(), leaves it), and more where
    it has several (an archive that grows by appends); a prefix term would be
    merged again for every hit.  bench/RESULTS.md, section "page", measures
    both shapes."""
    from .indexing import fts_segments  # here: indexing imports APSW, which load() alone does not need

    return (bound >= SEEK_MIN_BOUND and not _has_prefix(p.match)
            and fts_segments(conn, table(p.fts_route)) == 1)


def relevance_scope(conn, p: Plan, filters: tuple[str, tuple], bound: int | None,
                    few_limit: int = 0) -> tuple[int | None, bool]:
    """``(floor, few)`` for a relevance search: the id above which it scores
    (None: every match), and whether the ranking MATCH has at most
    ``few_limit`` matches (within the filters; asked only when ``few_limit``).

    When the MATCH has more than ``bound`` matches, the floor is the id of
    the next one after its newest ``bound``: bm25 then ranks those newest
    ``bound`` only, walking the index by rowid to find them instead of
    scoring every match.  Few matches need no floor.
    """
    route, match = p.ranking
    if match is None:
        return None, False
    rows, params = _ranking_rows(p, filters)
    if few_limit:
        n = conn.execute(f"SELECT count(*) FROM ({rows} {_page(few_limit + 1, 0)})", params).fetchone()[0]
        if n <= few_limit and (not bound or n <= bound):
            return None, True
    if not bound:
        return None, False
    row = conn.execute(f"{rows} ORDER BY {table(route)}.rowid DESC {_page(1, bound)}", params).fetchone()
    return (None if row is None else row[0]), False


_SEP = "\x1f"  # between the fields of cjk_match's layout 'fields'
_NE = len(ELLIPSIS)


def _from_aux(text, columns: tuple):
    """(matched_in, column, snippet, highlight, span) from cjk_match's ``text`` (layout
    'fields') alone, or None if it is not what the contract in csrc/cjk_aux.h promises
    (the hit's snippet is then built here).  The snippet is the function's (empty
    markers, ellipses as snippet.render writes them), so text and numbers come from
    one read of the row and the message's text need not be fetched again; the
    highlight's place in it is snippet.placed's, from the window, the cut sides and
    the first highlight's start/end."""
    if type(text) is not str:
        return None
    fields = text.split(_SEP, 9)
    if len(fields) != 10:
        return None
    reported, column, start, stop, w0, w1, before, after, _, shown = fields
    try:
        w0, w1 = int(w0), int(w1)
        first = (int(start), int(stop)) if start else None
    except ValueError:
        return None
    reported = reported.split(",") if reported else []
    cut = (before == "1", after == "1")
    if (not 0 <= w0 <= w1 or column not in reported or column not in columns
            or before not in ("0", "1") or after not in ("0", "1")):
        return None
    # the shown text is the window with an ellipsis on each cut side
    if len(shown) != w1 - w0 + _NE * (cut[0] + cut[1]) or (
            cut[0] and not shown.startswith(ELLIPSIS)) or (cut[1] and not shown.endswith(ELLIPSIS)):
        return None
    # most hits match in one column: the one shown, which is in ``columns``
    where = reported if len(reported) == 1 else [c for c in columns if c in reported]
    if first is not None and not 0 <= first[0] < first[1]:
        first = None
    highlight, span = placed((w0, w1), cut, first)
    return where, column, shown, highlight, span


def _from_python(p: Plan, cols: dict, snippet_chars: int):
    found = matched_terms(p.node, cols)
    where = [c for c in p.columns if found[c]]
    if where:  # most distinct terms; ties to the earlier column
        column = max(where, key=lambda c: (len(found[c]), -p.columns.index(c)))
        matches = all_matches(p.node, cols[column], {t for c in where for t in found[c]})
    else:  # nothing searched for (only exclusions): the message's start
        column = next((c for c in p.columns if cols[c] and cols[c].strip()), None)
        matches = []
    out = choose(cols[column] if column else "", matches, snippet_chars)
    return where, column, out.text, out.highlight, out.span


def _hit(row, p: Plan, label: str, snippet_chars: int, parts, score) -> Hit:
    """A Hit from its message row (id, session, role, time, title, then the text columns
    unless ``parts`` came from cjk_match) and its snippet ``parts`` (else built here)."""
    if parts is None:
        texts = dict(zip(FTS_COLUMNS, map(records.stored_text, row[5:])))
        parts = _from_python(p, {c: texts[c] for c in p.columns}, snippet_chars)
    return _new_hit(*row[:5], label, parts, score)


def _new_hit(mid, session_id, role, ts, title, label: str, parts, score) -> Hit:
    """A Hit from its message's fields, its snippet ``parts`` and its rank (lower is better)."""
    where, column, snippet, highlight, span = parts
    # records.stored_text/stored_time, inline: this runs for every hit of every page
    if session_id.__class__ is bytes:
        session_id = session_id.decode("utf-8", "replace")
    if role.__class__ is bytes:
        role = role.decode("utf-8", "replace")
    if title.__class__ is bytes:
        title = title.decode("utf-8", "replace")
    if ts.__class__ is not int and (ts.__class__ is not float or ts - ts != 0):  # inf - inf is nan
        ts = records.stored_time(ts)
    return Hit(mid, session_id, role, ts, snippet, where, label, column, highlight, span, title,
               None if score is None else -float(score))


@dataclass
class _Prepared:
    """A search made ready to run: its plan and the statements that find its hits."""

    plan: Plan
    sort: str
    offset: int
    bound: int | None  # relevance_bound, checked
    floor: int | None  # relevance_scope's floor
    aux: bool  # the statements call cjk_match (the hits' snippets come with them)
    rank: str  # the FTS5 ranking function (rank_function)
    statements: list  # a walk's: those of its first stretch
    walk: "_Walk | None" = None


@dataclass
class _Walk:
    """A walk of the messages by id, in stretches (WALK_FIRST): the ids from ``lo`` to
    ``hi`` it may read, its direction, and the statement of one stretch (``window``,
    the rows still wanted)."""

    lo: int
    hi: int
    descending: bool
    statement: Any  # (window, limit) -> Statement

    def windows(self) -> Iterable[tuple[int, int]]:
        size, lo, hi = WALK_FIRST, self.lo, self.hi
        while lo <= hi:
            if self.descending:
                window = (max(lo, hi - size + 1), hi)
                hi = window[0] - 1
            else:
                window = (lo, min(hi, lo + size - 1))
                lo = window[1] + 1
            yield window
            size *= WALK_GROWTH

    def describe(self, offset: int = 0) -> str:
        first = next(iter(self.windows()), None)
        where = f"ids {first[0]:,} to {first[1]:,} first" if first else "no message to read"
        # each stretch's LIMIT counts the rows still wanted, the offset's included
        skip = f" (the first {offset:,} rows found are the offset, left out of it)" if offset else ""
        return (f"{'newest' if self.descending else 'oldest'} first, messages by id in stretches ({where}; "
                f"each next one {WALK_GROWTH}x as long) until the page is full{skip}; each stretch's index "
                "lookups read only its rowids")


def _walk(conn, p: Plan, sort: str, last: int | None, statement) -> _Walk:
    """The walk by id of ``p`` (_walks), from the newest (oldest) message, or right after
    the cursor's ``last``."""
    # two subqueries: SQLite reads one end of the rowid b-tree for a lone min() or max()
    lo, hi = conn.execute(f"SELECT (SELECT min(id) FROM {MESSAGES}), (SELECT max(id) FROM {MESSAGES})").fetchone()
    if lo is None:
        lo, hi = 1, 0
    descending = sort != "oldest"
    if last is not None:
        hi, lo = (min(hi, last - 1), lo) if descending else (hi, max(lo, last + 1))
    return _Walk(lo, hi, descending, statement)


def _prepare(conn, query: str, live_indexes, *, include_reasoning=False, roles=None, session_id=None, after=None,
             before=None, sort="relevance", limit=20, route=None, snippet_chars=SNIPPET_CHARS, offset=0,
             cursor=None, relevance_bound="default", cjk_unigrams=False, fold_variants=False,
             exclude_session_ids=None, rank_floor=None) -> _Prepared:
    """Check the arguments, plan, and write the statements (run_search's arguments)."""
    _check(sort, limit, snippet_chars)
    sort, offset, last = paging(sort, offset, cursor)
    bound = _check_bound(relevance_bound)
    filters = _filters(roles, session_id, after, before, exclude_session_ids)
    p = plan_query(query, live_indexes, columns=searched_columns(include_reasoning), route=route,
                   cjk_unigrams=cjk_unigrams, fold_variants=fold_variants)
    state = ensure_functions(conn)
    # On a single MATCH over the cjk index the C function cjk_match builds the
    # snippets inside the ranking query; everywhere else snippet.py does.
    aux = p.kind == "fts" and p.fts_route == "cjk" and _aux_available(conn, state)
    floor, few, above = None, False, bound
    if sort == "relevance" and rank_floor is not None and p.ranking[1] is not None:
        if isinstance(rank_floor, bool) or not isinstance(rank_floor, int) or not MIN_ROWID <= rank_floor <= MAX_ROWID:
            raise QueryError(f"rank_floor must be the rank_floor of an earlier search, not {shown(rank_floor)}")
        floor, above = rank_floor, _count_above(conn, p, filters, rank_floor)
    elif sort == "relevance":  # few matches matter only where snippets come from cjk_match
        floor, few = relevance_scope(conn, p, filters, bound, limit if aux else 0)
    rank = _plan_rank(conn, p, state)  # explain names it whatever the sort
    seek_hits = aux and floor is not None and _seeks_hits(conn, p, bound)
    if _walks(p, sort):
        # each stretch asks for the rows still wanted, the offset included (run_search skips it)
        walk = _walk(conn, p, sort, last, lambda window, n: id_statements(
            p, sort=sort, limit=n, filters=filters, offset=0, last=last, rank=rank, window=window)[0])
        first = next(iter(walk.windows()), None)
        statements = [] if first is None else [walk.statement(first, offset + limit)]
        return _Prepared(p, sort, offset, bound, floor, aux, rank, statements, walk)
    statements = id_statements(p, sort=sort, limit=limit, filters=filters, aux=aux, snippet_chars=snippet_chars,
                               offset=offset, last=last, floor=floor, bound=above or 0, few=few, rank=rank,
                               seek_hits=seek_hits)
    return _Prepared(p, sort, offset, bound, floor, aux, rank, statements)


def run_search(conn: Any, query: str, *, live_indexes: Iterable[str], include_reasoning: bool = False,
               roles: Iterable[str] | None = None, session_id: str | None = None, after: TimeValue | None = None,
               before: TimeValue | None = None, sort: str = "relevance", limit: int = 20, route: str | None = None,
               snippet_chars: int = SNIPPET_CHARS, offset: int = 0, cursor: str | None = None,
               relevance_bound: Any = "default", cjk_unigrams: bool = False, fold_variants: bool = False,
               exclude_session_ids: Iterable[str] | None = None, rank_floor: int | None = None) -> Hits:
    """Search ``conn`` (an archive connection) for ``query``.  See the module docstring.

    ``fold_variants``: the archive folds Han variants (``Archive(fold_variants=True)``);
    ``cjk_unigrams``: its cjk table has the tokenizer option ``unigrams 1``.
    """
    prep = _prepare(conn, query, live_indexes, include_reasoning=include_reasoning, roles=roles,
                    session_id=session_id, after=after, before=before, sort=sort, limit=limit, route=route,
                    snippet_chars=snippet_chars, offset=offset, cursor=cursor, relevance_bound=relevance_bound,
                    cjk_unigrams=cjk_unigrams, fold_variants=fold_variants, exclude_session_ids=exclude_session_ids,
                    rank_floor=rank_floor)
    p = prep.plan
    out = Hits()
    out.offset = prep.offset
    out.ranked_among = None if prep.floor is None else prep.bound
    out.rank_floor = prep.floor
    with checking(p.node):  # a big row is read once for all the query's terms
        found = []
        if prep.walk is not None:
            wanted = prep.offset + limit
            for i, window in enumerate(prep.walk.windows()):
                # the first stretch's statement is the one _prepare wrote (nothing found yet)
                st = prep.statements[0] if i == 0 else prep.walk.statement(window, wanted - len(found))
                found += _rows(conn, st)
                if len(found) >= wanted:
                    break
            found = found[prep.offset:]
        else:
            for st in prep.statements:
                if len(found) >= limit:  # the page is full: the statements' LIMITs add up to at most ``limit``
                    break
                found += _rows(conn, st)
        ids = [row[0] for row in found]
        if prep.sort != "relevance" and len(ids) == limit:
            out.next_cursor = f"{prep.sort}:{ids[-1]}"
        if not ids:
            return out
        label = p.label
        columns = p.columns
        parts = [_from_aux(row[1], columns) for row in found] if prep.aux else []
        if prep.aux and None not in parts:  # the statements read the rest: each row is its hit
            out.extend([_new_hit(mid, session_id, role, ts, title, label, part, score)
                        for (mid, _, score, session_id, role, ts, title), part in zip(found, parts)])
            return out
        parts = dict(zip(ids, parts))
        # some snippet is built here: the texts are read again
        scores = {row[0]: row[2] for row in found if row[2] is not None}
        texts = "".join(f", {records.read_sql(f'm.{c}')}" for c in FTS_COLUMNS)
        marks = ", ".join("?" * len(ids))
        rows = {row[0]: row for row in conn.execute(
            f"SELECT m.id, {records.read_sql('m.session_id')}, {records.read_sql('m.role')}, "
            f"{records.read_number_sql('m.timestamp')}, "
            f"{records.read_sql('s.title')}{texts} FROM {MESSAGES} m "
            f"LEFT JOIN {SESSIONS} s ON s.id = m.session_id WHERE m.id IN ({marks})", ids)}
        out.extend(_hit(rows[i], p, label, snippet_chars, parts.get(i), scores.get(i)) for i in ids if i in rows)
        return out


def count_by_session(conn: Any, query: str, session_ids: Iterable[str], *, live_indexes: Iterable[str],
                     include_reasoning: bool = False, roles: Iterable[str] | None = None,
                     after: TimeValue | None = None, before: TimeValue | None = None,
                     cjk_unigrams: bool = False, fold_variants: bool = False) -> dict[str, int]:
    """How many messages of each of ``session_ids`` match ``query`` within the
    filters (run_search's): ``{session id: count}``, sessions without a match
    left out.  One statement over those sessions' messages, which meets the
    query's index lookups once (SQLite builds each IN list once)."""
    ids = _session_ids(session_ids, "session_ids")
    if not ids:
        return {}
    fsql, fparams = _filters(roles, None, after, before)
    p = plan_query(query, live_indexes, columns=searched_columns(include_reasoning), cjk_unigrams=cjk_unigrams,
                   fold_variants=fold_variants)
    ensure_functions(conn)
    cond = p.where()
    sql = (f"SELECT m.session_id, count(*) FROM {MESSAGES} m WHERE m.session_id IN ({', '.join('?' * len(ids))}) "
           f"AND {cond.sql}{fsql} GROUP BY m.session_id")
    with checking(p.node):
        return dict(conn.execute(sql, (*ids, *cond.params, *fparams)).fetchall())


def explain(query: str, live_indexes: Iterable[str], *, include_reasoning: bool = False,
            route: str | None = None, relevance_bound: Any = "default", cjk_unigrams: bool = False,
            fold_variants: bool = False, sql: bool = False, conn: Any = None, **search: Any) -> dict:
    """Which route(s) would serve ``query`` and why (no database needed).

    ``sql=True`` adds the statements ``run_search`` would run on ``conn`` (the
    archive's connection; ``Archive.explain`` passes it) with the same
    arguments: ``search`` takes the rest of run_search's (roles, session_id,
    after, before, sort, limit, offset, cursor, snippet_chars).  See "Explained
    SQL" in the module docstring for what comes back.
    """
    if sql:
        if conn is None:
            raise ValueError("explain(sql=True) needs the archive's connection: conn=... (Archive.explain passes it)")
        prep = _prepare(conn, query, live_indexes, include_reasoning=include_reasoning, route=route,
                        relevance_bound=relevance_bound, cjk_unigrams=cjk_unigrams, fold_variants=fold_variants,
                        **search)
        p, relevance_bound, rank = prep.plan, prep.bound, prep.rank
    else:
        if search:
            raise TypeError(f"explain() takes {', '.join(sorted(search))} only with sql=True")
        relevance_bound = _check_bound(relevance_bound)
        p = plan_query(query, live_indexes, columns=searched_columns(include_reasoning), route=route,
                       cjk_unigrams=cjk_unigrams, fold_variants=fold_variants)
        rank = _plan_rank(conn, p) if conn is not None else "bm25"
    out = p.explain(rank)
    if "cjk" in p.live:
        out["cjk_unigrams"] = bool(cjk_unigrams)  # one character: "X" (a unigram each) or "X"* (prefix)
    if relevance_bound and (p.kind == "fts" or p.score_match):
        out["rank_bound"] = (f"sort=relevance: if more than {relevance_bound:,} rows match, bm25 ranks the newest "
                             f"{relevance_bound:,} (results say ranked_among) and the older ones follow newest "
                             "first; relevance_bound=None scores every match")
    if sql:
        out["sql"] = [st.as_dict() for st in prep.statements]
        if prep.walk is not None:
            out["walk"] = prep.walk.describe(prep.offset)
            w = prep.walk
            # the same rows in one statement over every id, for a reader who cannot walk (the sqlite3 shell)
            out["walk_sql"] = [] if w.lo > w.hi else [
                w.statement((w.lo, w.hi), prep.offset + search.get("limit", 20)).as_dict()]
        out["sql_functions"] = sorted(p.functions)
        if prep.floor is not None:
            out["rank_floor"] = prep.floor
    out["input"] = query
    return out
