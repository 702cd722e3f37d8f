"""Every accepted input is bounded in time and memory: planning, the analysis
cache, and the per-row checks of the routes that read rows in Python."""
from __future__ import annotations

import gc
import os
import random
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cjk_tokenizer.evaluate as evaluate_mod
from cjk_tokenizer import spellings, units
from cjk_tokenizer.evaluate import first_match, term_matches
from cjk_tokenizer.query import MAX_QUERY_CHARS, parse, positive_terms
from cjk_tokenizer.search import explain

KATAKANA = "データベースサーバーのバックアップをカタカナでテストします"


def _reference_best_window(text, min_len, cap):
    """The definition, by brute force: longest window within cap, then fewest spellings, then earliest."""
    for size in range(len(text), min_len - 1, -1):
        found = [(spellings.count(text[i:i + size]), i) for i in range(len(text) - size + 1)]
        found = [f for f in found if f[0] <= cap]
        if found:
            k, i = min(found)
            return text[i:i + size]
    return None


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="カガｶﾞタaＡ大别ー\u3099x", max_size=14), st.integers(1, 4), st.integers(1, 40))
def test_best_window_is_the_longest_window_within_the_cap(text, min_len, cap):
    got = spellings.best_window(text, min_len, cap)
    want = _reference_best_window(text, min_len, cap)
    assert (got and got[0]) == want
    if got:
        assert sorted(got[1]) == sorted(spellings.spellings(want, cap))


def test_a_longest_katakana_query_plans_in_linear_work(monkeypatch):
    """Katakana has several spellings per letter (half-width, voiced marks), so
    without the cjk index the trigram route looks for the best window of the
    run: that search once took cubic time (seconds at 400 letters, hours at
    the query limit).  Counted, not timed: spelling look-ups per letter."""
    spellings.preimages("カ")  # the folding tables, built once per process
    calls = 0
    real = spellings.preimages

    def counting(ch, variants=False):
        nonlocal calls
        calls += 1
        if calls > budget:
            raise AssertionError(f"planning asked for spellings more than {budget} times")
        return real(ch, variants)

    monkeypatch.setattr(spellings, "preimages", counting)
    for n in (400, MAX_QUERY_CHARS):
        query = (KATAKANA * (n // len(KATAKANA) + 1))[:n]
        for live in ({"unicode61", "trigram"}, {"unicode61"}):
            calls, budget = 0, 20 * n
            out = explain(query, live)
            assert out["input"] == query


def test_the_analysis_cache_is_bounded_by_size(monkeypatch):
    budget = 100_000
    monkeypatch.setattr(units, "_cache", units._SizedCache(budget))
    rng = random.Random(7)
    words = ["部署", "失败", "rollback", "server", "データ", "café", "的", "hello", "x1"]
    texts = [" ".join(rng.choice(words) for _ in range(1500))[:10_000] + f" {i}" for i in range(60)]
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for t in texts:  # 600,000 characters pass through
            units.analyze(t)
        assert units.analyze(texts[-1]) is units.analyze(texts[-1])  # recent ones are kept
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert units._cache.size <= budget
    # a few dozen bytes per cached character, not one analysis per text seen
    assert held < 64 * budget, f"{held / 2**20:.1f} MiB held by the cache"
    assert units.CACHE_CHARS * 64 <= 128 * 2**20  # the default keeps a long-running process small


@pytest.mark.parametrize("short", [False, True], ids=["long-texts", "short-texts"])
def test_the_folded_texts_kept_for_the_prefilter_are_bounded_by_size(monkeypatch, short):
    # short texts: each entry's own objects were not counted, and 600,000 two-character rows
    # held 180 MiB against a budget of a million characters
    budget = 100_000
    monkeypatch.setattr(evaluate_mod, "_fold_cache", units._SizedCache(budget, evaluate_mod._Folded))
    (term,) = positive_terms(parse("zzqx"))  # in no text: every text is folded and refused
    texts = ([chr(0x4E00 + i % 1000) + chr(0x4E00 + i // 1000) for i in range(60_000)] if short else
             [("部署 café rollback データ " * 500)[:10_000] + f" {i}" for i in range(60)])
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        assert not any(term_matches(term, t) for t in texts)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert 0 < evaluate_mod._fold_cache.size <= budget
    assert held < 16 * budget, f"{held / 2**20:.1f} MiB held by the folded texts"


# ---- big rows: read in pieces, same answers ------------------------------------------------

# small alphabets, so that terms of several units occur and cross the cuts
ROW_PIECES = ["大别", "山", "修改", "youer", "服务", "hello", "カタ", "ｶﾅ", "カ\u3099", "x1", " ", "  ", "\n", "。",
              "、", "-", "Café", "\u0301", "\ud800"]
TERMS = ["大别山", "别山", "山", "修改youer服务", "youer", "hello", "cafe", "カタカナ", "ガ", "服务 hello", '"大别山 修改"',
         "hel*", '"修改 youer"', '"山 大别"', "x1 大别", '"hello 大别山"', '"山 修改 youer 服务"', "服务hello",
         '"youer hello x1"']


_filler = st.lists(st.sampled_from(ROW_PIECES), max_size=20).map("".join)


@settings(max_examples=int(os.environ.get("CJK_PROPERTY_EXAMPLES", "400")), deadline=None)
@given(_filler, _filler, st.sampled_from([" ", "\n", " 。 ", "、", "--", "   "]), st.integers(2, 12),
       st.sampled_from(TERMS), st.sampled_from(TERMS))
def test_a_big_row_read_in_pieces_answers_as_a_whole_one(before, after, sep, piece, q1, q2):
    """The piecewise reading of big rows is the same function as the whole-text
    one: here on small texts, with tiny pieces so that terms cross them (the
    text holds the first term with separators between its words)."""
    text = before + q1.strip('"*').replace(" ", sep) + after
    node = parse(f"{q1} OR {q2}")
    terms = positive_terms(node)
    whole = ([term_matches(t, text) for t in terms], first_match(node, text))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(evaluate_mod, "_CACHE_LIMIT", 0)
        mp.setattr(units, "PIECE_CHARS", piece)
        cuts = [p for _, p in units.pieces(text)]
        assert "".join(cuts) == text
        in_pieces = ([term_matches(t, text) for t in terms], first_match(node, text))
    assert in_pieces == whole, cuts


_BIG_ROW_SCRIPT = r"""
import json, os, random, resource, sys, warnings
warnings.simplefilter("ignore")
from cjk_tokenizer import Archive, spellings
path, query, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(3)
words = ["部署", "失败了", "rollback", "server", "データベース", "café", "的", "hello", "x1", "ｶﾀｶﾅ", "log:", "。"]
with Archive(path, extension=False) as ar:
    if not ar.count_messages():
        text = " ".join(rng.choice(words) for _ in range(size // 5)) + " needle 大别山修改 tail"
        ar.add_message("s", "tool", text)
        ar.add_message("s", "user", "small 大别山 hello")
        sys.exit(0)
    spellings.preimages("a")  # the folding tables, built once per process
    ar.search("small")        # warm: this process's SQL functions and tokenizer
    row = ar.get_message(1)["content"]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    hits = ar.search(query, limit=5)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"kib": after - before, "row_bytes": len(row.encode()), "routes": [h.route for h in hits],
                      "ids": [h.message_id for h in hits], "snippet": hits[0].snippet if hits else None}))
"""


@pytest.mark.parametrize("query", ["needle", "大别山修改", '"needle 大别山"'])
def test_a_multi_megabyte_row_costs_memory_near_its_size(tmp_path, query):
    """Checking a big row in Python (routes without the cjk index, matched_in,
    snippets) reads it in pieces: the peak stays near the row's own size
    instead of tens of times it (one Python tuple per word of the row)."""
    import json
    import subprocess
    import sys

    path = str(tmp_path / "a.db")
    run = [sys.executable, "-c", _BIG_ROW_SCRIPT, path, query, str(2_000_000)]
    subprocess.run(run, check=True, timeout=600)
    proc = subprocess.run(run, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["ids"] == [1], out  # found, and only where it is
    assert "needle" in out["snippet"] or "大别山修改" in out["snippet"]
    grown = out["kib"] * 1024
    assert grown < 4 * out["row_bytes"], f"peak grew by {grown / 2**20:.0f} MiB for a {out['row_bytes'] / 2**20:.1f} MiB row"


HUGE = 10**5000  # past the 4,300 digits Python writes as text: no error message may try to


@pytest.fixture(scope="module")
def one_message_archive(tmp_path_factory):
    from cjk_tokenizer import Archive

    ar = Archive(tmp_path_factory.mktemp("huge") / "a.db")
    for i in range(3):
        ar.add_message("s", "user", f"部署 needle {i}")
    yield ar
    ar.close()


@pytest.mark.parametrize("value", [HUGE, -HUGE, 2**63, 2**64], ids=["huge", "-huge", "2^63", "2^64"])
@pytest.mark.parametrize("name", ["limit", "offset", "after", "before", "snippet_chars", "relevance_bound"])
def test_search_names_an_out_of_range_integer_in_one_short_line(one_message_archive, name, value):
    from cjk_tokenizer import QueryError

    with pytest.raises(QueryError, match=name) as exc:
        one_message_archive.search("needle", **{name: value})
    assert "\n" not in str(exc.value) and len(str(exc.value)) < 300


@pytest.mark.parametrize("value", [HUGE, -HUGE], ids=["huge", "-huge"])
@pytest.mark.parametrize("name", ["limit", "offset", "window", "after", "before", "around_message_id"])
def test_session_search_names_an_out_of_range_integer(one_message_archive, name, value):
    args = {"session_id": "s"} if name in ("around_message_id", "window") else {"query": "needle"}
    if name == "window":
        args["around_message_id"] = 1
    err = one_message_archive.session_search(**args, **{name: value})["error"]
    code = "unknown_message" if name == "around_message_id" else "bad_argument"  # an id no message has
    assert err["code"] == code and err["argument"] == name and len(err["message"]) < 300, err


def test_the_agent_tool_reads_a_message_id_of_5000_digits_as_out_of_range(one_message_archive):
    import json

    from cjk_tokenizer.agent_tool import handle_session_search

    out = json.loads(handle_session_search(one_message_archive, '{"session_id": "s", "around_message_id": "%s"}'
                                           % ("1" * 5000)))
    assert out["error"]["argument"] == "around_message_id" and len(out["error"]["message"]) < 300, out


def test_other_arguments_holding_a_huge_integer_are_named_too(one_message_archive):
    from cjk_tokenizer import InputError, QueryError

    ar = one_message_archive
    with pytest.raises(QueryError, match="cursor") as exc:
        ar.search("needle", sort="newest", cursor=HUGE)
    assert len(str(exc.value)) < 300
    with pytest.raises(InputError, match="session_id") as exc:
        ar.add_message(HUGE, "user", "x")
    assert len(str(exc.value)) < 300
    err = ar.session_search(query="needle", exclude_session_ids=[HUGE])["error"]
    assert err["argument"] == "exclude_session_ids" and len(err["message"]) < 300, err


def _nested(depth):
    top = cur = []
    for _ in range(depth):
        cur.append([])
        cur = cur[0]
    return top


def test_arguments_nested_past_what_python_walks_are_a_bad_argument_not_an_internal_error(one_message_archive):
    import json

    from cjk_tokenizer import QueryError
    from cjk_tokenizer.agent_tool import handle_session_search

    ar = one_message_archive
    out = json.loads(handle_session_search(ar, "[" * 5000 + "]" * 5000))
    assert out["error"]["code"] == "bad_json" and "nested too deeply" in out["error"]["message"], out
    for name in ("roles", "exclude_session_ids", "sort", "include_reasoning"):
        out = json.loads(handle_session_search(ar, {"query": "needle", name: _nested(100_000)}))
        assert out["error"]["code"] == "bad_argument" and out["error"]["argument"] == name, out
        assert "nested too deeply" in out["error"]["message"] and len(out["error"]["message"]) < 300
    with pytest.raises(QueryError, match="roles") as exc:
        ar.search("needle", roles=[_nested(100_000)])
    assert len(str(exc.value)) < 300


def test_archive_reads_bind_any_count_of_rows(one_message_archive):
    ar = one_message_archive
    assert [s["id"] for s in ar.sessions(limit=HUGE)] == ["s"] and ar.sessions(offset=HUGE) == []
    assert len(ar.messages_of("s", limit=HUGE)) == 3 and ar.messages_of("s", after_id=HUGE) == []
    for call in (lambda: ar.sessions(limit=-1), lambda: ar.sessions(offset="2"), lambda: ar.messages_of("s", limit=1.5)):
        with pytest.raises(ValueError, match="limit|offset"):
            call()


@pytest.mark.parametrize("name, value", [("busy_timeout", -HUGE), ("busy_timeout", float("nan")),
                                         ("mmap_size", HUGE), ("mmap_size", 2**63)],
                         ids=["busy--huge", "busy-nan", "mmap-huge", "mmap-2^63"])
def test_archive_refuses_an_out_of_range_option_before_making_a_file(tmp_path, name, value):
    from cjk_tokenizer import Archive

    with pytest.raises(ValueError, match=name) as exc:
        Archive(tmp_path / "o.db", **{name: value})
    assert len(str(exc.value)) < 200 and not os.path.exists(tmp_path / "o.db")


# ---- a phrase of CJK runs apart ("大 学") --------------------------------------------

_PIECES = ["大", "学", "中", "大学", " ", "。", "、", "a", "A", "1", "é", "\u200b", "\ufe00", "\u3000", "😀", "ｶﾞ",
           "x y", "\n", "_", "-", "Café", "CAFE\u0301", "ｃａｆé", "caf", "e", "İ", "ß", "zzqx", "ＺＺqx", "Z\u0301Z"]


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12),
       st.sampled_from(['"大 学"', '"中 大 学"', '"大学 中"', '"大 学a"', '"学 大"', '"ガ 大"', "cafe", "café*",
                        "zzqx", "大cafe", '"cafe zzqx"', "i", "ßa", "caf*", "ZZ", "x*", '"y 大"']))
def test_the_may_match_filter_only_skips_rows_that_cannot_match(pieces, query):
    """_may_match is a necessary condition: with it or without it, every text matches alike."""
    text = "".join(pieces)
    term = parse(query)
    with_filter = term_matches(term, text)
    saved = evaluate_mod._may_match
    evaluate_mod._may_match = lambda term, text: True
    try:
        assert term_matches(term, text) == with_filter, (query, text)
    finally:
        evaluate_mod._may_match = saved


def test_a_phrase_of_may_match_tokenizes_only_rows_that_can_match(tmp_path, monkeypatch):
    """"大 学" is looked up as 大 then 学 in the cjk index, which 大学 matches too: those
    rows must be refused before they are tokenized, or the search costs a tokenizing of
    every message holding 大学."""
    from cjk_tokenizer import Archive

    with Archive(tmp_path / "p.db") as ar:
        ar.add_messages("s", [{"role": "user", "content": f"我在大学里学习 {i} 年" * 20} for i in range(300)])
        want = ar.add_message("s", "user", "他说大 学习很重要")
        calls = []
        real = evaluate_mod.analyze
        monkeypatch.setattr(evaluate_mod, "analyze", lambda *a, **k: calls.append(1) or real(*a, **k))
        for sort in ("newest", "relevance"):
            assert [h.message_id for h in ar.search('"大 学"', sort=sort)] == [want]
        assert len(calls) <= 20, len(calls)  # the one row that matches, a few times over


def test_a_rare_word_without_the_extension_tokenizes_only_rows_that_hold_it(tmp_path, monkeypatch):
    """Without the extension (and without trigram) a word may be glued to CJK text in any row
    with non-ASCII text, which the unicode61 index cannot see: those rows are read, but only a
    row that holds the word as folded is tokenized (a needle would otherwise cost minutes)."""
    from cjk_tokenizer import Archive

    path = tmp_path / "n.db"
    with Archive(path) as ar:
        ar.add_messages("s", [{"role": "user", "content": f"部署日志cache{i} 在服务器上 error" * 20} for i in range(300)])
        want = ar.add_message("s", "user", "看看ＫＵＢＥＣＴＬ的输出")
    with Archive(path, extension=False, readonly=True) as ar:
        calls = []
        real = evaluate_mod.analyze
        monkeypatch.setattr(evaluate_mod, "analyze", lambda *a, **k: calls.append(1) or real(*a, **k))
        assert ar.search("zzqx", sort="newest") == []
        assert calls == []
        assert [h.message_id for h in ar.search("kubectl", sort="newest")] == [want]
        assert len(calls) <= 10, len(calls)  # the one row that holds it, a few times over
