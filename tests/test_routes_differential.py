"""Every route that can express a query returns the same messages, and the
same as the brute-force Python oracle (evaluate.py over every row), whichever
indexes are live: an index added never loses a match.
"""
from __future__ import annotations

import os
import sys

import apsw
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import _search_corpus as corpus  # noqa: E402

from cjk_tokenizer.compiler import table  # noqa: E402
from cjk_tokenizer.errors import QueryError  # noqa: E402
from cjk_tokenizer.evaluate import evaluate  # noqa: E402
from cjk_tokenizer.query import parse  # noqa: E402
from cjk_tokenizer.router import plan  # noqa: E402
from cjk_tokenizer.search import run_search, searched_columns  # noqa: E402

LIVE_SETS = (
    corpus.ALL_LIVE,
    frozenset({"unicode61", "trigram"}),  # archive opened without the extension
    frozenset({"unicode61"}),  # ... and with trigram dropped
    frozenset(),  # nothing live: everything scans
)


@pytest.fixture(scope="module")
def archive():
    rows = corpus.messages()
    conn = corpus.build(rows)
    yield rows, conn
    conn.close()


def oracle(rows, node, include_reasoning):
    cols = searched_columns(include_reasoning)
    return {r["id"] for r in rows if evaluate(node, [r[c] for c in cols])}


def ids(conn, query, live, route, include_reasoning, unigrams=False):
    hits = run_search(conn, query, live_indexes=live, route=route, include_reasoning=include_reasoning,
                      sort="newest", limit=1000, cjk_unigrams=unigrams)
    return {h.message_id for h in hits}


@pytest.fixture(scope="module")
def unigram_archive():
    rows = corpus.messages()
    conn = corpus.build(rows, routes=("cjk",), unigrams=True)
    yield rows, conn
    conn.close()


def test_the_cjk_route_on_a_unigram_index_agrees_with_the_oracle(unigram_archive):
    """The cjk index as a new Archive makes it (unigrams 1) means what the query says."""
    rows, conn = unigram_archive
    failures = []
    for q in corpus.queries(rows):
        want = oracle(rows, parse(q), False)
        got = ids(conn, q, frozenset({"cjk"}), None, False, unigrams=True)
        if got != want:
            failures.append(f"{q!r}: missing {sorted(want - got)[:8]}, extra {sorted(got - want)[:8]}")
    assert not failures, f"{len(failures)} disagreements:\n" + "\n".join(failures[:30])


@pytest.mark.parametrize("include_reasoning", [False, True])
def test_every_route_agrees_with_the_oracle(archive, include_reasoning):
    rows, conn = archive
    qs = corpus.queries(rows)
    if include_reasoning:
        qs = qs[::3]  # the same machinery; a third of the set keeps the suite fast
    failures, compared, nonempty = [], {}, 0
    for q in qs:
        node = parse(q)
        want = oracle(rows, node, include_reasoning)
        nonempty += bool(want)
        cases = [(corpus.ALL_LIVE, r) for r in corpus.ROUTES] + [(live, None) for live in LIVE_SETS[1:]]
        for live, route in cases:
            try:
                p = plan(node, live, columns=searched_columns(include_reasoning), route=route)
            except QueryError:
                assert route is not None, f"automatic routing refused {q!r} with {sorted(live)}"
                continue  # this route cannot express the query
            got = ids(conn, q, live, route, include_reasoning)
            label = f"{q!r} route={route} live={sorted(live)} plan={p.label}/{p.kind}"
            compared[route or p.label] = compared.get(route or p.label, 0) + 1
            if got != want:
                failures.append(f"{label}: missing {sorted(want - got)[:8]}, extra {sorted(got - want)[:8]}")
    assert not failures, f"{len(failures)} disagreements:\n" + "\n".join(failures[:30])
    # the comparison is not vacuous: most queries have hits, every route served many
    assert nonempty >= len(qs) * 0.6
    for route in corpus.ROUTES:
        assert compared.get(route, 0) >= len(qs) * (0.3 if route != "trigram" else 0.08), compared


def test_words_unicode61_cannot_see_are_found_on_its_route(archive):
    """unicode61's own index misses a word glued to CJK text or mixing full-width and
    ASCII letters (its tokens do not contain the word); the unicode61 route finds those
    too, forced or chosen, with or without trigram to narrow them down."""
    rows, conn = archive
    want = oracle(rows, parse("youer"), False)
    t = table("unicode61")
    bare = {r[0] for r in conn.execute(f"SELECT rowid FROM {t} WHERE {t} MATCH ?",
                                       ("{content tool_name tool_calls} : (youer OR ｙｏｕｅｒ)",))}
    assert bare < want  # the corpus glues youer to CJK text, so the index alone misses some
    for live in (frozenset({"unicode61"}), frozenset({"unicode61", "trigram"})):
        assert ids(conn, "youer", live, "unicode61", False) == want
        assert ids(conn, "youer", live, None, False) == want
    tok = conn.fts5_tokenizer("unicode61", ["remove_diacritics", "2"])
    for r in rows:
        if r["id"] in want - bare:
            seen = {t[2] for c in searched_columns(False) if r[c]
                    for t in tok(r[c].encode(), apsw.FTS5_TOKENIZE_DOCUMENT, None, include_offsets=True)}
            assert not seen & {"youer", "ｙｏｕｅｒ"}, r
            assert any("youer" in t or "ｙ" in t for t in seen), seen  # glued or width-mixed
    del tok


def test_queries_cover_every_shape(archive):
    """The generated set holds every shape the test above relies on: OR, NOT, CJK runs of 1-8
    characters, mixed terms and prefixes."""
    rows, _ = archive
    nodes = [parse(q) for q in corpus.queries(rows)]
    text = " ".join(map(str, nodes))
    assert " OR " in text and "NOT " in text
    lengths = {len(t.units[0].text) for n in nodes for t in _terms(n) if t.is_cjk_run}
    assert set(range(1, 9)) <= lengths
    assert any(not t.words_only and not t.is_cjk_run for n in nodes for t in _terms(n))  # mixed
    assert any(t.prefix for n in nodes for t in _terms(n))


def _terms(node):
    from cjk_tokenizer.query import terms

    return terms(node)
