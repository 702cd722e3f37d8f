"""sqlite-utils plugin: cjk_unicode61 in every connection sqlite-utils opens.

Registered through the ``sqlite_utils`` entry point (sqlite-utils 3.34+ has the
``prepare_connection`` hook), so ``enable-fts --tokenize cjk_unicode61``,
``insert`` into a table whose triggers feed a cjk FTS table, and ``search``
work without ``--load-extension``, in the CLI and in ``sqlite_utils.Database``.

One CJK character
-----------------
``sqlite-utils search docs.db docs 大`` binds ``大`` (or ``"大"`` with
``--quote``) to ``MATCH :query``.  The tokenizer then sees one character in
query mode and looks up the unigram 大, which the index holds only where 大
ends a CJK run; occurrences inside a run live in bigrams (大别, 大学).  The
prefix form ``"大"*`` reaches those bigrams and so finds every occurrence.
No hook lets a plugin change the query a tool binds, so this plugin wraps
``Table.search_sql`` (the one place both the CLI's ``search`` and
``Table.search()`` build their SQL): when the table's FTS table uses
cjk_unicode61 the MATCH argument becomes ``cjk_query(:query)``, an SQL function
registered on every connection that writes each phrase of the query that is
one CJK character (quotes around it allowed: ``大``, ``"大"``, the 大 of
``大 学``) as ``"X"*`` and leaves the rest of the query as it is.  ``--sql`` /
``search_sql()`` show it.  Other tables' SQL is untouched.
"""
from __future__ import annotations

import sqlite_utils.db
from sqlite_utils import hookimpl

from cjk_tokenizer.plugins import load_or_say, prefix_one_cjk_chars, uses_cjk_tokenizer

TOOL = "sqlite-utils"
QUERY_FUNCTION = "cjk_query"
_MATCH = " match :query"


cjk_query = prefix_one_cjk_chars  # the SQL function's body (plugins/__init__.py)


@hookimpl
def prepare_connection(conn):
    if load_or_say(conn, TOOL):
        conn.create_function(QUERY_FUNCTION, 1, cjk_query, deterministic=True)


def _has_function(db) -> bool:
    """Did prepare_connection run on this Database (not so with ``execute_plugins=False``)?"""
    try:
        db.conn.execute(f"SELECT {QUERY_FUNCTION}('')").fetchone()
        return True
    except Exception:  # sqlite3's or pysqlite3's OperationalError: no such function
        return False


def _wrap_search_sql(original):
    def search_sql(self, *args, **kwargs):
        sql = original(self, *args, **kwargs)
        fts = self.detect_fts()
        if fts and _MATCH in sql and uses_cjk_tokenizer(self.db.table(fts).schema) and _has_function(self.db):
            sql = sql.replace(_MATCH, f" match {QUERY_FUNCTION}(:query)", 1)
        return sql

    search_sql.__doc__ = original.__doc__
    search_sql._cjk_wrapped = True
    return search_sql


if not getattr(sqlite_utils.db.Table.search_sql, "_cjk_wrapped", False):
    sqlite_utils.db.Table.search_sql = _wrap_search_sql(sqlite_utils.db.Table.search_sql)
