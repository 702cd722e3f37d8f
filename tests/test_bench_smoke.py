"""The benchmarks' smoke versions run (seconds each) and their correctness checks pass.

bench/bench_index.py --smoke   sanity of the index build numbers, needles found by the cjk index
bench/bench_queries.py --smoke every route returns the scan route's ids for each query it can
                               express; planted needles found at their ids on every route
bench/bench_lean.py --smoke    the default archive before and after give the same newest-first
                               ids; one character as a plain string equals a LIKE scan
bench/bench_variants.py --smoke fold_variants finds at least what the plain index finds on the
                               Traditional/Simplified sample, and more (needs OpenCC's converter too)

Both need jieba (the generator's word-frequency list, the ``bench`` extra).  Without it these
tests skip, unless CJK_REQUIRE_ALL_HOSTS is set (CI installs the bench extra), then they fail.
Timings are never asserted here; speed is measured by the full runs (bench/RESULTS.md).
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")


def _need(module, why):
    if importlib.util.find_spec(module) is None:
        msg = f"{module} is not installed ({why}; pip install -e '.[bench]')"
        if os.environ.get("CJK_REQUIRE_ALL_HOSTS"):
            pytest.fail(msg + " and CJK_REQUIRE_ALL_HOSTS is set")
        pytest.skip(msg)


def _run(args, cwd):
    p = subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"{' '.join(args)} exited {p.returncode}\n--- stdout\n{p.stdout[-4000:]}\n" \
                              f"--- stderr\n{p.stderr[-4000:]}"
    return p


def test_bench_index_smoke(tmp_path):
    _need("jieba", "bench/generate.py draws Chinese from jieba's dict.txt")
    _run([os.path.join(BENCH, "bench_index.py"), "--smoke", "--workdir", str(tmp_path)], ROOT)


def test_bench_queries_smoke(tmp_path):
    _need("jieba", "bench/generate.py draws Chinese from jieba's dict.txt")
    p = _run([os.path.join(BENCH, "bench_queries.py"), "--smoke", "--workdir", str(tmp_path)], ROOT)
    assert "0 problems" in p.stdout, p.stdout
    # the smoke archive and its needle manifest are in the workdir, nothing was written to bench/
    assert any(name.endswith(".db.json") for name in os.listdir(tmp_path))


def test_bench_lean_smoke(tmp_path):
    """Before/after defaults: newest-first ids agree and raw MATCH '"X"' equals LIKE (checked, not timed)."""
    _need("jieba", "bench/generate.py draws Chinese from jieba's dict.txt")
    p = _run([os.path.join(BENCH, "bench_lean.py"), "--smoke"], ROOT)
    assert "smoke ok" in p.stdout, p.stdout


def test_bench_variants_smoke(tmp_path):
    _need("jieba", "the parallel sample draws Chinese from jieba's dict.txt")
    _need("opencc", "the parallel sample's Traditional twins come from OpenCC's phrase-level converter")
    p = _run([os.path.join(BENCH, "bench_variants.py"), "--smoke", "--workdir", str(tmp_path)], ROOT)
    assert "| cjk fold_variants 1 | simplified |" in p.stdout, p.stdout


def test_bench_import_smoke(tmp_path):
    _need("jieba", "bench/generate.py draws Chinese from jieba's dict.txt")
    _need("hermes_state", "the Hermes state.db is written with Hermes' schema; pip install --no-deps hermes-agent")
    p = _run([os.path.join(BENCH, "bench_import.py"), "--smoke", "--workdir", str(tmp_path)], ROOT)
    for fmt in ("openai", "claude-code", "codex", "hermes"):
        assert f"{fmt}: " in p.stdout, p.stdout
