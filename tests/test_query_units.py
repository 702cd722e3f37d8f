"""The unit stream (units.py) is what the cjk index holds, and the raw
spellings (spellings.py) are what the C folding says they are.

The Python oracle, the verification step of every inexact route, matched_in
and snippets all stand on units.py; these tests check it against the real
C tokenizer rather than against a second Python idea of it."""
from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

import cjk_tokenizer
from cjk_tokenizer import _native, spellings
from cjk_tokenizer.units import _MERGING, CJK, WORD, Analysis, _fold_map, analyze

ALPHABET = list("大别山修改服务器々〆ー・カタカナガがかｶﾀﾅﾞﾟ\u3099\u309a゛서버ﾡﾢＡｂ１ａbcXYZ019éüß\u0301"
                "。、，.,-_:'\" \n\t😀привет\x00\ufffd𠀀ㄅ") + ["Ｈｅｌｌｏ", "youer", "ｶﾞ", "カ\u3099"]


def index_units(text: str) -> list[tuple[str, str]]:
    """(kind, text) units as the cjk_unicode61 tokenizer's own token stream shows them."""
    out: list[tuple[str, str]] = []
    prev_end = None
    for token, start, end, colocated in cjk_tokenizer.tokenize(text, mode="document", args=("remove_diacritics", "2")):
        if colocated:
            continue
        if token == "\x1e":  # gap between two CJK runs
            prev_end = None
            continue
        if _native.is_cjk(token[0]):
            if out and out[-1][0] == CJK and prev_end is not None and start < prev_end:
                out[-1] = (CJK, out[-1][1] + token[1:])  # overlapping bigrams: same run
            else:
                out.append((CJK, token))
            prev_end = end
        else:
            out.append((WORD, token))
            prev_end = None
    return out


def units_of(text: str) -> list[tuple[str, str]]:
    return [(u.kind, u.text) for u in Analysis(text).units]


def test_units_match_the_tokenizer_on_hand_picked_text():
    for text in ["请修改youer服务器。AB，BC", "大别山 hello 大别山", "Ｈｅｌｌｏ ｶﾀｶﾅ カ\u3099 café", "AB。BC",
                 "foo_bar file.py:42", "e\u0301x", "大\n别", "", "。、", "々ー", "𠀀𠀁x"]:
        assert units_of(text) == index_units(text), text


@settings(max_examples=int(os.environ.get("CJK_PROPERTY_EXAMPLES", "300")), deadline=None)
@given(st.lists(st.sampled_from(ALPHABET), max_size=40).map("".join))
def test_units_match_the_tokenizer(text):
    assert units_of(text) == index_units(text)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=40))
def test_units_match_the_tokenizer_on_any_text(text):
    if any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        text = text.encode("utf-8", "replace").decode("utf-8")  # what SQLite could store
    assert units_of(text) == index_units(text)


def test_raw_spans_point_at_the_original_characters():
    text = "Ｈｅｌｌｏ ｶﾞｲﾄﾞ カ\u3099タ café"
    an = analyze(text)
    got = []
    for s, e in zip(an.starts, an.ends):
        a, b = an.raw_span(s, e)
        got.append(text[a:b])
    assert got == ["Ｈｅｌｌｏ", "ｶﾞｲﾄﾞ", "カ\u3099タ", "café"]


def _walk_map(raw: str) -> list[int]:
    """folded -> raw offsets by asking the C folding about every character (what _fold_map shortens)."""
    out, i = [], 0
    while i < len(raw):
        out.append(i)
        j = i + 1
        while j < len(raw) and len(_native.fold(raw[i:j + 1])) == 1:
            j += 1
        i = j
    return out + [len(raw)]


MERGE_POOL = list("カｶかハﾊ辻村a1。 ウｳゝヽワ大") + ["\u3099", "\u309a", "\uff9e", "\uff9f", "\ufe00", "\ufe0f",
                                                 "\U000e0100", "\U000e01ef", "\u309b", "\ufe10", "\U000e0041"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(MERGE_POOL), max_size=16).map("".join))
def test_fold_map_walks_only_where_a_character_may_merge(raw):
    assert _fold_map(raw) == _walk_map(raw)
    an = Analysis(raw)
    assert len(an.folded) == len(_fold_map(raw)) - 1


def test_a_long_run_of_selectors_costs_the_walk_a_few_questions(monkeypatch):
    from cjk_tokenizer import units

    asked = []
    monkeypatch.setattr(units, "_fold1", lambda s: asked.append(len(s)) or _native.fold(s))
    raw = "辻" + "\ufe00" * 5000 + "村カ\u3099" + "\U000e0100" * 5000 + "了"
    assert _fold_map(raw) == [0, 5001, 5002, 10004, 10005]
    assert len(asked) <= 10 and sum(asked) <= 40, asked[:20]


def test_no_character_outside_the_merging_set_merges_into_the_one_before():
    # every base that absorbs a following character: voiced-mark bases (full and
    # half width, hiragana, iteration marks) and a Han letter (selectors)
    bases = "カｶかハﾊウｳゝヽワ辻"
    cps = [c for c in range(0x20, 0x10000) if not 0xD800 <= c < 0xE000] + list(range(0xE0100, 0xE01F0))
    pairs = [b + chr(c) for c in cps for b in bases]
    folded = _native.fold("\n".join(pairs)).split("\n")
    assert len(folded) == len(pairs)
    merging = {ord(p[1]) for p, f in zip(pairs, folded) if len(f) == 1}
    # and whatever folds to a voiced mark, the one thing composition merges, after any base
    alone = _native.fold("\n".join(map(chr, cps))).split("\n")
    merging = sorted(merging | {c for c, f in zip(cps, alone) if f in ("\u3099", "\u309a")})
    assert merging and all(_MERGING.fullmatch(chr(c)) for c in merging), [hex(c) for c in merging
                                                                        if not _MERGING.fullmatch(chr(c))]


def test_spellings_come_from_the_c_folding():
    assert set(spellings.preimages("ガ")) >= {"ガ", "ｶﾞ", "カ\u3099"}
    assert set(spellings.preimages("a")) == {"a", "ａ"}
    for ch in "大别서":  # written one way only, and never merged with a mark
        assert spellings.is_stable(ch)
    assert not spellings.is_stable("か")  # か + ゙ folds to が
    assert not spellings.is_stable("カ")  # ｶ
    assert not spellings.is_stable("a")  # ａ
    for ch, raws in [("ガ", spellings.preimages("ガ")), ("a", spellings.preimages("a"))]:
        assert all(_native.fold(r) == ch for r in raws)
    assert spellings.count("youer") == 32 and len(spellings.spellings("youer", 32)) == 32
    assert spellings.spellings("youer", 31) is None
    window, spelled = spellings.best_window("データベース", 3, 32)
    assert len(window) >= 3 and window in "データベース"
    assert all(_native.fold(s) == window for s in spelled) and len(set(spelled)) == len(spelled)
