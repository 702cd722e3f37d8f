"""Plugins for the SQLite tools people already use: Datasette and sqlite-utils.

Both tools talk to SQLite through the stdlib ``sqlite3`` module and find
plugins through entry points, so installing this package next to them is the
whole set-up.  What they share lives here: loading into a stdlib connection
and the one line a host that cannot load extensions prints at start-up
(instead of a later "no such tokenizer" on the first cjk table).

The modules are named after the tools (``plugins/datasette.py``,
``plugins/sqlite_utils.py``) and import everything absolutely, so inside them
``datasette`` and ``sqlite_utils`` are always the tools' own packages.
"""
from __future__ import annotations

import re
import sqlite3
import sys
import threading

from ..errors import ExtensionError
from ..loader import TOKENIZER, load

_said: set = set()
_said_lock = threading.Lock()

# Text of a CREATE VIRTUAL TABLE that uses our tokenizer (any arguments).
_CJK_FTS = re.compile(r"using\s+fts5\s*\(.*\btokenize\s*=\s*['\"]?\s*" + TOKENIZER + r"\b",
                      re.IGNORECASE | re.DOTALL)


def host_problem() -> str | None:
    """Why this Python's stdlib sqlite3 can never load the extension, or None."""
    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        return (f"this Python's sqlite3 module ({sys.executable}, Python {sys.version.split()[0]}) "
                "was built without extension loading")
    return None


def say_once(tool: str, reason: str) -> None:
    """Print, once per process and tool, the single line saying the plugin is inert and why."""
    with _said_lock:
        if tool in _said:
            return
        _said.add(tool)
    print(f"cjk_tokenizer: {tool} cannot use the {TOKENIZER} tokenizer here: {reason}; tables that use it "
          "fail with 'no such tokenizer' (run the tool under a Python whose sqlite3 can load "
          "extensions, e.g. Debian/Ubuntu python3 — see the README)", file=sys.stderr, flush=True)


def load_or_say(conn, tool: str) -> bool:
    """Load the extension into ``conn``; on failure print the one line (once) and return False."""
    problem = host_problem()
    if problem is None:
        try:
            load(conn)
            return True
        except ExtensionError as exc:
            problem = str(exc)
    say_once(tool, problem.replace("\n", " "))
    return False


def uses_cjk_tokenizer(create_sql: str | None) -> bool:
    """Is this CREATE VIRTUAL TABLE statement an FTS5 table tokenized by cjk_unicode61?"""
    return bool(create_sql) and _CJK_FTS.search(create_sql) is not None


def one_cjk_char(term: str) -> str | None:
    """The character, when ``term`` (quotes around it allowed) is one CJK character
    as the tokenizer reads it: ｶﾞ, カ+U+3099 and 辻+a variation selector are one
    character (ガ, ガ, 辻), as in documents, and text the tokenizer drops may
    surround it (``大*``, ``「大」``, ``大。``): the phrase FTS5 makes of such a
    term is that one character too."""
    from .. import tokenize
    from .._native import is_cjk

    text = term.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1].strip()
    # one character with its marks and selector, and what the tokenizer drops around it, is short
    if not text or len(text) > 64:
        return None
    tokens = tokenize(text, mode="query")
    if len(tokens) != 1:
        return None
    token = tokens[0][0]
    return token if len(token) == 1 and is_cjk(token) else None


# An FTS5 query's tokens: a string ("" escapes a quote), a bareword (ASCII letters,
# digits, _, 0x1A and every character past ASCII), whitespace, or one other character.
_FTS5_TOKEN = re.compile(r'"(?:[^"]|"")*"|(?:[A-Za-z0-9_\x1a]|[^\x00-\x7f])+|\s+|.', re.DOTALL)
_KEYWORDS = {"AND", "OR", "NOT", "NEAR"}


def prefix_one_cjk_chars(query):
    """``query`` with every phrase that is one CJK character written ``"X"*``.

    A phrase is a bareword or a string; one followed by ``*`` (already a prefix),
    joined by ``+``, naming a column (before ``:`` or inside ``{...}``) or an
    operator keyword stays as it is, and so does a query FTS5 cannot read (an
    unterminated string), so that FTS5 reports it.
    """
    if not isinstance(query, str):
        return query
    query = query.split("\x00", 1)[0]  # FTS5 reads a query up to its first NUL
    if query.count('"') % 2:
        return query
    tokens = _FTS5_TOKEN.findall(query)
    solid = [i for i, t in enumerate(tokens) if not t.isspace()]
    out, depth = list(tokens), 0
    for n, i in enumerate(solid):
        tok = tokens[i]
        depth += (tok == "{") - (tok == "}")
        before = tokens[solid[n - 1]] if n else ""
        after = tokens[solid[n + 1]] if n + 1 < len(solid) else ""
        if depth or tok in _KEYWORDS or before == "+" or after in ("*", "+", ":"):
            continue
        if tok[0] == '"' or tok[0] == "\x1a" or tok[0].isalnum() or tok[0] == "_" or ord(tok[0]) > 127:
            ch = one_cjk_char(tok.replace('""', '"') if tok[0] == '"' else tok)
            if ch:
                # after a string with nothing between, a leading quote would read as its "" escape
                sep = " " if i and tokens[i - 1].endswith('"') else ""
                out[i] = f'{sep}"{ch}"*'
    return "".join(out)
