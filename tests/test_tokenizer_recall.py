"""Recall oracle: the cjk_unicode61 index finds exactly the rows that contain a CJK string.

For generated documents mixing Han, kana (half-width katakana and voiced marks
included), Hangul, Bopomofo, CJK punctuation and Latin glued to CJK, every CJK
substring of 1-8 characters (sampled when there are too many) is queried the
way the product queries it -- a phrase ``"..."`` for two or more characters, a
prefix ``"X"*`` for one -- and the rows FTS5 returns must be exactly the rows
whose folded text contains the string (``cjk_tokenizer.fold`` then Python
``in``, i.e. what ``instr()`` finds after the same folding).  No miss, no false
hit; in particular no match across punctuation ("AB。BC" is not "ABC").
"""
from __future__ import annotations

import random

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cjk_tokenizer
from cjk_tokenizer import fold, is_cjk

# Small alphabets, so that bigrams repeat across rows and near-misses abound.
HAN = list("大别山中文日本語東京国人々〆〇豈") + ["\U00020000", "\U0002a700", "\U00030000"]
HIRAGANA = list("あいうかがのをはぱゝゞー")
KATAKANA = list("アイカガタナヴーヵㇰヽ")
HALFWIDTH_KATAKANA = ["ｶ", "ﾀ", "ﾅ", "ｱ", "ｲ", "ｰ", "ｶﾞ", "ﾊﾟ", "ｳﾞ", "ﾞ"]  # ﾞ alone: a lone voiced mark
VOICED = ["カ\u3099", "は\u309a", "ア\u3099"]  # combining marks: カ゛->ガ, は゜->ぱ, ア゛ stays two
HANGUL = list("한국어가나ㄱㅏ가") + ["ﾡ", "ￂ"]  # half-width Hangul too
BOPOMOFO = list("ㄅㄆㄇ")
CJK_POOLS = [HAN, HIRAGANA, KATAKANA, HALFWIDTH_KATAKANA, VOICED, HANGUL, BOPOMOFO]

SEPARATORS = ["。", "、", "「", "」", "『", "』", "【", "】", "・", "！", "？", "，", "　", " ", "\n",
              "｡", "｢", "､", "･", "：", "（", "）", "〜", "…", ".", ", "]
LATIN = ["abc", "hello", "youer", "API", "x1", "café", "Ｈｅｌｌｏ", "ＡＢ１２", "ｈｅｌｌｏ１２３", "123", "e2e"]


def make_run(rng: random.Random, length: int) -> str:
    if rng.random() < 0.6:  # mostly one script per run, sometimes mixed
        pool = rng.choice(CJK_POOLS)
        return "".join(rng.choice(pool) for _ in range(length))
    return "".join(rng.choice(rng.choice(CJK_POOLS)) for _ in range(length))


def make_doc(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 7)):
        parts.append(make_run(rng, rng.randint(1, 9)))
        r = rng.random()
        if r < 0.45:  # punctuation / space between runs: the AB。BC trap
            parts.append("".join(rng.choice(SEPARATORS) for _ in range(rng.randint(1, 2))))
            if rng.random() < 0.4 and parts[-2]:
                # repeat the last character after the break, so "…AB。BC…" appears
                parts.append(parts[-2][-1])
        elif r < 0.75:  # Latin glued to CJK
            parts.append(rng.choice(LATIN))
        elif r < 0.85:
            parts.append(" " + rng.choice(LATIN) + " ")
        # else: nothing, the next run continues this one
    return "".join(parts)


def cjk_runs(folded: str) -> list[str]:
    return [s for cjk, s in cjk_tokenizer.split_cjk(folded) if cjk]


def match_query(q: str) -> str:
    assert '"' not in q
    return f'"{q}"*' if len(q) == 1 else f'"{q}"'


def index_rows(conn, table: str, q: str) -> set[int]:
    return {r[0] for r in conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (match_query(q),))}


def build(conn, docs, table="t", options=""):
    conn.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(body, tokenize='cjk_unicode61'{options})")
    with conn:
        for i, d in enumerate(docs, 1):
            conn.execute(f"INSERT INTO {table}(rowid, body) VALUES (?, ?)", (i, d))
    conn.execute(f"INSERT INTO {table}({table}) VALUES ('integrity-check')")


def queries_for(docs, rng: random.Random, limit: int) -> list[str]:
    subs, cross = set(), set()
    for d in docs:
        folded = fold(d)
        runs = cjk_runs(folded)
        for run in runs:
            for i in range(len(run)):
                for n in range(1, 9):
                    if i + n <= len(run):
                        subs.add(run[i:i + n])
        # strings glued across a break between two runs: mostly absent, must not be found
        for a, b in zip(runs, runs[1:]):
            for k in (1, 2):
                cross.add(a[-k:] + b[:2])
                if a[-1] == b[0]:
                    cross.add(a[-k:] + b[1:3])  # "AB" + "C" from "AB。BC"
    subs = sorted(subs)
    if len(subs) > limit:
        subs = rng.sample(subs, limit)
    return subs + sorted(cross - set(subs))


def check_recall(conn, docs, queries, table="t"):
    folded = [fold(d) for d in docs]
    misses, false_hits = [], []
    for q in queries:
        fq = fold(q)  # a query is folded too (a synthesized "タ" + "゙ヴ" reads as "ダヴ")
        want = {i for i, f in enumerate(folded, 1) if fq in f}
        got = index_rows(conn, table, q)
        if want - got:
            misses.append((q, sorted(want - got)[:5]))
        if got - want:
            false_hits.append((q, sorted(got - want)[:5]))
    assert not misses, f"{len(misses)} queries missed rows, e.g. {misses[:5]} in {[docs[r - 1] for r in misses[0][1][:2]]}"
    assert not false_hits, (f"{len(false_hits)} queries found rows that do not contain them, e.g. "
                            f"{false_hits[:5]} in {[docs[r - 1] for r in false_hits[0][1][:2]]}")


@pytest.mark.parametrize("options", ["", ", prefix='1'", ", prefix='1 2'"], ids=["plain", "prefix1", "prefix12"])
def test_recall_oracle_on_generated_corpus(conn, options):
    rng = random.Random(20240611)
    docs = [make_doc(rng) for _ in range(300)]
    build(conn, docs, options=options)
    queries = queries_for(docs, rng, limit=2500)
    assert len(queries) > 1500
    # the corpus really exercises the traps it is meant to
    folded = [fold(d) for d in docs]
    assert any("ｶ" in d for d in docs) and any("ﾞ" in d for d in docs)
    assert any("\u3099" in d for d in docs)
    assert sum(1 for q in queries if not any(q in f for f in folded)) > 50  # absent strings are queried too
    assert sum(1 for q in queries if len(q) == 1) > 30
    assert sum(1 for q in queries if len(q) >= 6) > 100
    check_recall(conn, docs, queries)


def test_every_document_matches_the_phrase_of_its_own_text(conn):
    rng = random.Random(7)
    docs = [make_doc(rng) for _ in range(150)]
    build(conn, docs)
    for i, d in enumerate(docs, 1):
        phrase = '"' + d.replace('"', '""') + '"'
        rows = {r[0] for r in conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (phrase,))}
        assert i in rows, d


# A generated corpus per example: small, so hypothesis can shrink a failure to a
# minimal pair of documents.
cjk_char = st.one_of(*(st.sampled_from(p) for p in CJK_POOLS))
doc_strategy = st.lists(
    st.one_of(
        st.lists(cjk_char, min_size=1, max_size=9).map("".join),
        st.sampled_from(SEPARATORS),
        st.sampled_from(LATIN),
    ),
    min_size=1,
    max_size=10,
).map("".join)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(docs=st.lists(doc_strategy, min_size=1, max_size=6), seed=st.integers(0, 2**16))
def test_recall_oracle_hypothesis(docs, seed):
    conn = apsw.Connection(":memory:")
    try:
        cjk_tokenizer.load(conn)
        build(conn, docs)
        check_recall(conn, docs, queries_for(docs, random.Random(seed), limit=300))
    finally:
        conn.close()


# ---- explicit cases -------------------------------------------------------------

def _rows(conn, query):
    return sorted(r[0] for r in conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (query,)))


def test_no_match_across_punctuation(conn):
    docs = ["甲乙。乙丙", "甲乙丙", "甲乙、乙丙", "甲乙 乙丙", "甲乙「乙丙」", "甲乙\n乙丙", "甲乙abc乙丙",
            "甲乙｡乙丙", "甲乙・乙丙", "甲乙\u3000乙丙", "カタ。タナ", "カタナ"]
    build(conn, docs)
    assert _rows(conn, '"甲乙丙"') == [2]
    assert _rows(conn, '"カタナ"') == [12]
    assert _rows(conn, '"乙乙"') == []
    assert _rows(conn, '"乙丙"') == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    assert _rows(conn, '"乙"*') == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    assert _rows(conn, '"丙"*') == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]  # run-final unigrams
    assert _rows(conn, '"タ"*') == [11, 12]


def test_half_width_and_full_width_forms_are_equivalent(conn):
    docs = ["ｶﾀｶﾅ", "カタカナ", "Ｈｅｌｌｏ１２３", "hello123", "ｶﾞｲﾄﾞ", "ガイド", "カ\u3099イト\u3099", "HELLO123 world"]
    build(conn, docs)
    for q in ["ｶﾀｶﾅ", "カタカナ", "ﾀｶ", "タカ"]:
        assert _rows(conn, f'"{q}"') == [1, 2], q
    for q in ["Ｈｅｌｌｏ１２３", "hello123", "ｈｅｌｌｏ１２３", "HELLO123"]:
        assert _rows(conn, f'"{q}"') == [3, 4, 8], q
    assert _rows(conn, "ｈｅｌ*") == [3, 4, 8]
    for q in ["ｶﾞｲﾄﾞ", "ガイド", "カ\u3099イト\u3099"]:
        assert _rows(conn, f'"{q}"') == [5, 6, 7], q
    assert _rows(conn, '"ｶ"*') == [1, 2]  # ｶﾞ is ガ, not カ
    assert _rows(conn, '"ｶﾞ"*') == [5, 6, 7]
    assert _rows(conn, '"ﾄﾞ"*') == [5, 6, 7]  # the run-final unigram, composed


# ---- the token streams behind it ---------------------------------------------------

def toks(text, mode="document", args=()):
    return [(t, s, e, c) for t, s, e, c in cjk_tokenizer.tokenize(text, mode=mode, args=args)]


def test_bigrams_and_run_final_unigram():
    assert toks("大别山") == [("大别", 0, 6, False), ("别山", 3, 9, False), ("山", 6, 9, True)]
    assert toks("大别山", mode="query") == [("大别", 0, 6, False), ("别山", 3, 9, False)]
    assert toks("大别山", mode="prefix") == [("大别", 0, 6, False), ("别山", 3, 9, False)]
    assert toks("大别山", mode="aux") == toks("大别山")
    assert toks("山") == [("山", 0, 3, False)] == toks("山", mode="query")


def test_latin_glued_to_cjk_is_split_off():
    assert [t for t, *_ in toks("修改youer服务", mode="query")] == ["修改", "youer", "服务"]
    assert [t for t, *_ in toks("修改youer服务")] == ["修改", "改", "youer", "服务", "务"]


def test_cjk_punctuation_never_inside_a_token():
    text = "、。，「」『』【】・！？〜（）｛｝［］：；＂＇＃"
    for mode in ("document", "query"):
        tokens = toks("日本" + text + "語" + text + text.join("東京大阪") + text, mode=mode)
        for t, s, e, c in tokens:
            assert not any(ch in text for ch in t), (mode, t)
        assert [t for t, *_ in tokens if t != "\x1e" and not _ascii_punct_only(t)] == \
               (["日本", "本", "語", "東", "京", "大", "阪"] if mode == "document" else ["日本", "語", "東", "京", "大", "阪"])


def _ascii_punct_only(t):
    return all(not ch.isalnum() for ch in t)


def test_gap_token_separates_runs_in_every_mode():
    for mode in ("document", "query", "prefix", "aux"):
        got = [t for t, s, e, colocated in toks("甲乙。乙丙", mode=mode) if not colocated]
        assert got == ["甲乙", "\x1e", "乙丙"], mode
    # runs that do not share the character at the break cannot form a false
    # phrase, so they get no gap (the index stays smaller)
    assert "\x1e" not in [t for t, *_ in toks("甲乙。丙丁")]
    assert "\x1e" in [t for t, *_ in toks("甲乙，「乙」")]
    # no gap where a Latin token already takes the position between the runs
    assert "\x1e" not in [t for t, *_ in toks("甲乙abc乙丙")]


@settings(max_examples=60, deadline=None)
@given(doc=doc_strategy)
def test_offsets_point_at_the_original_bytes(doc):
    data = doc.encode("utf-8")
    tokens = toks(doc)
    for t, s, e, c in tokens:
        assert 0 <= s <= e <= len(data)
        piece = data[s:e].decode("utf-8")  # on character boundaries
        if t == "\x1e":
            assert not any(is_cjk(ch) for ch in piece)
        elif any(is_cjk(ch) for ch in t):
            # a bigram covers exactly its two (folded) characters; a colocated
            # unigram reported by tokenize() covers its own character
            assert fold(piece) == t, (t, piece)
    # every CJK character of the folded text is the start of a bigram or a unigram
    starts = {t[0] for t, *_ in tokens if t != "\x1e" and is_cjk(t[0])}
    assert {ch for ch in fold(doc) if is_cjk(ch)} <= starts
