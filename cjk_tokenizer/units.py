"""The unit stream: what a text means to search, on every route.

A text (a message column or a query term) is folded by the C folding (width,
variation selectors, and Han variants for an archive created with
``fold_variants=True``), split into runs of CJK letters by the C definition of CJK, and everything
between the runs is tokenized by SQLite's own ``unicode61`` tokenizer with
``remove_diacritics 2`` (case-folded, accents removed).  The result is a list
of units, in text order::

    修改Café服务, please  ->  cjk 修改, word cafe, cjk 服务, word please

This is exactly the information the ``cjk_unicode61`` index holds (its bigrams
are only a way of finding substrings of the CJK runs; its gap tokens say that
two runs are adjacent units), which is why every route is checked against it.
Nothing here knows which characters are CJK or how folding works: both come
from the compiled C helpers (``_native``), and the word tokenizer is SQLite's.

Offsets are characters of the folded text; ``Analysis.raw_span`` maps them
back to the original text for snippets.
"""
from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from . import _native

WORD = "word"
CJK = "cjk"

# How the word tokenizer is configured: the same as the cjk and unicode61
# indexes (see schema.FTS_INDEXES).
WORD_TOKENIZER = ("unicode61", ("remove_diacritics", "2"))

_SURROGATE = re.compile("[\ud800-\udfff]")
_RUN = re.compile(rb"\x01+")


@dataclass(frozen=True)
class Unit:
    """One unit: a CJK run (folded) or a word (unicode61-normalized)."""

    kind: str  # CJK or WORD
    text: str
    # the folded text as written (before case folding and accent removal);
    # not part of the unit's identity
    surface: str = field(default="", compare=False, repr=False)

    def __str__(self) -> str:  # for explain() and test messages
        return self.text


def clean(text: str) -> str:
    """Replace lone surrogates (not encodable as UTF-8) by U+FFFD.

    Python strings may hold them; SQLite and the C helpers cannot.  U+FFFD is
    what unicode61 makes of invalid UTF-8: a separator.  Length is unchanged.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


_local = threading.local()


def _word_tokenizer():
    # One private in-memory connection per thread: the built-in tokenizer
    # needs no extension, and threads never contend for one connection.
    tok = getattr(_local, "tok", None)
    if tok is None:
        try:
            import apsw
        except ImportError as exc:  # a declared dependency; say so plainly
            from .errors import CjkTokenizerError

            raise CjkTokenizerError(f"searching needs APSW for SQLite's unicode61 tokenizer ({exc}); "
                                    "pip install apsw") from exc

        _local.conn = apsw.Connection(":memory:")
        name, args = WORD_TOKENIZER
        tok = _local.tok = _local.conn.fts5_tokenizer(name, list(args))
        _local.document = apsw.FTS5_TOKENIZE_DOCUMENT  # APSW is imported here, not at module import
    return tok


def word_tokens(data: bytes) -> list:
    """unicode61 tokens of UTF-8 ``data``: ``[(start, end, token, ...), ...]``."""
    if not data:
        return []
    tok = _word_tokenizer()
    return tok(data, _local.document, None, include_offsets=True, include_colocated=False)


_WORD_FOLD: dict = {}  # the table word_fold() builds, once per process


def word_fold() -> dict:
    """A ``str.translate`` table that writes each character as unicode61 folds it inside a
    word (``É`` -> ``e``), drops the ones a word absorbs (combining marks) and keeps every
    other character: a word of a text folded by _native.fold is then a substring of the text
    translated by it.  Read off the word tokenizer itself, one character at a time (its
    folding is per character; past U+FFFF it folds nothing to ASCII), so it cannot
    disagree with it.  For necessary conditions checked before tokenizing a text."""
    if not _WORD_FOLD:
        table = {}
        for cp in range(0x80, 0x10000):
            if 0xD800 <= cp <= 0xDFFF:
                continue
            c = chr(cp)
            alone = word_tokens(c.encode("utf-8"))
            if alone:
                if alone[0][2] != c:
                    table[cp] = alone[0][2]
            elif [t[2] for t in word_tokens(("a" + c + "b").encode("utf-8"))] == ["ab"]:
                table[cp] = ""
        table.update({cp: chr(cp + 32) for cp in range(0x41, 0x5B)})
        _WORD_FOLD.update(table)
    return _WORD_FOLD


# Texts are tokenized in pieces of at most this many characters, cut after a
# newline or space (always separators), to bound one tokenizer call's memory.
_CHUNK = 1 << 20


def _tokens(masked: str) -> list[tuple[int, int, str]]:
    """unicode61 tokens of ``masked`` as (start, end, token), character offsets."""
    out: list[tuple[int, int, str]] = []
    base, n = 0, len(masked)
    while base < n:
        cut = n
        if n - base > _CHUNK:
            cut = max(masked.rfind("\n", base, base + _CHUNK), masked.rfind(" ", base, base + _CHUNK)) + 1
            if cut <= base:  # nowhere to cut: the rest in one piece
                cut = n
        piece = masked[base:cut]
        data = piece.encode("utf-8")
        toks = word_tokens(data)
        if len(data) == len(piece):  # ASCII: bytes are characters
            out.extend((base + a, base + b, t) for a, b, t in toks)
        else:
            pb = pc = 0
            for a, b, t in toks:
                pc += len(data[pb:a].decode("utf-8"))
                cs = pc
                pc += len(data[a:b].decode("utf-8"))
                pb = b
                out.append((base + cs, base + pc, t))
        base = cut
    return out


class Analysis:
    """A text as units.  Offsets are character offsets into ``folded``.
    ``variants``: fold Han variants too (the ``fold_variants 1`` tokenizer).

    The word tokens are computed at once; the merged unit list only when a
    term of several units (or a span) needs it, which keeps the common
    single-word and single-run checks cheap on multi-megabyte texts.
    """

    __slots__ = ("raw", "folded", "runs", "tokens", "_words", "_units", "_cmap")

    def __init__(self, raw: str, variants: bool = False):
        self.raw = clean(raw)
        self.folded = _native.fold(self.raw, variants)
        mask = _native.cjk_mask(self.folded)
        self.runs = [m.span() for m in _RUN.finditer(mask)]
        masked = self.folded
        if self.runs:  # every CJK letter becomes one space: same offsets, no words inside runs
            pieces, pos, f = [], 0, self.folded
            for a, b in self.runs:
                pieces.append(f[pos:a])
                pieces.append(" " * (b - a))
                pos = b
            pieces.append(f[pos:])
            masked = "".join(pieces)
        self.tokens = _tokens(masked)
        self._words = None
        self._units = None
        self._cmap = None

    @property
    def words(self) -> frozenset:
        if self._words is None:
            self._words = frozenset(t for _, _, t in self.tokens)
        return self._words

    def _merge(self):
        if self._units is None:
            f = self.folded
            # runs and words never overlap, so starts are distinct
            entries = [(a, b, None) for a, b in self.runs] + self.tokens
            entries.sort(key=lambda e: e[0])
            units, starts, ends = [], [], []
            for a, b, t in entries:
                if t is None:
                    units.append(Unit(CJK, f[a:b], f[a:b]))
                else:
                    units.append(Unit(WORD, t, f[a:b]))
                starts.append(a)
                ends.append(b)
            self._units = (units, starts, ends)
        return self._units

    @property
    def units(self) -> list[Unit]:
        return self._merge()[0]

    @property
    def starts(self) -> list[int]:
        return self._merge()[1]

    @property
    def ends(self) -> list[int]:
        return self._merge()[2]

    def raw_span(self, start: int, end: int) -> tuple[int, int]:
        """Character span of ``raw`` that folds to ``folded[start:end]``."""
        if len(self.folded) == len(self.raw):  # folding kept every character
            return start, end
        if self._cmap is None:
            self._cmap = _fold_map(self.raw)
        return self._cmap[start], self._cmap[end]


@lru_cache(maxsize=4096)
def _fold1(s: str) -> str:
    return _native.fold(s)


# Characters folding may merge into the one before them (cjk_fold_utf8): the
# voiced sound marks, combining and half-width (U+3099/309A, U+FF9E/FF9F),
# and the variation selectors.  Only where the walk starts: the C folding
# still says how far each character reaches (tests/test_query_units.py checks
# this set against it over every code point).
_SELECTORS = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
_MERGING = re.compile(f"[\u3099\u309a\uff9e\uff9f{_SELECTORS}]+")
_SELECTOR_RUN = re.compile(f"[{_SELECTORS}]+")


def _fold_map(raw: str) -> list[int]:
    """folded char index -> raw char index (+ one entry for the end).

    Folding maps a character to one character (Han variants too) and only
    ever merges it with what follows it (a voiced mark, variation selectors),
    so a walk that asks the C folding how far each character reaches
    rebuilds the alignment.  Only a character followed by one that may merge
    can reach further than itself: the walk runs there, and every other
    character maps to itself.  Once a variation selector has merged, the
    rest of its run does too (cjk_skip_variation_selectors), so a long run
    costs one question, not one per selector over an ever longer slice.
    """
    out: list[int] = []
    i, n = 0, len(raw)
    for m in _MERGING.finditer(raw):
        if m.end() <= i:  # inside a character the walk has passed
            continue
        if m.start() - 1 > i:
            out.extend(range(i, m.start() - 1))
            i = m.start() - 1
        while i < m.end():
            out.append(i)
            j = i + 1
            while j < n and len(_fold1(raw[i : j + 1])) == 1:
                j += 1
                run = _SELECTOR_RUN.match(raw, j - 1)
                if run:  # a selector merged: the folding takes every one after it too, and nothing more
                    j = run.end()
                    break
            i = j
    out.extend(range(i, n))
    out.append(n)
    return out


_CACHE_LIMIT = 65536  # characters; bigger texts are analyzed afresh, not kept
# Characters the cache may hold in all: an analysis costs a few dozen bytes per
# character (two copies of the text, its tokens), so this bounds the cache to
# tens of megabytes however many texts pass through a long-running process.
CACHE_CHARS = 1 << 20
# What an entry costs besides its text's characters (its objects), counted in characters:
# a cache of many short texts is bounded too, not only one of long ones.
ENTRY_CHARS = 64


class _SizedCache:
    """Least-recently-used readings of texts (``make(text, variants)``: an Analysis unless
    told), bounded by their texts' total length."""

    def __init__(self, budget: int, make=None):
        self.budget = budget
        self.size = 0
        self._make = make or Analysis
        self._entries: OrderedDict[tuple[str, bool], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str, variants: bool) -> Any:
        key = (text, variants)
        with self._lock:
            an = self._entries.get(key)
            if an is not None:
                self._entries.move_to_end(key)
                return an
        an = self._make(text, variants)  # outside the lock: threads analyze in parallel
        with self._lock:
            if key not in self._entries:
                self._entries[key] = an
                self.size += len(text) + ENTRY_CHARS
                while self.size > self.budget and self._entries:
                    (old, _), _ = self._entries.popitem(last=False)
                    self.size -= len(old) + ENTRY_CHARS
        return an

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.size = 0


_cache = _SizedCache(CACHE_CHARS)


def analyze(text: str | None, variants: bool = False) -> Analysis:
    """The units of a column text.  Cached when it is at most _CACHE_LIMIT
    characters: a row is analyzed for every term of a query, for matched_in
    and for its snippet.  Bigger texts are read in pieces (``pieces``)."""
    text = text or ""
    variants = bool(variants)
    if len(text) <= _CACHE_LIMIT:
        return _cache.get(text, variants)
    return Analysis(text, variants)


# Where a big text may be cut into pieces analyzed one by one: after a
# character that separates units in every reading (unicode61's and the CJK
# runs') and that folding never merges with what follows.  ASCII whitespace
# and punctuation, CJK punctuation and their full-width forms.
PIECE_CHARS = 1 << 16
_SEPARATOR = r"[\s!-/:-@\[-`{-~\u3000-\u3003\u3008-\u3011\u3014-\u301f\uff01-\uff0f\uff1a-\uff20]"
_NEXT_CUT = re.compile(_SEPARATOR)
_LAST_CUT = re.compile(r"(?s).*" + _SEPARATOR)


def pieces(text: str, size: int | None = None):
    """``(offset, piece)`` for consecutive pieces of ``text`` of about ``size``
    characters, each cut after a separator (see _SEPARATOR), so every unit of
    the text lies inside one piece and each piece folds and tokenizes as it
    does within the text.  A stretch with no separator stays whole."""
    size = size or PIECE_CHARS
    base, n = 0, len(text)
    while base < n:
        cut = n
        if n - base > size:
            half = base + size // 2
            m = _LAST_CUT.match(text, half, base + size)  # the last separator in the window's second half
            if m is None:
                m = _NEXT_CUT.search(text, base + size)
            if m is not None:
                cut = m.end()
        yield base, text[base:cut]
        base = cut


def query_units(text: str, variants: bool = False) -> tuple[Unit, ...]:
    """The units of a query term: the same procedure as for documents."""
    return tuple(Analysis(text, variants).units)
