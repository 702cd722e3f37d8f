"""The query language (cjk_tokenizer/query.py): every string gets a documented
meaning or a clear QueryError, never an FTS5 syntax error."""
from __future__ import annotations

import time

import pytest

from cjk_tokenizer.errors import QueryError
from cjk_tokenizer.query import (
    MAX_DEPTH,
    MAX_QUERY_CHARS,
    MAX_TERMS,
    And,
    Not,
    Or,
    Term,
    negative_terms,
    parse,
    positive_terms,
    term_from_key,
)


def p(q: str) -> str:
    return str(parse(q))


@pytest.mark.parametrize("query, parsed", [
    # words, implicit and explicit AND
    ("hello", '"hello"'),
    ("hello world", '("hello" AND "world")'),
    ("hello AND world", '("hello" AND "world")'),
    # OR binds looser than AND
    ("a b OR c", '(("a" AND "b") OR "c")'),
    ("a OR b c", '("a" OR ("b" AND "c"))'),
    ("(a OR b) c", '(("a" OR "b") AND "c")'),
    # negation
    ("a -b", '("a" AND NOT "b")'),
    ("a NOT b", '("a" AND NOT "b")'),
    ("a -(b OR c)", '("a" AND NOT ("b" OR "c"))'),
    ('a -"b c"', '("a" AND NOT "b c")'),
    ("NOT NOT a", '"a"'),
    ("x-y", '"x y"'),  # '-' inside a word is punctuation
    ("a - b", '("a" AND "b")'),  # a lone '-' is nothing
    # phrases and prefixes
    ('"hello world"', '"hello world"'),
    ('"error mess"*', '"error mess"*'),
    ("deploy*", '"deploy"*'),
    ("deploy**", '"deploy"*'),
    ("*deploy", '"deploy"'),  # '*' only means prefix at the end
    ("foo*bar", '"foo bar"'),
    ("大*", '"大"'),  # '*' after CJK changes nothing: CJK already matches inside runs
    ("大别*", '"大别"'),
    # words that hold several units are phrases
    ("print(x)", '"print x"'),
    ("file.py:42", '"file py 42"'),
    ("修改youer服务", '"修改 youer 服务"'),
    ("foo_bar", '"foo bar"'),
    # folding happens once, here
    ("Ｈｅｌｌｏ", '"hello"'),
    ("ｶﾀｶﾅ", '"カタカナ"'),
    ("カ\u3099", '"ガ"'),
    ("Café", '"cafe"'),
])
def test_syntax(query, parsed):
    assert p(query) == parsed


@pytest.mark.parametrize("query, parsed", [
    # unbalanced quotes: the phrase runs to the end
    ('"unbalanced phrase', '"unbalanced phrase"'),
    ('a "b c', '("a" AND "b c")'),
    ('a "b" "c', '("a" AND "b" AND "c")'),
    # unbalanced parentheses: closed at the end / ignored
    ("((a b", '("a" AND "b")'),
    ("a)) b", '("a" AND "b")'),
    (") a (", '"a"'),
    ("()", None),
    # stray operators are ignored
    ("a OR", '"a"'),
    ("OR a", '"a"'),
    ("a OR OR b", '("a" OR "b")'),
    ("a AND", '"a"'),
    ("a NOT", '"a"'),
    ("( OR a)", '"a"'),
    ("a OR )", '"a"'),
    # only uppercase operators; the words themselves stay searchable
    ("a or b", '("a" AND "or" AND "b")'),
    ('"OR"', '"or"'),
    ('"NOT" x', '("not" AND "x")'),
    # FTS5 syntax is text here
    ("content:error", '"content error"'),
    ("{content}: x", '("content" AND "x")'),
    ("^start", '"start"'),
    ("NEAR(a b, 5)", '("near a" AND "b" AND "5")'),
    ("a + b", '("a" AND "b")'),
    ('a:"b"', '("a" AND "b")'),
    # control characters and lone surrogates separate words
    ("foo\x00bar", '"foo bar"'),
    ("foo\ud800bar", '"foo bar"'),
    ("foo\ud83dbar", '"foo bar"'),
])
def test_safe_meanings(query, parsed):
    if parsed is None:
        with pytest.raises(QueryError):
            parse(query)
    else:
        assert p(query) == parsed


@pytest.mark.parametrize("query", ["", "   ", "!!!", "-", "*", '""', "()", "OR", "AND", "NOT", "NOT NOT", "OR AND NOT",
                                   "\x00", "\ud800", "😀", "。、！", "- - -", "( ) ( )", '"" OR ""'])
def test_nothing_searchable_is_a_clear_error(query):
    with pytest.raises(QueryError, match="nothing to search for"):
        parse(query)


@pytest.mark.parametrize("value", [None, b"hello", 42, ["a"]])
def test_non_string_query_is_a_query_error(value):
    with pytest.raises(QueryError, match="must be a str"):
        parse(value)


def test_pure_negation_is_kept_with_its_meaning():
    node = parse("-a")
    assert isinstance(node, Not)
    node = parse("x OR -y")
    assert isinstance(node, Or) and isinstance(node.children[1], Not)
    assert [str(t) for t in positive_terms(node)] == ['"x"']
    assert [str(t) for t in negative_terms(node)] == ['"y"']


def test_dropped_terms_do_not_leave_operators_behind():
    assert p("a OR !!!") == '"a"'
    assert p("!!! -b a") == '(NOT "b" AND "a")'
    assert p("a -!!!") == '"a"'


def test_ten_thousand_terms_fail_fast_with_the_limit_in_the_message():
    q = " ".join(f"w{i}" for i in range(10_000))
    assert len(q) <= MAX_QUERY_CHARS * 5
    t0 = time.perf_counter()
    with pytest.raises(QueryError, match=str(MAX_QUERY_CHARS) + "|" + str(MAX_TERMS)):
        parse(q)
    assert time.perf_counter() - t0 < 1.0
    # under the character limit but over the term limit
    q = " ".join("w" for _ in range(MAX_TERMS + 1))
    with pytest.raises(QueryError, match=f"{MAX_TERMS + 1} terms; the limit is {MAX_TERMS}"):
        parse(q)
    assert len(parse(" ".join(f"w{i}" for i in range(MAX_TERMS))).children) == MAX_TERMS


def test_long_and_deep_queries_are_bounded():
    with pytest.raises(QueryError, match="characters long"):
        parse("a" * (MAX_QUERY_CHARS + 1))
    with pytest.raises(QueryError, match="nests groups"):
        parse("(" * (MAX_DEPTH + 1) + "a")
    assert p("(" * MAX_DEPTH + "a" + ")" * MAX_DEPTH) == '"a"'
    t0 = time.perf_counter()
    parse("NOT " * 4000 + "a")  # negation chains are not recursion
    parse('"' + "大" * (MAX_QUERY_CHARS - 2) + '"')  # one long CJK phrase is one unit
    assert time.perf_counter() - t0 < 2.0


def test_ast_nodes_and_term_keys():
    node = parse('修改youer服务 OR "abc 别"* -x')
    assert isinstance(node, Or)
    assert isinstance(node.children[1], And)
    t = node.children[0]
    assert isinstance(t, Term) and [u.kind for u in t.units] == ["cjk", "word", "cjk"]
    assert not t.words_only and not t.is_cjk_run
    for term in positive_terms(node) + negative_terms(node):
        again = term_from_key(term.key())
        assert again.units == term.units and again.prefix == term.prefix
    # prefix applies to a last word only
    assert parse('"abc 别"*').prefix is False
    assert parse('"别 abc"*').prefix is True


def test_repeated_parses_keep_the_variants_setting_apart():
    # Parses are kept for the next search; the fold_variants setting is part of what is kept.
    plain = parse("學習 report")
    folded = parse("學習 report", fold_variants=True)
    assert str(plain) != str(folded)
    assert parse("學習 report") == plain and parse("學習 report", fold_variants=True) == folded
    for _ in range(2):  # a query that fails fails every time
        with pytest.raises(QueryError, match="nothing to search"):
            parse("!!")
