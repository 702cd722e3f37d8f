"""The one snippet rule (csrc/cjk_snippet.h), through the helper every Python
route calls (snippet.choose -> _native.snippet_window)."""
from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cjk_tokenizer import _native, snippet
from cjk_tokenizer.snippet import ELLIPSIS, choose, make_snippet


def _joins_before(cp: int) -> bool:
    """Letters that are one character with the one before them: the half-width voiced sound
    marks (ｶﾞ is ガ to the tokenizer) and Hangul vowel and final jamo (a syllable in NFD)."""
    return cp in (0xFF9E, 0xFF9F) or 0x1160 <= cp <= 0x11FF or 0xD7B0 <= cp <= 0xD7FF


def test_the_mark_table_is_unicode_general_category_m():
    # the C table is Unicode 14.0's; a newer Python only adds marks
    exact = unicodedata.unidata_version == "14.0.0"
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        is_mark = unicodedata.category(ch).startswith("M")
        c_says = _native.is_extender(ch)
        if cp == 0x200D or 0x1F3FB <= cp <= 0x1F3FF or 0xE0020 <= cp <= 0xE007F or _joins_before(cp):
            assert c_says, hex(cp)  # joiner, skin tones, tags, voicing, jamo: extenders though not marks
        elif exact or not is_mark:
            assert c_says == is_mark, hex(cp)


def test_a_dot_ends_a_sentence_only_before_white_space():
    text = "Edit settings.yaml and rerun 部署 now. " + "More filler words follow here. " * 10
    out, (hs, he) = make_snippet(text, (29, 31), 60)
    assert out.startswith("Edit settings.yaml and rerun 部署 now.") and out[hs:he] == "部署"
    out, _ = make_snippet(text, (29, 31), 40)
    assert not out.startswith(ELLIPSIS + "yaml")
    # CJK sentence ends always count
    text = "前面的句子很长很长很长很长很长很长很长很长。部署失败了，请检查。" + "后文" * 100
    s = text.index("部署")
    assert make_snippet(text, (s, s + 2), 40) == (text[:32] + ELLIPSIS, (22, 24))
    # "!=" and "?." inside code are no sentence ends; "; " is one
    text = "x = a!=b; y = c?.d " * 30 + "target" + " z" * 100
    s = text.index("target")
    out, (hs, he) = make_snippet(text, (s, s + 6), 40)
    assert out.startswith(ELLIPSIS + "y = c?.d target") and out[hs:he] == "target"


def test_the_whole_match_is_kept_when_it_fits_and_its_start_when_not():
    text = "a" * 50 + " " + "b" * 200 + " " + "c" * 50
    out = choose(text, [(51, 251, 0)], 30)
    assert out.text == ELLIPSIS + "b" * 28 + ELLIPSIS and out.highlight == (1, 29) and out.span == (51, 251)
    out = choose(text, [(51, 79, 0)], 30)
    assert out.text[out.highlight[0]:out.highlight[1]] == "b" * 28


def _matches(text, *words):
    out = []
    for term, word in enumerate(words):
        i = text.find(word)
        while i >= 0:
            out.append((i, i + len(word), term))
            i = text.find(word, i + 1)
    return out


def test_a_match_that_fits_is_never_cut_for_one_beside_it():
    # from "message" at 0 the stretch would cut 别山; from the second "message" both fit
    text = "message. message and some words go here 大别山. tail tail tail tail tail"
    for budget in (42, 44, 60):
        out = choose(text, _matches(text, "别山", "message"), budget)
        assert "大别山." in out.text and "message and" in out.text, (budget, out.text)
    text = "  大别山管理管理settings.yaml\u30001234567890。 a!=b管理1234567890 message\nword\u2028. . "
    out = choose(text, _matches(text, "管理", "word"), 57)
    assert "word" in out.text and not out.text.rstrip(ELLIPSIS)[-1].isspace(), out.text
    # when no stretch holds both whole, the one shown is shown whole
    text = "alpha。message 1234567890 abcdefgh 大别山。\n" + "tail " * 10
    out = choose(text, _matches(text, "别山", "message"), 32)
    assert out.text[out.highlight[0]:out.highlight[1]] == "message" and "大别" not in out.text.replace("大别山", "")


def test_a_word_is_not_cut_at_either_edge_when_a_space_is_out_of_reach():
    text = "message。message管理 foo.py项目 管理。大别山。\n" + "tail " * 10
    out = choose(text, _matches(text, "别山", "message"), 32)
    assert out.text.startswith(ELLIPSIS + "。message管理") and out.text[slice(*out.highlight)] == "message"
    text = "alpha。message 1234567890 abcdefgh 大别山。\n" + "tail " * 10
    out = choose(text, _matches(text, "别山", "message"), 38)
    assert out.text.startswith(ELLIPSIS + "。message 1234567890")
    # nor a highlight beside the focus: 管理 shows whole or not at all
    text = "\n \na!=ba!=b项目a!=bthe大别山管理项目\n管理  ，大别山，大别山\n  the"
    out = choose(text, _matches(text, "管理") + [(len(text) - 3, len(text), 1)], 24)
    shown = out.text.strip(ELLIPSIS)
    assert shown.count("管") == shown.count("管理") and shown.count("理") == shown.count("管理"), out.text
    # a match inside one long word: the word is cut, as nothing else fits the budget
    text = "x" * 500 + "NEEDLE" + "y" * 500
    out = choose(text, [(500, 506, 0)], 40)
    assert len(out.text) == 40 and out.text[slice(*out.highlight)] == "NEEDLE"


def test_the_stretch_with_most_terms_then_most_matches_is_shown():
    text = "alpha once. " + "filler words here. " * 30 + "beta and alpha together. " + "end words. " * 30
    a1 = (0, 5, 0)
    a2 = (text.index("alpha together"), text.index("alpha together") + 5, 0)
    b = (text.index("beta"), text.index("beta") + 4, 1)
    out = choose(text, [a1, a2, b], 60)
    assert "beta and alpha together." in out.text and out.span == (b[0], b[1])
    assert out.text[out.highlight[0]:out.highlight[1]] == "beta"


@pytest.mark.parametrize("text", [
    "e\u0301" * 200,
    "👨\u200d👩\u200d👧" * 100,
    "👍🏽" * 150,
    "क्षि" * 100,
])
def test_a_character_is_never_split_from_what_extends_it(text):
    for s in range(0, len(text) - 2, 7):
        out = choose(text, [(s, s + 1, 0)], 23)
        start, end = out.window
        for edge in (start, end):
            if 0 < edge < len(text) and edge not in (s, s + 1):
                assert not _native.is_extender(text[edge]) and text[edge - 1] != "\u200d", (s, edge)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab 。.\n\u0301\u200d👍🏽部署")), max_size=300),
       st.integers(0, 300), st.integers(1, 12), st.integers(20, 80))
def test_window_properties(text, start, length, limit):
    start = min(start, len(text))
    end = min(len(text), start + length)
    out = choose(text, [(start, end, 0)], limit)
    ws, we = out.window
    assert len(out.text) <= limit
    assert out.text.strip(ELLIPSIS) == text[ws:we].strip(ELLIPSIS) or text[ws:we] in out.text
    if start < end <= start + limit - 2:
        assert ws <= start and end <= we
    if ws > 0 and text[:ws].strip():
        assert out.text.startswith(ELLIPSIS)
    if text[we:].strip():
        assert out.text.endswith(ELLIPSIS)


def test_bad_matches_are_a_clear_error():
    with pytest.raises(ValueError, match="spans of the text"):
        _native.snippet_window("abc", [(2, 9, 0)], 10)


def test_without_the_compiled_module_a_centred_cut(monkeypatch):
    monkeypatch.setattr(_native, "available", lambda: False)
    text = "x" * 300 + "needle" + "\u0301" + "y" * 300
    s = text.index("needle")
    out = snippet.choose(text, [(s, s + 6, 0)], 40)
    assert len(out.text) <= 40 and out.text[out.highlight[0]:out.highlight[1]] == "needle"
    assert out.text.startswith(ELLIPSIS) and out.text.endswith(ELLIPSIS)
    assert snippet.choose("short", [], 40).text == "short"


ZWJ = "\u200d"


@pytest.mark.parametrize("text, matches, budget, window", [
    # the focus ends where a joiner ties it to the next highlight: the window stops at the focus
    # rather than show that highlight in part (4) or end just after the joiner (3)
    ("项目" + ZWJ + "项目", [(0, 2, 0), (3, 5, 0)], 4, (0, 2)),
    ("项目" + ZWJ + "项目", [(0, 2, 0), (3, 5, 0)], 3, (0, 2)),
    # a joiner after white space ties nothing to it: no leading space to keep it company
    ("前文前文前文 " + ZWJ + "项目 后文后文后文", [(8, 10, 0)], 4, (7, 10)),
])
def test_a_joiner_beside_the_focus_neither_cuts_a_highlight_nor_leaves_space_at_an_edge(
        text, matches, budget, window):
    assert choose(text, matches, budget + 2).window == window


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(["项", "目", " ", ZWJ, "\u0301", "a"]), min_size=1, max_size=60),
       st.lists(st.tuples(st.integers(0, 59), st.integers(1, 3)), min_size=1, max_size=6),
       st.integers(4, 20))
def test_no_highlight_shows_in_part_and_no_edge_is_white_space(text, spans, budget):
    # matches no longer than a third of the budget: the focus always shows whole, so every other
    # highlight is shown whole or not at all
    spans = sorted({(min(s, len(text) - 1), min(s + n, len(text))) for s, n in spans if n <= budget // 3})
    if not spans:
        return
    merged = []
    for s, e in spans:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    if any(e - s > budget // 3 for s, e in merged):
        return
    ws, we = choose(text, [(s, e, 0) for s, e in spans], budget + 2).window
    for s, e in merged:
        assert not (s < ws < e or s < we < e), (text, merged, (ws, we))
    def matched(i):
        return any(s <= i < e for s, e in merged)

    if ws < we:  # white space at an edge is trimmed, unless it is matched
        assert matched(ws) or not text[ws].isspace(), (text, merged, (ws, we))
        assert matched(we - 1) or not text[we - 1].isspace(), (text, merged, (ws, we))


def test_a_match_outside_the_trimmed_text_keeps_the_snippet_in_budget():
    # the text trimmed of white space fit the budget, so the whole text was shown, matched space and all
    out = choose("a aa   ", [(6, 7, 0)], 6)
    assert len(out.text) <= 6 and out.window[0] <= 6 and out.window[1] == 7, out


@pytest.mark.parametrize("filler", ["การติดตั้งระบบล้มเหลวเพราะเซิร์ฟเวอร์ไม่ตอบสนอง" * 20, "🎉" * 900,
                                    "部署失败因为服务器没有响应" * 70], ids=["thai", "emoji", "chinese"])
def test_text_without_spaces_around_a_match_is_shown_not_dropped(filler):
    # Thai and emoji were taken for one long word of a spaced script, so the snippet showed the match alone
    text = filler + " needle " + filler
    at = text.index("needle")
    out = choose(text, [(at, at + 6, 0)], 80)
    assert len(out.text) >= 60 and "needle" in out.text, out.text


@pytest.mark.parametrize("unit", ["ｶﾞ", "ﾊﾟ", unicodedata.normalize("NFD", "한"), unicodedata.normalize("NFD", "각")])
def test_a_window_never_splits_half_width_voicing_or_an_nfd_hangul_syllable(unit, tmp_path):
    w = len(unit)
    for k in range(2 * w):
        text = unit * 40 + "x" * k + "目標" + unit * 40
        s = text.index("目標")
        for budget in (20, 21, 31, 40):
            a, b, *_ = _native.snippet_window(text, [(s, s + 2, 0)], budget)
            assert not _joins_before(ord(text[a])), (unit, k, budget, a)
            assert b == len(text) or not _joins_before(ord(text[b])), (unit, k, budget, b)
    # the same through cjk_match on the cjk route
    from cjk_tokenizer import Archive

    with Archive(tmp_path / "a.db") as ar:
        ar.add_message("s", "user", unit * 103 + "目標" + unit * 103)
        hit, = ar.search("目標")
        body = hit.snippet.strip(ELLIPSIS)
        assert hit.route == "cjk" and not _joins_before(ord(body[0])) and body.endswith(unit), hit.snippet
