"""Datasette plugin: cjk_unicode61 in every connection, archive search, highlighted snippets.

Registered through the ``datasette`` entry point; installing the package into
Datasette's environment is the whole set-up.  Hooks (all documented Datasette
plugin hooks):

startup              on a Python whose sqlite3 cannot load extensions, one
                     line on stderr saying so (see plugins/__init__.py).
prepare_connection   loads the extension into every connection and registers
                     ``escape_fts`` (below), ``cjk_fts_query(q, reasoning)``
                     and the functions the query routes use (search.py).
filters_from_request on a cjk_tokenizer archive's ``messages`` table, runs
                     ``_search`` through the project's query language and
                     router (search.py's rules: phrases, ``prefix*``, OR, NOT;
                     one CJK character finds every occurrence) over content,
                     tool_name and tool_calls; reasoning only with
                     ``_reasoning=1`` added.  ``_search_<column>=q``
                     searches that one FTS column (``_search_reasoning=q``);
                     given together, a row must match them all.
                     Datasette itself cannot see
                     the archive's FTS tables (their ``content='messages'`` is
                     single-quoted), so this hook is the only search on that
                     table; it runs last (trylast) so its ``supports_search``
                     wins over Datasette's own "no FTS table" answer.
render_cell          shows, in the ``content`` cell of a searched archive
                     table, the ``cjk_match`` snippet with the match in
                     <mark>; and any query column named ``cjk_snippet``
                     (the canned query's) with its match marked.  render_cell
                     receives no request in Datasette 0.65, so the filters hook
                     hands the search to it through a context variable that
                     ``asgi_wrapper`` scopes to one request.  A snippet in the
                     cell keeps the table view whole (facets, sorting, filters,
                     row links); extra columns cannot be added to that view.
canned_queries       ``cjk_search`` on each archive: session_search-style
                     discovery (hits grouped by session, best session first).

Plain FTS5 tables (Datasette finds them itself) search through Datasette's own
code.  Its default mode quotes each term (``escape_fts``); on a database that
holds a cjk_unicode61 table this plugin's ``escape_fts`` quotes the same way
but writes a lone CJK character as the prefix form ``"X"*``, the form under
which the tokenizer finds every occurrence of X (quoted alone, ``"X"``, it
finds only occurrences that end a CJK run).
"""
from __future__ import annotations

import contextvars
import functools
import json
from dataclasses import dataclass

import markupsafe
from datasette import hookimpl
from datasette.filters import FilterArguments
from datasette.utils import escape_fts as datasette_escape_fts

from cjk_tokenizer.compiler import BM25_WEIGHTS, name_params
from cjk_tokenizer.errors import QueryError
from cjk_tokenizer.evaluate import evaluate
from cjk_tokenizer.plugins import host_problem, load_or_say, prefix_one_cjk_chars, say_once, uses_cjk_tokenizer
from cjk_tokenizer.schema import FTS_COLUMNS, MESSAGES, cjk_unigrams, fold_variants, fts_table
from cjk_tokenizer.search import ensure_functions, plan_query, searched_columns

TOOL = "Datasette"
SNIPPET_CHARS = 200
# Highlight markers inside cjk_match's output: control characters never shown
# as text, so escaping the snippet and then marking it cannot be confused by
# what the messages contain.
_OPEN, _CLOSE = "\x02", "\x03"
_LABELS = ",".join(FTS_COLUMNS)
CANNED = "cjk_search"

# {(database, table): _PageSnippets} of the search being rendered in this
# request; see render_cell.
_SEARCH: contextvars.ContextVar = contextvars.ContextVar("cjk_tokenizer_search", default=None)


# ---- connections ----------------------------------------------------------------


def _is_truthy(value) -> bool:
    return str(value or "").strip().lower() in ("1", "true", "yes", "on")


def _settings(conn) -> tuple[bool, bool]:
    """An archive's (fold_variants, cjk_unigrams): what its searches are planned with (search.plan_query)."""
    return fold_variants(conn), cjk_unigrams(conn)


@functools.lru_cache(maxsize=64)
def _cjk_plan(q: str, reasoning: bool, settings: tuple[bool, bool]):
    folds, unigrams = settings
    return plan_query(q, {"cjk"}, columns=searched_columns(reasoning), route="cjk", fold_variants=folds,
                      cjk_unigrams=unigrams)


def _fts_query(q, reasoning=None, *, settings=(False, False)):
    """SQL ``cjk_fts_query(q, reasoning)``: the query language as one MATCH on the cjk index.

    The MATCH alone is the query's meaning unless a term needs a check of the
    rows (a one-character CJK unit after another unit, compiler.py); then it
    is a superset and ``cjk_fts_check`` completes it.  An empty query (the
    canned query's empty form) is ``""``, which matches nothing.  A function
    cannot give SQLite an error message from Python, so a query that cannot
    run becomes a column filter naming the reason, which FTS5 rejects with
    that text ("no such column: cjk_search: nothing to search for in ...").
    """
    if q is None or not str(q).strip():
        return '""'
    try:
        p = _cjk_plan(str(q), _is_truthy(reasoning), settings)
        match = p.match or p.score_match
        if match is None:
            raise QueryError(f"{q!r} excludes terms only; search them in the messages table (?_search=...)")
    except QueryError as exc:
        reason = f"{CANNED}: {exc}".replace('"', '""')
        return f'{{"{reason}"}} : x'
    return match


def _fts_exact(q, reasoning, *, settings=(False, False)):
    """SQL ``cjk_fts_exact(q, reasoning)``: 1 when ``cjk_fts_query`` alone is the meaning."""
    if q is None or not str(q).strip():
        return 1
    try:
        return int(_cjk_plan(str(q), _is_truthy(reasoning), settings).match is not None)
    except QueryError:
        return 1  # cjk_fts_query has made the MATCH fail with the reason


def _fts_check(q, reasoning, *texts, settings=(False, False)):
    """SQL ``cjk_fts_check(q, reasoning, content, reasoning, tool_name, tool_calls)``: does the row match?

    Called only where ``cjk_fts_exact`` is 0 (SQLite evaluates the OR's left
    side, a constant, first), so pure queries never read the rows' text.
    """
    p = _cjk_plan(str(q), _is_truthy(reasoning), settings)
    cols = dict(zip(FTS_COLUMNS, texts))
    return int(evaluate(p.node, [cols.get(c) for c in p.columns]))


def escape_fts(query):
    """Datasette's default-mode quoting, then each phrase that is one CJK character as ``"X"*``.

    The rewrite reads Datasette's output as FTS5 does (prefix_one_cjk_chars), so a
    quoted phrase that spans a line break, which Datasette's pattern leaves in
    pieces, keeps its meaning.
    """
    if query is None:
        return None
    return prefix_one_cjk_chars(datasette_escape_fts(str(query)))


@hookimpl
def startup(datasette):
    problem = host_problem()
    if problem:
        say_once(TOOL, problem)


@hookimpl
def prepare_connection(conn, database, datasette):
    if not load_or_say(conn, TOOL):
        return
    ensure_functions(conn)  # the functions the routes' SQL calls where an index only narrows rows down
    try:
        rows = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND sql LIKE '%fts5%'").fetchall()
        settings = _settings(conn)  # an archive's terms fold as its index does
    except Exception:  # not a database we can read; Datasette reports that itself
        rows, settings = [], (False, False)
    conn.create_function("cjk_fts_query", 2, functools.partial(_fts_query, settings=settings), deterministic=True)
    conn.create_function("cjk_fts_exact", 2, functools.partial(_fts_exact, settings=settings), deterministic=True)
    conn.create_function("cjk_fts_check", 2 + len(FTS_COLUMNS), functools.partial(_fts_check, settings=settings),
                         deterministic=True)
    if any(uses_cjk_tokenizer(r[0]) for r in rows):
        conn.create_function("escape_fts", 1, escape_fts, deterministic=True)


# ---- archives -------------------------------------------------------------------


@dataclass(frozen=True)
class _Archive:
    """What planning a search on an archive needs from it (search.plan_query)."""

    live: frozenset  # its live FTS routes this host can use
    fold_variants: bool
    cjk_unigrams: bool


async def _archive(datasette, database) -> _Archive | None:
    """The archive's settings and live FTS routes, or None when ``database`` is not an archive."""
    db = datasette.get_database(database)
    try:
        names = set(await db.table_names())
        if not {MESSAGES, "index_state", "sessions"} <= names:
            return None
        rows = (await db.execute("SELECT route, status FROM index_state")).rows
    except Exception:
        return None
    live = {r[0] for r in rows if r[1] == "live" and fts_table(r[0]) in names}
    if "cjk" in live:
        try:  # live in the file, but is the tokenizer registered on this host?
            await db.execute(f"SELECT rowid FROM {fts_table('cjk')} WHERE {fts_table('cjk')} MATCH 'x' LIMIT 0")
        except Exception:
            live.discard("cjk")
    folds, unigrams = await db.execute_fn(_settings)
    return _Archive(frozenset(live), folds, unigrams)


def _where_from_plan(p, prefix: str = "cjk_") -> tuple[str, dict]:
    """One WHERE clause on ``messages`` for a routed query, with named parameters
    (their names start with ``prefix``: one per search of a request)."""
    if p.kind == "fts":
        t = fts_table(p.fts_route)
        return f"id IN (SELECT rowid FROM {t} WHERE {t} MATCH :{prefix}match)", {f"{prefix}match": p.match}
    cond = p.where()
    sql, named = name_params(cond.sql, cond.params, f"{prefix}p")
    return f"id IN (SELECT m.id FROM {MESSAGES} AS m WHERE {sql})", named


def _search_request(request) -> list:
    """The searches ``request`` asks for, each (query, columns, description); a row
    must match them all, as in Datasette's own search.

    ``_search=q`` searches what was said and done; ``&_reasoning=1`` adds
    reasoning; ``_search_<column>=q`` searches that one FTS column.
    """
    args, asked = request.args, []
    if args.get("_search", "").strip():
        reasoning = _is_truthy(args.get("_reasoning"))
        where = "content, tool names and tool calls" + (" and reasoning" if reasoning else "")
        asked.append((args["_search"], searched_columns(reasoning), where))
    for col in FTS_COLUMNS:
        q = args.get(f"_search_{col}", "")
        if q.strip():
            asked.append((q, (col,), col))
    unknown = sorted(k for k in args if k.startswith("_search_") and k[len("_search_"):] not in FTS_COLUMNS)
    if unknown:  # a misspelt column would otherwise search nothing, and show every row
        raise QueryError(f"cannot search by {unknown[0]!r}: the searchable columns are "
                         f"{', '.join('_search_' + c for c in FTS_COLUMNS)}")
    return asked


def _page_size(request, datasette) -> int:
    size = request.args.get("_size", "")
    limit = datasette.setting("max_returned_rows")
    return min(int(size), limit) + 1 if size.isdigit() else datasette.setting("default_page_size") + 1


@hookimpl(trylast=True)
def filters_from_request(request, database, table, datasette):
    if table != MESSAGES:
        return None

    async def inner():
        archive = await _archive(datasette, database)
        if archive is None:
            return None
        context = {"supports_search": True}
        try:
            asked = _search_request(request)
        except QueryError as exc:  # shown to the user; the search matches nothing
            return FilterArguments(["0"], human_descriptions=[str(exc)], extra_context=context)
        if not asked:
            return FilterArguments([], extra_context=context)
        context["search"] = asked[0][0]
        clauses, params, said = [], {}, []
        for i, (q, cols, where) in enumerate(asked):
            try:
                p = plan_query(q, archive.live, columns=cols, cjk_unigrams=archive.cjk_unigrams,
                               fold_variants=archive.fold_variants)
            except QueryError as exc:  # shown to the user; the query matches nothing
                return FilterArguments(["0"], human_descriptions=[f'search "{q}": {exc}'], extra_context=context)
            clause, named = _where_from_plan(p, f"cjk{i}_")
            clauses.append(clause)
            params.update(named)
            said.append(f'search in {where} matches "{q}" (route {p.label})')
            if i == 0 and "cjk" in archive.live:  # the snippets show the first search's match
                match = p.match if p.fts_route == "cjk" else p.score_match if p.score_route == "cjk" else None
                if match:
                    _SEARCH.set({(database, table): _PageSnippets(match, _page_size(request, datasette))})
        return FilterArguments(clauses, params, said, context)

    return inner


# ---- snippets ---------------------------------------------------------------------


def _marked(snippet: str) -> markupsafe.Markup:
    html = str(markupsafe.escape(snippet))
    return markupsafe.Markup(html.replace(_OPEN, "<mark>").replace(_CLOSE, "</mark>"))


class _PageSnippets:
    """cjk_match results of one searched page, fetched in as few queries as the order allows.

    A MATCH restricted to one rowid still evaluates the whole expression (for
    ``"X"*``, every bigram starting with X), so asking row by row costs that
    once per row.  At the first row the matches around it, ``page`` rows each
    way in rowid order, come in two queries: the whole page when it is sorted
    by id (Datasette's default), either way.  Rows not found there (other
    sort orders) are asked for one by one.
    """

    def __init__(self, match: str, page: int):
        self.match, self.page = match, page
        self.found: dict = {}
        self.windowed = False

    async def get(self, db, rowid):
        t = fts_table("cjk")
        head = f"SELECT rowid, cjk_match({t}, :labels, :chars, :open, :close) FROM {t} WHERE {t} MATCH :match"
        args = {"labels": _LABELS, "chars": SNIPPET_CHARS, "open": _OPEN, "close": _CLOSE,
                "match": self.match, "id": rowid, "n": self.page}
        if rowid not in self.found and not self.windowed:
            self.windowed = True
            for tail in ("rowid >= :id ORDER BY rowid LIMIT :n", "rowid <= :id ORDER BY rowid DESC LIMIT :n"):
                self.found.update((await db.execute(f"{head} AND {tail}", args)).rows)
        if rowid not in self.found:
            self.found.update((await db.execute(f"{head} AND rowid = :id", args)).rows)
        return self.found.get(rowid)


@hookimpl
def render_cell(row, value, column, table, database, datasette):
    if column == "cjk_snippet" and isinstance(value, str) and _OPEN in value:
        return _marked(value)
    search = _SEARCH.get()
    if column != "content" or not search or (database, table) not in search:
        return None
    try:
        rowid = row["id"]
    except (IndexError, KeyError):
        return None
    page = search[(database, table)]

    async def inner():
        got = await page.get(datasette.get_database(database), rowid)
        if not got:
            return None
        data = json.loads(got)
        shown = _marked(data.get("snippet") or "")
        if data.get("column") and data["column"] != "content":
            shown = markupsafe.Markup(f"<em>{markupsafe.escape(data['column'])}:</em> ") + shown
        return shown

    return inner


@hookimpl
def asgi_wrapper(datasette):
    def wrap(app):
        async def scoped(scope, receive, send):
            token = _SEARCH.set(None)
            try:
                await app(scope, receive, send)
            finally:
                _SEARCH.reset(token)

        return scoped

    return wrap


# ---- canned query -------------------------------------------------------------------

# The canned query shows the best CANNED_HITS matching messages; total_matches
# says how many match in all, so a cut list says so on every row.
CANNED_HITS = 200
_CANNED_MATCH = (f"{fts_table('cjk')} MATCH cjk_fts_query(:q, :reasoning) AND (cjk_fts_exact(:q, :reasoning) "
                 f"OR cjk_fts_check(:q, :reasoning, {', '.join(FTS_COLUMNS)}))")
_CANNED_SQL = f"""WITH hits AS (
  SELECT rowid AS id, bm25({fts_table('cjk')}, {', '.join(map(str, BM25_WEIGHTS))}) AS score,
         cjk_match({fts_table('cjk')}, '{_LABELS}', {SNIPPET_CHARS}, char(2), char(3)) AS found
  FROM {fts_table('cjk')}
  WHERE {_CANNED_MATCH}
  ORDER BY score, rowid DESC
  LIMIT {CANNED_HITS}
)
SELECT m.session_id, s.title,
       count(*) OVER (PARTITION BY m.session_id) AS hits_in_session,
       (SELECT count(*) FROM {fts_table('cjk')} WHERE {_CANNED_MATCH}) AS total_matches,
       m.id AS message_id, m.role, datetime(m.timestamp, 'unixepoch') AS time,
       json_extract(h.found, '$.column') AS matched_in,
       json_extract(h.found, '$.snippet') AS cjk_snippet
FROM hits AS h
JOIN messages AS m ON m.id = h.id
JOIN sessions AS s ON s.id = m.session_id
ORDER BY min(h.score) OVER (PARTITION BY m.session_id),
         first_value(m.id) OVER (PARTITION BY m.session_id ORDER BY h.score, m.id DESC) DESC,
         h.score, m.id DESC"""
# Sessions in the order of their best hits, ranked as search ranks hits (score, ties
# newest first); within a session its hits in that order.


@hookimpl
def canned_queries(datasette, database, actor):
    async def inner():
        archive = await _archive(datasette, database)
        if not archive or "cjk" not in archive.live:
            return {}
        return {
            CANNED: {
                "sql": _CANNED_SQL,
                "title": "Search this archive (cjk index)",
                "description": (
                    f"The best {CANNED_HITS} messages matching q (the archive's query language: words, "
                    "\"phrases\", prefix*, OR, NOT), grouped by session, best session first, each with a "
                    "highlighted snippet; hits_in_session counts a session's among them, total_matches "
                    "every message that matches. Reasoning is searched only when reasoning is 1."
                ),
            }
        }

    return inner
