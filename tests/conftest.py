"""Shared fixtures for the cjk_tokenizer test-suite.

Fixtures only (no helpers imported by name from here): other test files may be
added next to this one, and pytest's import modes differ in whether
``tests/`` is on ``sys.path``.

- ``conn``: a fresh in-memory ``apsw.Connection`` with ``cjk_unicode61`` loaded.
- ``tok_conn``: one such connection for the whole session, for tests (and
  hypothesis tests, which cannot use function-scoped fixtures) that only run
  tokenizers through ``Connection.fts5_tokenizer``.
- ``run_tokenizer``: ``run_tokenizer(name, args, data, flags)`` returns the
  token stream of any registered tokenizer as APSW reports it: a list of
  ``(start, end, token, *colocated_tokens)``.
- ``utf8_reader``: the UTF-8 reader the tokenizer (and SQLite's unicode61)
  use, ported to Python: ``utf8_reader(data)`` yields ``(start, end, cp)``.
- ``sqlite3_shell``: the path of the ``sqlite3`` shell; the test skips without
  one (fails when CJK_REQUIRE_ALL_HOSTS is set).
"""
from __future__ import annotations

import os
import shutil

import apsw
import pytest

import cjk_tokenizer

DOCUMENT = apsw.FTS5_TOKENIZE_DOCUMENT
QUERY = apsw.FTS5_TOKENIZE_QUERY
PREFIX = apsw.FTS5_TOKENIZE_QUERY | apsw.FTS5_TOKENIZE_PREFIX
AUX = apsw.FTS5_TOKENIZE_AUX
ALL_MODES = (DOCUMENT, QUERY, PREFIX, AUX)


def _new_connection():
    conn = apsw.Connection(":memory:")
    assert cjk_tokenizer.load(conn) is conn
    return conn


@pytest.fixture
def sqlite3_shell() -> str:
    found = shutil.which("sqlite3")
    if not found:
        if os.environ.get("CJK_REQUIRE_ALL_HOSTS"):
            pytest.fail("the sqlite3 shell is not installed (and CJK_REQUIRE_ALL_HOSTS is set)")
        pytest.skip("the sqlite3 shell is not installed")
    return found


@pytest.fixture
def conn():
    c = _new_connection()
    yield c
    c.close()


@pytest.fixture(scope="session")
def tok_conn():
    c = _new_connection()
    yield c
    c.close()


@pytest.fixture(scope="session")
def run_tokenizer(tok_conn):
    cache = {}

    def run(name, args, data, flags=DOCUMENT, locale=None):
        if isinstance(data, str):
            data = data.encode("utf-8")
        key = (name, tuple(args))
        tok = cache.get(key)
        if tok is None:
            tok = cache[key] = tok_conn.fts5_tokenizer(name, list(args))
        return tok(data, flags, locale, include_offsets=True, include_colocated=True)

    # The cached tokenizer objects outlive tok_conn (closed first) on purpose:
    # a tokenizer keeps nothing that points into its connection's memory.
    return run


# SQLite's sqlite3Utf8Trans1 / csrc/cjk_chars.c aLeadBits: value bits of a lead byte.
_LEAD_BITS = bytes(
    [b & 0x1F for b in range(0xC0, 0xE0)]
    + [b & 0x0F for b in range(0xE0, 0xF0)]
    + [b & 0x07 for b in range(0xF0, 0xF8)]
    + [b & 0x03 for b in range(0xF8, 0xFC)]
    + [b & 0x01 for b in range(0xFC, 0xFE)]
    + [0, 0]
)


def read_utf8(data: bytes):
    """Yield ``(start, end, cp)`` per character as csrc/cjk_chars.c reads UTF-8.

    A lead byte >= 0xC0 swallows every continuation byte after it (as
    SQLite's READ_UTF8 does), but a CJK letter ends where its own bytes do;
    malformed sequences read as U+FFFD.
    """
    from bisect import bisect_right

    from cjk_tokenizer._native import cjk_ranges

    ranges = cjk_ranges()
    starts = [lo for lo, _ in ranges]

    def is_cjk(cp):
        k = bisect_right(starts, cp) - 1
        return k >= 0 and cp <= ranges[k][1]

    i, n = 0, len(data)
    while i < n:
        start = i
        c = data[i]
        i += 1
        if c < 0x80:
            yield start, i, c
            continue
        if c < 0xC0:
            yield start, i, 0xFFFD
            continue
        want = 1 if c < 0xE0 else 2 if c < 0xF0 else 3 if c < 0xF8 else 99
        c = _LEAD_BITS[c - 0xC0]
        ncont = 0
        while i < n and (data[i] & 0xC0) == 0x80:
            if ncont == want and want >= 2 and c >= (0x800 if want == 2 else 0x10000) \
                    and (c & 0xFFFFF800) != 0xD800 \
                    and (is_cjk(c) or 0xFE00 <= c <= 0xFE0F or 0xE0100 <= c <= 0xE01EF):
                break  # a stray continuation byte after a CJK letter (or selector) is a character of its own
            if ncont < 4:
                c = (c << 6) + (data[i] & 0x3F)
            ncont += 1
            i += 1
        if (
            ncont != want
            or c > 0x10FFFF
            or (c & 0xFFFFF800) == 0xD800
            or (want == 1 and c < 0x80)
            or (want == 2 and c < 0x800)
            or (want == 3 and c < 0x10000)
            or (c & 0xFFFFFFFE) == 0xFFFE
        ):
            c = 0xFFFD
        yield start, i, c


@pytest.fixture(scope="session")
def utf8_reader():
    return read_utf8
