"""cjk_tokenizer: exact, index-speed full-text search over CJK mixed with English and code.

The binding itself is ``load(conn)`` and ``loadable_path()``; the rest of the
package (archive, query router, session search) builds on them.
"""
from typing import TYPE_CHECKING, Any

from ._native import cjk_ranges, fold, is_cjk, split_cjk
from .errors import (ArchiveError, CjkTokenizerError, ExtensionError, ImportFileError, QueryError,
                     TimeValueError)
from .loader import ENTRY_POINT, TOKENIZER, load, loadable_path
from .query import parse as parse_query  # the query language: none of these imports APSW at import time
from .search import Hit, run_search
from .search import explain as explain_query
from .tokens import tokenize

if TYPE_CHECKING:  # the lazy names below, typed for mypy/pyright (py.typed)
    from .archive import Archive
    from .indexing import Progress
    from .records import InputError

__version__ = "0.1.0"

# The archive needs APSW; imported on first use so that ``load()`` alone works
# in a process that only has the stdlib sqlite3.
_LAZY = {"Archive": "archive", "InputError": "records", "Progress": "indexing"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Archive",
    "ArchiveError",
    "CjkTokenizerError",
    "ENTRY_POINT",
    "ExtensionError",
    "Hit",
    "ImportFileError",
    "InputError",
    "Progress",
    "QueryError",
    "TOKENIZER",
    "TimeValueError",
    "cjk_ranges",
    "explain_query",
    "fold",
    "is_cjk",
    "load",
    "loadable_path",
    "parse_query",
    "run_search",
    "split_cjk",
    "tokenize",
]
