"""Archive.indexes.optimize() and ``rebuild --optimize``: every live index merged
into one segment, with the same search results before and after."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cjk_tokenizer.archive import Archive, ArchiveError

TEXTS = ["部署失败了，请检查日志。deploy failed", "大别山项目管理系统", "修改youer服务 rollout", "黄山旅游攻略 travel",
         "请修改部署脚本 script", "日志里有错误 error in logs"]
QUERIES = ["部署", "日志", "deploy", "项目", "修改youer", "error", "旅"]


def segments(ar: Archive, route: str) -> int:
    return ar.indexes.segments()[route]


def _results(ar: Archive) -> list:
    return [[(h.message_id, h.snippet, h.score, h.route) for h in ar.search(q, limit=50)] for q in QUERIES]


@pytest.fixture
def path(tmp_path):
    p = str(tmp_path / "a.db")
    with Archive(p) as ar:
        for k in range(3):  # each committed batch is a new segment (automerge waits for 4)
            ar.add_messages(f"s{k}", [{"role": "user", "content": t} for t in TEXTS])
    return p


def test_optimize_merges_every_live_index_and_changes_no_result(path):
    with Archive(path) as ar:
        before = _results(ar)
        assert all(segments(ar, r) > 1 for r in ("cjk", "unicode61"))
        assert ar.indexes.optimize() == {"cjk": "merged", "unicode61": "merged"}
        assert [segments(ar, r) for r in ("cjk", "unicode61")] == [1, 1]
        assert _results(ar) == before
        assert all(v == "ok" for v in ar.indexes.integrity_check().values())
        ar.add_message("s9", "user", "新的部署 after")  # writes go on as before
        assert ar.search("新的部署")[0].route == "cjk"


def test_optimize_skips_what_it_cannot_merge_and_refuses_a_read_only_archive(path):
    with Archive(path, extension=False) as ar:
        ar.add_message("s9", "user", "扩展不在时写的 message")  # leaves the cjk index stale
        assert ar.indexes.optimize() == {"cjk": "skipped: stale, not live (catch_up() first)",
                                         "unicode61": "merged"}
        with pytest.raises(ArchiveError, match="no 'trigram' index"):
            ar.indexes.optimize("trigram")
    with Archive(path, readonly=True) as ar:
        with pytest.raises(ArchiveError, match="read-only.*optimize"):
            ar.indexes.optimize()


def test_cli_rebuild_optimize(path):
    proc = subprocess.run([sys.executable, "-m", "cjk_tokenizer", "rebuild", path, "--optimize"], capture_output=True,
                          text=True, timeout=300, cwd=os.path.dirname(path))
    assert proc.returncode == 0, proc.stderr
    assert "cjk: merged into one segment" in proc.stdout and "unicode61: merged into one segment" in proc.stdout
    with Archive(path) as ar:
        assert segments(ar, "cjk") == 1
        hits = json.loads(subprocess.run([sys.executable, "-m", "cjk_tokenizer", "search", path, "部署", "--json"],
                                         capture_output=True, text=True, timeout=300, check=True).stdout)
        assert {h["message_id"] for h in hits} == {h.message_id for h in ar.search("部署", limit=50)}


def _history(tmp_path, name: str, n: int, start: int = 0) -> str:
    """An OpenAI-style JSONL history of ``n`` messages in sessions of four."""
    p = tmp_path / name
    with open(p, "w", encoding="utf-8") as f:
        for i in range(start, start + n):
            f.write(json.dumps({"session_id": f"h{i // 4}", "role": "user" if i % 2 else "assistant",
                                "content": f"{TEXTS[i % len(TEXTS)]} 第{i}条", "timestamp": 1.7e9 + i},
                               ensure_ascii=False) + "\n")
    return str(p)


def test_an_import_that_doubles_the_archive_ends_merged_and_a_small_one_does_not(tmp_path):
    db = str(tmp_path / "a.db")
    with Archive(db) as ar:
        assert ar.indexes.segments() == {"cjk": 0, "unicode61": 0}
        # one transaction per 3 messages: many segments, unless the import merges them
        first = ar.import_source(_history(tmp_path, "one.jsonl", 60), format="openai", batch_size=3)
        assert first.optimized == {"cjk": "merged", "unicode61": "merged"}
        assert first.merged() == "merged the cjk, unicode61 indexes into one segment"
        assert [segments(ar, r) for r in ("cjk", "unicode61")] == [1, 1]
        merged = _results(ar)
        small = ar.import_source(_history(tmp_path, "two.jsonl", 30, start=60), format="openai", batch_size=3)
        assert small.messages == 30 and small.optimized == {} and small.merged() == ""
        assert segments(ar, "cjk") > 1
        assert [h.message_id for h in ar.search("第75条")] == [76]  # the small import is searchable as it is
        assert all(v == "ok" for v in ar.indexes.integrity_check().values())
        forced = ar.import_source(_history(tmp_path, "three.jsonl", 3, start=90), format="openai", optimize=True)
        assert forced.optimized == {"cjk": "merged", "unicode61": "merged"} and segments(ar, "cjk") == 1
        with pytest.raises(ValueError, match="optimize must be True, False or None"):
            ar.import_source(_history(tmp_path, "four.jsonl", 3, start=93), format="openai", optimize="yes")
    with Archive(str(tmp_path / "b.db")) as ar:
        report = ar.import_source(_history(tmp_path, "one.jsonl", 60), format="openai", batch_size=3, optimize=False)
        assert report.optimized == {} and segments(ar, "cjk") > 1
        assert _results(ar) == merged  # the merge changes no hit, snippet or score


def test_import_report_repr_does_not_list_every_session(tmp_path):
    with Archive(str(tmp_path / "a.db")) as ar:
        report = ar.import_source(_history(tmp_path, "one.jsonl", 400), format="openai")
    assert len(report.sessions) == 100
    assert "h57" not in repr(report) and "messages=400" in repr(report)


def test_cli_import_merges_unless_told_not_to(tmp_path):
    src = _history(tmp_path, "one.jsonl", 60)
    for db, extra, merged in (("a.db", [], True), ("b.db", ["--no-optimize"], False)):
        proc = subprocess.run([sys.executable, "-m", "cjk_tokenizer", "import", str(tmp_path / db), src,
                               "--batch-size", "3", *extra], capture_output=True, text=True, timeout=300,
                              cwd=str(tmp_path))
        assert proc.returncode == 0, proc.stderr
        assert ("merging the indexes into one segment (the import at least doubled the archive) …"
                in proc.stderr.splitlines()) == merged, proc.stderr
        lines = proc.stdout.splitlines()
        assert lines[0].startswith("imported 60 messages in 15 sessions from 1 source into"), lines
        assert lines[1:] == (["merged the cjk, unicode61 indexes into one segment"] if merged else []), lines
        with Archive(str(tmp_path / db)) as ar:
            assert (segments(ar, "cjk") == 1) == merged
