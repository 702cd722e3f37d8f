"""Snippets (snippet.py): bounded, valid UTF-8, holding the match."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cjk_tokenizer.snippet import ELLIPSIS, make_snippet


def test_short_text_is_whole():
    assert make_snippet("大别山风景", (0, 2), 40) == ("大别山风景", (0, 2))
    assert make_snippet(None, None, 40) == ("", None)


def test_long_text_is_cut_around_the_match_with_ellipses():
    text = "前文" * 100 + "部署失败" + "后文" * 100
    s = text.index("部署失败")
    out, (hs, he) = make_snippet(text, (s, s + 4), 40)
    assert len(out) <= 40
    assert out[hs:he] == "部署失败"
    assert out.startswith(ELLIPSIS) and out.endswith(ELLIPSIS)


def test_snippet_starts_at_a_sentence_when_one_is_near():
    text = "x" * 300 + "。数据库配置文件有错误，请修改。" + "y" * 300
    s = text.index("错误")
    out, (hs, he) = make_snippet(text, (s, s + 2), 60)
    assert out.startswith(ELLIPSIS + "数据库配置文件")
    assert out[hs:he] == "错误"
    assert "修改。" in out  # ends at the sentence end after the match


def test_match_longer_than_the_limit_shows_its_start():
    text = "a" * 50 + "b" * 200 + "c" * 50
    out, (hs, he) = make_snippet(text, (50, 250), 30)
    assert len(out) <= 30 and set(out[hs:he]) == {"b"}


def test_lone_surrogates_and_combining_marks():
    text = "\ud800" + "e\u0301" * 100 + "target" + "\u0301" * 3 + "z" * 100
    s = text.index("target")
    out, (hs, he) = make_snippet(text, (s, s + 6), 40)
    out.encode("utf-8")
    assert out[hs:he] == "target"
    body = out.strip(ELLIPSIS)
    assert not body[0] == "\u0301"  # never starts with a mark cut from its base


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400), st.integers(0, 400), st.integers(0, 30), st.integers(20, 200))
def test_snippet_properties(text, start, length, limit):
    start = min(start, len(text))
    end = min(len(text), start + length)
    out, hl = make_snippet(text, (start, end), limit)
    cleaned = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    assert len(out) <= limit  # ellipses included; a text that fits is shown whole, trimmed
    out.encode("utf-8")  # surrogates never survive
    if 0 < end - start <= limit - 2:  # a match that fits is always shown whole
        assert out[hl[0]:hl[1]] == cleaned[start:end]
    if hl is None:
        assert end == start


def test_a_hit_shows_touching_matches_as_one_whose_start_a_long_one_shows():
    from cjk_tokenizer import Archive

    text = "测试" * 200
    with Archive(":memory:") as ar:
        ar.add_message("s", "user", "测试测试 别的")
        ar.add_message("s", "user", text)
        for route in (None, "scan"):
            short, long_ = sorted(ar.search("测试", route=route), key=lambda h: h.message_id)
            assert (short.highlight, short.span) == ((0, 4), (0, 4)), route
            assert long_.span == (0, 400) and long_.highlight == (0, len(long_.snippet) - len(ELLIPSIS)), route
            assert long_.snippet[slice(*long_.highlight)] == text[:long_.highlight[1]]
