"""cjk_tokenizer: exact, index-speed full-text search over CJK mixed with English and code.

The binding itself is ``load(conn)`` and ``loadable_path()``; the rest of the
package (archive, query router, session search) builds on them.
"""
from ._native import cjk_ranges, fold, is_cjk, split_cjk
from .errors import CjkTokenizerError, ExtensionError, QueryError
from .loader import ENTRY_POINT, TOKENIZER, load, loadable_path
from .tokens import tokenize

__version__ = "0.1.0"

__all__ = [
    "CjkTokenizerError",
    "ENTRY_POINT",
    "ExtensionError",
    "QueryError",
    "TOKENIZER",
    "cjk_ranges",
    "fold",
    "is_cjk",
    "load",
    "loadable_path",
    "split_cjk",
    "tokenize",
]
