"""Any string is a query: a result or a QueryError, never another exception —
on every route and every set of live indexes, and on the cjk index as a new
Archive makes it (a unigram per character).  The result is the oracle's."""
from __future__ import annotations

import os
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(__file__))
import _search_corpus as corpus  # noqa: E402

from cjk_tokenizer.errors import QueryError  # noqa: E402
from cjk_tokenizer.evaluate import evaluate  # noqa: E402
from cjk_tokenizer.query import MAX_TERMS, parse  # noqa: E402
from cjk_tokenizer.router import plan  # noqa: E402
from cjk_tokenizer.search import run_search, searched_columns  # noqa: E402

_ROWS = corpus.messages(seed=3, n=80)
_CONN = corpus.build(_ROWS)
_UNIGRAMS = corpus.build(_ROWS, routes=("cjk",), unigrams=True)

# Pieces that stress the query language: operators, FTS5 syntax, quotes,
# CJK/Latin/width/voiced-mark text, control characters and lone surrogates.
PIECES = ["OR", "AND", "NOT", "NEAR", "-", "(", ")", '"', "*", ":", "^", "{", "}", "+", "col:", "content:",
          " ", "  ", "\x00", "\ud800", "\udfff", "\n", "大", "别山", "修改", "youer", "服务", "ｶﾀｶﾅ", "カ\u3099",
          "hello", "Café", "ｈｅｌｌｏ", "x1", "😀", "é", "\u0301", "。", "、", "大别山修改服务器", "NEAR(", "-(",
          "'", "\\", "%", "_", "[", "]"]

queries = st.one_of(
    st.text(max_size=30),
    st.lists(st.sampled_from(PIECES), max_size=12).map("".join),
    st.lists(st.sampled_from(PIECES), max_size=8).map(" ".join),
    # long queries, up to and past the term limit: FTS5 parser limits, SQL size
    st.lists(st.sampled_from(PIECES), min_size=50, max_size=MAX_TERMS + 20).map(" ".join),
)

CASES = [(corpus.ALL_LIVE, None), (frozenset({"unicode61", "trigram"}), None), (frozenset({"unicode61"}), None),
         (frozenset(), None), (corpus.ALL_LIVE, "scan"), (corpus.ALL_LIVE, "unicode61"),
         (corpus.ALL_LIVE, "trigram")]


@settings(max_examples=int(os.environ.get("CJK_PROPERTY_EXAMPLES", "400")), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queries)
def test_any_string_is_a_result_or_a_query_error(q):
    try:
        node = parse(q)
    except QueryError as exc:
        assert str(exc)  # a message the user can read
        for live, route in CASES:  # search says the same
            with pytest.raises(QueryError):
                run_search(_CONN, q, live_indexes=live, route=route)
        return
    cols = searched_columns(False)
    want = {r["id"] for r in _ROWS if evaluate(node, [r[c] for c in cols])}
    for live, route in CASES:
        try:
            plan(node, live, columns=cols, route=route)
            hits = run_search(_CONN, q, live_indexes=live, route=route, sort="newest", limit=1000)
        except QueryError as exc:
            assert route is not None, f"automatic routing refused {q!r}: {exc}"
            continue
        got = {h.message_id for h in hits}
        assert got == want, (q, route, sorted(live), sorted(want - got), sorted(got - want))
        for h in hits:
            h.snippet.encode("utf-8")  # always valid UTF-8
    hits = run_search(_UNIGRAMS, q, live_indexes={"cjk"}, cjk_unigrams=True, sort="newest", limit=1000)
    got = {h.message_id for h in hits}
    assert got == want, (q, "unigrams", sorted(want - got), sorted(got - want))
