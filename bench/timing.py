"""Timing for the benchmarks: adaptive runs of one call, percentiles, one cell per call.

Standard library only, so that a benchmark's worker can use it in another
project's environment (bench/hermes_worker.py runs in Hermes Agent's own
virtual environment, where cjk_tokenizer is not installed).
"""
from __future__ import annotations

import time


def timed(fn, max_runs=15, budget=1.0, slow=0.5, very_slow=3.0):
    """Run ``fn``; returns (seconds per timed run, result of the first run).

    Fast calls get one warm-up run and up to ``max_runs`` timed runs within
    ``budget`` seconds (at least 3); a call slower than ``slow`` seconds gets 2
    timed runs and no warm-up (the archive is already in the OS cache from the
    build or an earlier query), one slower than ``very_slow`` seconds just one."""
    t0 = time.perf_counter()
    first = fn()
    d0 = time.perf_counter() - t0
    if d0 >= very_slow:
        return [d0], first
    if d0 >= slow:
        t0 = time.perf_counter()
        fn()
        return [d0, time.perf_counter() - t0], first
    times = []
    spent = d0
    while len(times) < max_runs and (len(times) < 3 or spent < budget):
        t0 = time.perf_counter()
        fn()
        d = time.perf_counter() - t0
        times.append(d)
        spent += d
    return times, first


def pct(times, q):
    s = sorted(times)
    if len(s) == 1:
        return s[0]
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def cell(fn, max_runs=15):
    """Time ``fn`` with ``timed``: ({"p50", "p95" (seconds), "runs", "n" (len of the result)}, result)."""
    times, first = timed(fn, max_runs=max_runs)
    return _summary(times, first), first


def _summary(times, first):
    return {"p50": pct(times, 0.5), "p95": pct(times, 0.95), "runs": len(times), "n": len(first)}


def paired_cells(fns, max_runs=15, budget=1.0):
    """Time several calls in alternation, one run of each per round, so that the machine's changing
    speed weighs on them alike and their difference means something: a list of (cell, first result)
    as ``cell`` gives, one per call.  Rounds: as many as fit in ``budget`` seconds per call (at least
    3, at most ``max_runs``), after one untimed round; the order turns each round."""
    firsts = [fn() for fn in fns]
    times = [[] for _ in fns]
    spent, rounds = 0.0, 0
    while rounds < max_runs and (rounds < 3 or spent < budget * len(fns)):
        order = range(len(fns)) if rounds % 2 == 0 else reversed(range(len(fns)))
        for i in order:
            t0 = time.perf_counter()
            fns[i]()
            d = time.perf_counter() - t0
            times[i].append(d)
            spent += d
        rounds += 1
    return [(_summary(t, f), f) for t, f in zip(times, firsts)]
