"""Archive.indexes.optimize() and ``rebuild --optimize``: every live index merged
into one segment, with the same search results before and after."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cjk_tokenizer.archive import Archive, ArchiveError
from cjk_tokenizer.schema import fts_table

TEXTS = ["部署失败了，请检查日志。deploy failed", "大别山项目管理系统", "修改youer服务 rollout", "黄山旅游攻略 travel",
         "请修改部署脚本 script", "日志里有错误 error in logs"]
QUERIES = ["部署", "日志", "deploy", "项目", "修改youer", "error", "旅"]


def _varint(b: bytes, i: int) -> tuple[int, int]:
    v = 0
    for k in range(9):
        c = b[i]
        i += 1
        if k == 8:
            return (v << 8) | c, i
        v = (v << 7) | (c & 0x7F)
        if not c & 0x80:
            return v, i
    return v, i


def segments(ar: Archive, route: str) -> int:
    """Segments in an FTS5 index, from its structure record (rowid 10 of %_data:
    a 4-byte cookie, an optional 4-byte version marker, then nLevel and nSegment)."""
    t = fts_table(route)
    block = ar.conn.execute(f"SELECT block FROM {t}_data WHERE id = 10").fetchone()[0]
    i = 8 if block[4:8] == b"\xff\x00\x00\x01" else 4
    _, i = _varint(block, i)
    return _varint(block, i)[0]


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
