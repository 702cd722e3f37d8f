"""``tokenize()``: what cjk_unicode61 makes of a text, for debugging and tests.

It runs the real C tokenizer inside SQLite (through APSW's
``Connection.fts5_tokenizer``, which also checks every offset and colocated
flag), so what you see is exactly what the index stores.
"""
from __future__ import annotations

import threading
from typing import Iterable

from . import _native
from .constants import TOKENIZE_MODES
from .errors import ExtensionError
from .loader import TOKENIZER, load

_lock = threading.Lock()
_conn = None


def _connection():
    global _conn
    if _conn is None:
        import apsw

        _conn = load(apsw.Connection(":memory:"))
    return _conn


def _last_char_start(data: bytes, start: int, end: int, token: str, variants: bool) -> int:
    """Start of the run-final character a colocated unigram stands for."""
    for k in range(end - 1, start - 1, -1):
        if (data[k] & 0xC0) != 0x80:  # a character boundary
            piece = data[k:end].decode("utf-8", "replace")
            if _native.fold(piece, variants) == token:
                return k
    return start


def tokenize(text: str | bytes, *, mode: str = "document",
             args: Iterable[str] = ()) -> list[tuple[str, int, int, bool]]:
    """Tokenize ``text`` (str or UTF-8 bytes) as ``cjk_unicode61 <args>`` would.

    ``mode`` is "document", "query", "prefix" or "aux".  Returns a list of
    ``(token, start, end, colocated)``; ``start``/``end`` are UTF-8 byte
    offsets into the text (FTS5's own unit) and ``colocated`` is True for a
    token at the same position as the one before it.
    """
    if mode not in TOKENIZE_MODES:
        raise ValueError(f"mode must be one of {', '.join(TOKENIZE_MODES)}, not {mode!r}")
    if not isinstance(text, (str, bytes, bytearray)):
        raise TypeError(f"text must be a str or UTF-8 bytes, not {type(text).__name__}")
    data = text if isinstance(text, (bytes, bytearray)) else text.encode("utf-8", "surrogatepass")
    if isinstance(args, (str, bytes)):  # a string would be read as its characters
        raise TypeError("args must be a list of tokenizer arguments, e.g. ['unigrams', '1']")
    args = [str(a) for a in args]
    problem = _native.tokenizer_args_error(args)
    if problem:
        raise ValueError(problem)
    variants = any(n.lower() == "fold_variants" and v == "1" for n, v in zip(args[::2], args[1::2]))
    import apsw

    with _lock:
        conn = _connection()
        try:
            tok = conn.fts5_tokenizer(TOKENIZER, args)
            raw = tok(bytes(data), _flags(mode), None, include_offsets=True, include_colocated=True)
        except apsw.Error as exc:
            raise ExtensionError(f"{TOKENIZER} failed: {exc}") from exc
        finally:
            tok = None
    # APSW gives colocated tokens the offsets of the token they share a
    # position with; with "unigrams 1" the first one stands for the bigram's
    # first character, any other for the run-final one.
    unigrams = any(a.lower() == "unigrams" and v == "1" for a, v in zip(args[::2], args[1::2]))
    out: list[tuple[str, int, int, bool]] = []
    for entry in raw:
        start, end, first, *colocated = entry
        out.append((first, start, end, False))
        for k, extra in enumerate(colocated):
            span = _first_char_span(data, start, end, extra, variants) if unigrams and k == 0 and mode != "query" else None
            if span is None:
                span = (_last_char_start(data, start, end, extra, variants), end)
            out.append((extra, *span, True))
    return out


def _flags(mode: str) -> int:
    """The FTS5 tokenize flags of ``mode`` (constants.TOKENIZE_MODES)."""
    import apsw

    return {"document": apsw.FTS5_TOKENIZE_DOCUMENT, "query": apsw.FTS5_TOKENIZE_QUERY,
            "prefix": apsw.FTS5_TOKENIZE_QUERY | apsw.FTS5_TOKENIZE_PREFIX, "aux": apsw.FTS5_TOKENIZE_AUX}[mode]


def _first_char_span(data: bytes, start: int, end: int, token: str, variants: bool):
    """(start, end) of the character at ``start`` that the unigram ``token`` stands for, or None.

    The end is the last boundary that still folds to ``token``: variation
    selectors after the letter belong to it, as in the tokenizer."""
    span = None
    for k in range(start + 1, end):
        if (data[k] & 0xC0) != 0x80 and _native.fold(data[start:k].decode("utf-8", "replace"), variants) == token:
            span = (start, k)
    return span
