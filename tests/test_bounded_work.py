"""Every accepted input is bounded in time and memory: planning, the analysis
cache, and the per-row checks of the routes that read rows in Python."""
from __future__ import annotations

import gc
import random
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cjk_tokenizer import spellings, units
from cjk_tokenizer.query import MAX_QUERY_CHARS
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

    def counting(ch):
        nonlocal calls
        calls += 1
        if calls > budget:
            raise AssertionError(f"planning asked for spellings more than {budget} times")
        return real(ch)

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
