"""The benchmarks' smoke versions run (seconds each) and their correctness checks pass.

bench/bench_index.py --smoke   sanity of the index build numbers, needles found by the cjk index
bench/bench_queries.py --smoke every route returns the scan route's ids for each query it can
                               express; planted needles found at their ids on every route
bench/bench_lean.py --smoke    the default archive before and after give the same newest-first
                               ids; one character as a plain string equals a LIKE scan
bench/bench_variants.py --smoke fold_variants finds at least what the plain index finds on the
                               Traditional/Simplified sample, and more (needs OpenCC's converter too)
bench/bench_peers.py --smoke --no-peers  offline: the section it would write has every table and this
                               project's rows, and its newest 20 equal a LIKE scan's for every CJK term
bench/bench_scaling.py --smoke --no-peers  offline: three slices grown into one archive, every class
                               measured at every size, its newest 20 equal a LIKE scan's for every CJK term
bench/bench_fallback.py --smoke without the extension every CJK term and Latin word returns, newest
                               first, what the cjk index returns; the GLOB and one-statement shapes
                               return the same rows as the scan route and the combined relevance
bench/hermes_worker.py         Hermes' own search measured through hermes_state (needs hermes_state)

Both need jieba (the generator's word-frequency list, the ``bench`` extra).  Without it these
tests skip, unless CJK_REQUIRE_ALL_HOSTS is set (CI installs the bench extra), then they fail.
Timings are never asserted here; speed is measured by the full runs (bench/RESULTS.md).
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
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


def _smoke(script):
    """``bench/script --smoke``: its stdout, after checking that it passed and left RESULTS.md alone."""
    _need("jieba", "bench/generate.py draws Chinese from jieba's dict.txt")
    results_md = os.path.join(BENCH, "RESULTS.md")
    before = open(results_md, encoding="utf-8").read()
    p = _run([os.path.join(BENCH, script), "--smoke"], ROOT)
    assert "smoke ok" in p.stdout, p.stdout
    assert open(results_md, encoding="utf-8").read() == before, "--smoke must not write RESULTS.md"
    return p.stdout


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
    _smoke("bench_lean.py")


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


def _table(text, header_start):
    """The rows (lists of cells) of the Markdown table whose header line starts with ``header_start``."""
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[i + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def _smoke_offline(script, tmp_path):
    """``script --smoke --no-peers`` with the package index unreachable: its stdout, after checking that it
    passed, fetched nothing into its cache and left RESULTS.md alone."""
    results_md = os.path.join(BENCH, "RESULTS.md")
    before = open(results_md, encoding="utf-8").read()
    cache = tmp_path / "cache"
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_INDEX_URL="http://127.0.0.1:9/")
    p = subprocess.run([sys.executable, os.path.join(BENCH, script), "--smoke", "--no-peers", "--cache", str(cache)],
                       cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-4000:]
    assert "smoke ok" in p.stdout
    assert not cache.exists(), "--no-peers must fetch nothing"
    assert open(results_md, encoding="utf-8").read() == before, "--smoke must not write RESULTS.md"
    return p.stdout


def test_bench_peers_smoke_offline(tmp_path):
    """Without the peers: no fetch, nothing written, and this project's rows are all there and exact."""
    _need("jieba", "bench/generate.py draws Chinese from jieba's dict.txt")
    out = _smoke_offline("bench_peers.py", tmp_path)
    assert "| ours: `Archive.import_source` (it then merged the cjk, unicode61 indexes into one segment) |" in out
    for cls in ("1 char", "2 chars", "3 chars", "needle (cjk2)", "needle (cjk4)", "Latin word"):
        assert f"**{cls}** — top 20" in out, cls
    query_rows = [r for r in _table(out, "| term | sort |") if r[1] in ("newest", "relevance")]
    assert query_rows
    cell = re.compile(r"^[0-9.,]+ / [0-9.,]+$")
    for term, sort, _, search, raw, cjkfts, hermes, like, *_ in query_rows:
        assert cell.match(search) and cell.match(raw), (term, sort, search, raw)
        assert cjkfts == "not run" and hermes == "not run"
        assert cell.match(like) if sort == "newest" else like == ""
    sizes = {r[0]: r for r in _table(out, "| tokenizer | build s |")}
    for name in ("cjk_unicode61 as the archive creates it (unigrams 1)", "unicode61", "trigram",
                 "cjk_unicode61 without unigrams (bigrams only), with the archive's FTS5 settings"):
        assert float(sizes[name][4].rstrip("×")) > 0, sizes[name]
    assert sizes["sqlite-cjk-fts (cjk_bigram)"][1] == "not run"
    # every target has its line, and one character through raw MATCH finds what LIKE finds
    for target in ("newest first <= 1.5 ms", "raw SQL newest first <= 0.5 ms", "by relevance <= 40 ms",
                   "needles and 3+ character words <= 0.3 ms", "default archive file <= 2.6×",
                   "ingest with the default indexes >= 4,000 msg/s", "cjk index build (unigrams included) <= 2×"):
        assert re.search(re.escape(target) + r".* — (met|\*\*MISSED\*\*)$", out, re.M), target
    assert re.search(r"finds the rows a LIKE scan finds, for one character: .* — met$", out, re.M)
    recall = _table(out, "| class | term | LIKE rows |")
    assert {r[0] for r in recall} >= {"1 char", "2 chars", "needle (cjk2)"}
    for kind, term, like_rows, ours, cjkfts, hermes in recall:
        got, want, matched = re.match(r"(\d+)/(\d+); ([\d,]+) matched", ours).groups()
        assert got == want == str(min(20, int(like_rows.replace(",", "")))), (term, ours)
        assert matched == like_rows, (term, ours, like_rows)


def test_hermes_worker(tmp_path):
    """The worker writes through SessionDB and times search_messages without importing cjk_tokenizer."""
    _need("jieba", "bench/generate.py draws Chinese from jieba's dict.txt")
    _need("hermes_state", "the worker drives Hermes' own SessionDB; pip install --no-deps hermes-agent")
    jsonl = str(tmp_path / "c.jsonl")
    _run([os.path.join(BENCH, "generate.py"), "--size", "300KB", "-o", jsonl], ROOT)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"jsonl": jsonl, "mb": 0.1, "home": str(tmp_path), "terms": ["一", "error"],
                                "runs": 1}))
    out = json.loads(_run([os.path.join(BENCH, "hermes_worker.py"), str(spec)], str(tmp_path)).stdout)
    assert out["imported_cjk_tokenizer"] is False
    assert out["messages"] == out["max_id"] > 0 and out["text_bytes"] >= 100_000
    assert out["file_bytes"] == os.path.getsize(tmp_path / "state.db")
    one = out["queries"]["一"]
    assert one["newest"]["n"] == len(one["newest_ids"]) > 0
    assert one["newest_ids"] == sorted(one["newest_ids"], reverse=True)
    assert one["relevance"]["p50"] > 0


@pytest.mark.parametrize("script, name", [("bench_peers.py", "peers.json"), ("bench_scaling.py", "scaling.json")])
def test_bench_report_names_a_bad_file(tmp_path, script, name):
    """--report on a file that is not a run's JSON: one line naming it, RESULTS.md untouched."""
    results_md = os.path.join(BENCH, "RESULTS.md")
    before = open(results_md, encoding="utf-8").read()
    bad = tmp_path / name
    bad.write_text("{}", encoding="utf-8")
    for path in (bad, tmp_path / "missing.json"):
        p = subprocess.run([sys.executable, os.path.join(BENCH, script), "--report", str(path)],
                           cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert p.returncode != 0
        assert p.stderr.strip().splitlines() == [p.stderr.strip()], p.stderr
        assert f"--report {path}: not the {name}" in p.stderr
    assert open(results_md, encoding="utf-8").read() == before


def test_bench_scaling_smoke_offline(tmp_path):
    """Three slices grown into one archive: every size has every class's rows, this project's newest 20 equal a
    LIKE scan's (the run fails otherwise), the first import merged, and nothing is fetched or written."""
    _need("jieba", "bench/generate.py draws Chinese from jieba's dict.txt")
    _need("matplotlib", "the plot")
    out = _smoke_offline("bench_scaling.py", tmp_path)
    growth = _table(out, "| GB of text | messages |")
    assert len(growth) == 3
    assert growth[0][4] == "cjk, unicode61", growth[0]  # the first import doubles an empty archive
    assert [int(r[1].replace(",", "")) for r in growth] == sorted(int(r[1].replace(",", "")) for r in growth)
    for cls in ("1 char", "2 chars", "needle (cjk2)", "needle (cjk4)", "Latin word"):
        assert f"**{cls}**" in out, cls
    tables = out.split("| term | GB | rows |")[1:]
    assert len(tables) == len({line.strip("*") for line in out.splitlines() if re.fullmatch(r"\*\*.+\*\*", line)})
    for t in tables:
        rows = _table("| term | GB | rows |" + t, "| term | GB | rows |")
        assert len(rows) % 3 == 0 and rows, t[:500]  # each term at each of the three sizes
        assert all(r[3] and r[4] and r[5] for r in rows), rows  # ours: both searches and raw newest


def test_bench_fts_settings_writes_every_variant_and_each_reading_of_the_target(tmp_path):
    """The build section: a row per variant, and the target read on the archive's pair, its floor, the bigrams
    alone and automerge 16 (figures from the run, checked for form only)."""
    _need("jieba", "bench/generate.py draws Chinese from jieba's dict.txt")
    corpus = tmp_path / "c.jsonl"
    _run([os.path.join(BENCH, "generate.py"), "--size", "1MB", "-o", str(corpus)], ROOT)
    results_md = tmp_path / "RESULTS.md"
    _run([os.path.join(BENCH, "bench_fts_settings.py"), str(corpus), "--mb", "0.5", "--repeat", "1", "--write",
          "--results", str(results_md)], ROOT)
    section = results_md.read_text(encoding="utf-8")
    sys.path.insert(0, BENCH)
    try:
        import bench_fts_settings
    finally:
        sys.path.remove(BENCH)
    rows = {r[0]: r for r in _table(section, "| variant | tokenize |")}
    assert list(rows) == [name for name, _, _ in bench_fts_settings.VARIANTS]
    for row in rows.values():
        assert float(row[3]) > 0 and row[4].endswith("×") and float(row[4].rstrip("×")) > 0, row
    ratio = r"\d+\.\d\d×"
    assert re.search(rf"^- cjk index build with unigrams ≤ 2× unicode61's time, both as the archive creates them: "
                     rf"\*\*{ratio}\*\* — (met|\*\*MISSED\*\*)$", section, re.M), section
    assert re.search(rf"^- floor: FTS5 indexing the cjk token stream .* takes {ratio} unicode61's build", section,
                     re.M), section
    assert re.search(rf"^- without unigrams: the bigrams alone take {ratio} unicode61's build under the same "
                     rf"settings, (over 2× before any unigram is added|leaving {ratio} of the target for the "
                     rf"unigrams); the colocated unigrams \(one more token per CJK character\) add -?{ratio} here\.$",
                     section, re.M), section
    assert re.search(rf"^- automerge 16 on both tables .*: {ratio}\.$", section, re.M), section


def test_bench_page_shape_smoke():
    """Both shapes of a bounded relevance page return the same rows on a merged and an appended archive
    (the run fails otherwise), the merged one has one segment, the appended several; nothing is written."""
    out = _smoke("bench_page_shape.py")
    rows = _table(out, "| archive | cjk segments |")
    assert {r[0] for r in rows} == {"merged", "appended"}, rows
    assert re.search(r"^What this shows: .* [0-9.]+-[0-9.]+× on the merged archive \(cjk segments: 1\); "
                     r"[0-9.]+-[0-9.]+× on the appended archive", out, re.M), out


def test_bench_mmap_smoke():
    """Every search and both LIKE scans return the same through the map and without it (the run fails
    otherwise), each gets its row and the reading quotes the table's ratios; nothing is written."""
    out = _smoke("bench_mmap.py")
    rows = _table(out, "| call | term |")
    calls = [r[0] for r in rows]
    assert {"`Archive.search` newest, 1 char", "`Archive.search` relevance, needle (cjk4)",
            "LIKE scan newest, needle (reads every message)"} <= set(calls), calls
    ratios = [float(r[-1].rstrip("×")) for r in rows]
    search = [x for c, x in zip(calls, ratios) if c.startswith("`Archive.search`")]
    assert re.search(r"^What this shows: read through the map, the LIKE scan that reads every message takes "
                     rf"[0-9.]+× its time without the map; `Archive.search`, .* takes {min(search):.2f}-"
                     rf"{max(search):.2f}× \(median [0-9.]+×\)\.", out, re.M), out


def test_bench_fallback_smoke():
    """Without the extension each CJK term takes the scan route and each Latin word unicode61, both sorts
    of a Latin word are measured, newest-first results equal the cjk index's (the run fails otherwise),
    and the reading quotes the table's figures; nothing is written."""
    out = _smoke("bench_fallback.py")
    rows = _table(out, "| term | class | sort |")
    routes = {(r[1], r[2]): r[3] for r in rows}
    assert routes[("2 chars", "newest")] == routes[("needle (cjk4)", "newest")] == "scan", routes
    assert routes[("Latin word", "relevance")] == routes[("Latin word", "newest")] == "unicode61", routes
    full = [float(r[7].rstrip("×")) for r in rows if r[3] == "scan" and int(r[4]) < 20]
    assert full and re.search(rf"the scan in {min(full):.2f}-{max(full):.2f}× the time", out), out
    assert re.search(r"GLOB alone takes [0-9.,]+ ms for \S+, [0-9.]+× the scan route's", out), out
    assert re.search(r"One statement over every message, .* takes [0-9.,]+ ms for \S+ by relevance", out), out
