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
