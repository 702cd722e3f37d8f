"""A big import into an empty index builds that index in a second thread (indexing.AsideBuild).

What users rely on: the index it leaves is the one a build in place leaves
(same matches, FTS5's own check against the messages passes, one segment after
the merge), a write by another connection during the import never leaves the
index wrong, and a failed or interrupted import leaves no thread, no scratch
file and an index that catch-up completes.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from cjk_tokenizer import doctor, indexing
from cjk_tokenizer.archive import Archive

WORDS = ["部署失败了，请检查日志", "大别山项目管理系统", "修改youer服务 rollout", "黄山旅游攻略 travel",
         "파일을 저장했습니다", "ログを確認してください", "error in logs", "代表大会的决议"]
QUERIES = ["部署", "日志", "项目", "youer", "旅", "파일", "ログ", "error", "代表大会", "第12", "想过"]
N = 1200


def _history(tmp_path) -> str:
    p = tmp_path / "history.jsonl"
    with open(p, "w", encoding="utf-8") as f:
        for i in range(N):
            msg = {"session_id": f"s{i // 10}", "role": "user" if i % 2 else "assistant",
                   "content": f"{WORDS[i % len(WORDS)]} 第{i}条 {WORDS[(i * 7) % len(WORDS)]}", "timestamp": 1.7e9 + i}
            if i % 5 == 0:
                msg["reasoning_content"] = f"想过{WORDS[(i * 3) % len(WORDS)]}"
            f.write(json.dumps(msg, ensure_ascii=False) + "\n")
    return str(p)


@pytest.fixture
def aside(monkeypatch):
    """Every import qualifies by size; the builds started are collected."""
    started = []
    real = indexing.AsideBuild.start.__func__

    def start(cls, archive, source_bytes):
        build = real(cls, archive, source_bytes)
        if build is not None:
            started.append(build)
        return build

    monkeypatch.setattr(indexing, "ASIDE_MIN_BYTES", 0)
    monkeypatch.setattr(indexing.AsideBuild, "start", classmethod(start))
    return started


def _raw(ar: Archive, route: str) -> list:
    table = indexing.fts_table(route)
    return [sorted(r[0] for r in ar.conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?",
                                                 (json.dumps(q, ensure_ascii=False),)))
            for q in QUERIES]


def _searches(ar: Archive) -> list:
    return [[(h.message_id, h.snippet, h.route, h.matched_in) for h in ar.search(q, limit=50, sort="newest",
                                                                                include_reasoning=True)]
            for q in QUERIES]


def _in_place(tmp_path, history, **kw) -> Archive:
    ar = Archive(str(tmp_path / "in_place.db"), **kw)
    ar.import_source(history, batch_size=100)
    return ar


def _scratch_files(tmp_path) -> list:
    return [n for n in os.listdir(tmp_path) if "-build-" in n]


def _worker_has_read(aside: list, path: str, upto: int) -> bool:
    """Once the import has committed message ``upto``: wait until the worker has indexed it."""
    if not aside:
        return False
    with Archive(path, readonly=True) as other:
        if other.conn.execute("SELECT coalesce(max(id), 0) FROM messages").fetchone()[0] < upto:
            return False
    deadline = time.monotonic() + 60
    while aside[0].upto < upto and aside[0].error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert aside[0].upto >= upto, aside[0].error
    return True


def _no_worker() -> bool:
    return not any(t.name.endswith("index build") for t in threading.enumerate())


def test_an_import_into_an_empty_archive_builds_the_cjk_index_aside_exactly(tmp_path, aside):
    history = _history(tmp_path)
    with Archive(str(tmp_path / "a.db")) as ar:
        report = ar.import_source(history, batch_size=100)
        assert [b.route for b in aside] == ["cjk"] and aside[0].upto == N and aside[0].error is None
        assert report.messages == N and report.optimized == {"cjk": "merged", "unicode61": "merged"}
        assert report.built_aside == "cjk"
        assert ar.indexes.segments() == {"cjk": 1, "unicode61": 1}
        assert {r: s["status"] for r, s in ar.indexes.status().items()} == {"cjk": "live", "unicode61": "live"}
        assert ar.indexes.integrity_check() == {"cjk": "ok", "unicode61": "ok", "database": "ok"}
        got_raw, got = _raw(ar, "cjk"), _searches(ar)
        ar.add_message("s-late", "user", "导入之后写的部署记录")  # the live triggers took over
        assert ar.search("之后写的")[0].route == "cjk"
    with _in_place(tmp_path, history) as ref:
        assert _raw(ref, "cjk") == got_raw and _searches(ref) == got
    assert all(got_raw) and _scratch_files(tmp_path) == [] and _no_worker()


def test_the_costliest_empty_index_is_the_one_built_aside(tmp_path, aside):
    history = _history(tmp_path)
    with Archive(str(tmp_path / "a.db"), indexes=["cjk", "unicode61", "trigram"]) as ar:
        assert ar.import_source(history, batch_size=100).built_aside == "trigram"
        assert [b.route for b in aside] == ["trigram"]
        assert set(ar.indexes.integrity_check().values()) == {"ok"}
        got = _raw(ar, "trigram")
    with _in_place(tmp_path, history, indexes=["cjk", "unicode61", "trigram"]) as ref:
        assert _raw(ref, "trigram") == got


@pytest.mark.parametrize("write", ["update", "delete", "insert"])
def test_another_writer_during_the_import_never_leaves_the_index_wrong(tmp_path, aside, write):
    """A change by another connection after the worker read a message: the copy is dropped, catch-up builds."""
    history, path = _history(tmp_path), str(tmp_path / "a.db")
    done = []

    def progress(_bytes, _total):
        if done or not _worker_has_read(aside, path, 300):
            return
        done.append(True)
        with Archive(path, auto_catch_up=0) as other:
            if write == "update":
                other.update_message(1, content="改写之后的内容 rewritten")
            elif write == "delete":
                other.delete_message(1)
            else:
                other.add_message("s-other", "user", "另一个进程写的消息")

    with Archive(path) as ar:
        report = ar.import_source(history, batch_size=100, progress=progress)
        assert done and aside[0].upto >= 300 and report.built_aside == ""
        assert ar.indexes.status()["cjk"]["status"] == "live"
        assert ar.indexes.integrity_check()["cjk"] == "ok"
        first = [h.message_id for h in ar.search("部署失败", limit=1000)]
        if write == "update":
            assert 1 not in first and [h.message_id for h in ar.search("改写之后")] == [1]
        elif write == "delete":
            assert 1 not in first
        else:
            assert [h.route for h in ar.search("另一个进程")] == ["cjk"]
    assert _scratch_files(tmp_path) == [] and _no_worker()


def test_an_interrupted_import_leaves_no_worker_no_scratch_file_and_an_index_catch_up_completes(tmp_path, aside):
    history, path = _history(tmp_path), str(tmp_path / "a.db")

    def progress(_bytes, _total):
        if _worker_has_read(aside, path, 100):
            raise KeyboardInterrupt

    with Archive(path) as ar:
        with pytest.raises(KeyboardInterrupt):
            ar.import_source(history, batch_size=100, progress=progress)
        assert _scratch_files(tmp_path) == [] and _no_worker()
        status = ar.indexes.status()["cjk"]
        assert (status["status"], status["indexed_upto"]) == ("building", 0)
        kept = ar.count_messages()
        assert 0 < kept < N
        assert ar.indexes.catch_up()
        assert ar.indexes.integrity_check()["cjk"] == "ok"
        assert len(ar.search("第1条", limit=50)) == 1
        # the rest of the history: the index is live and not empty now, so this one builds in place
        report = ar.import_source(history, batch_size=100)
        assert len(aside) == 1 and ar.count_messages() == N and report.messages == N - kept
        assert ar.indexes.integrity_check()["cjk"] == "ok"


def test_an_import_resumed_after_an_interrupted_one_builds_the_whole_index_aside(tmp_path, aside):
    history, path = _history(tmp_path), str(tmp_path / "a.db")

    def progress(_bytes, _total):
        if _worker_has_read(aside, path, 100):
            raise RuntimeError("stopped")

    with Archive(path) as ar:
        with pytest.raises(RuntimeError):
            ar.import_source(history, batch_size=100, progress=progress)
        ar.import_source(history, batch_size=100)  # the index is still empty: built aside, old rows included
        assert len(aside) == 2 and aside[1].upto == N
        assert ar.indexes.status()["cjk"]["status"] == "live"
        assert ar.indexes.integrity_check()["cjk"] == "ok"
        got = _raw(ar, "cjk")
    with _in_place(tmp_path, history) as ref:
        assert _raw(ref, "cjk") == got


def test_a_failed_worker_leaves_the_build_to_catch_up(tmp_path, aside, monkeypatch):
    def fail(self, conn):
        raise OSError("disk full")

    monkeypatch.setattr(indexing.AsideBuild, "_index", fail)
    history = _history(tmp_path)
    with Archive(str(tmp_path / "a.db")) as ar:
        report = ar.import_source(history, batch_size=100)
        assert isinstance(aside[0].error, OSError) and report.built_aside == ""
        assert report.optimized["cjk"] == "merged" and ar.indexes.segments()["cjk"] == 1
        assert ar.indexes.status()["cjk"]["status"] == "live"
        assert ar.indexes.integrity_check()["cjk"] == "ok"
        got = _raw(ar, "cjk")
    with _in_place(tmp_path, history) as ref:
        assert _raw(ref, "cjk") == got
    assert _scratch_files(tmp_path) == [] and _no_worker()


def test_where_it_does_not_apply(tmp_path, monkeypatch):
    history = _history(tmp_path)
    size = os.path.getsize(history)
    monkeypatch.setattr(indexing, "ASIDE_MIN_BYTES", size + 1)
    with Archive(str(tmp_path / "small.db")) as ar:
        assert indexing.AsideBuild.start(ar, size) is None  # too small to be worth a thread
    monkeypatch.setattr(indexing, "ASIDE_MIN_BYTES", 0)
    with Archive(":memory:") as ar:
        assert indexing.AsideBuild.start(ar, size) is None
    path = str(tmp_path / "a.db")
    with Archive(path) as ar:
        ar.add_message("s", "user", "已有的消息")
        assert indexing.AsideBuild.start(ar, size) is None  # no index is empty
    with Archive(path, readonly=True) as ar:
        assert indexing.AsideBuild.start(ar, size) is None
    with Archive(str(tmp_path / "noext.db"), extension=False) as ar:
        build = indexing.AsideBuild.start(ar, size)  # the cjk index cannot be built here; unicode61 can
        assert build is not None and build.route == "unicode61"
        build.abandon()
    assert _scratch_files(tmp_path) == [] and _no_worker()


def test_a_killed_import_leaves_a_consistent_archive_and_doctor_names_its_scratch_file(tmp_path):
    history, path = _history(tmp_path), str(tmp_path / "a.db")
    code = ("import sys; from cjk_tokenizer import indexing; from cjk_tokenizer.archive import Archive; "
            "indexing.ASIDE_MIN_BYTES = 0; Archive(sys.argv[1]).import_source(sys.argv[2], batch_size=1)")
    proc = subprocess.Popen([sys.executable, "-c", code, path, history], cwd=str(tmp_path))
    try:
        deadline = time.monotonic() + 120
        while proc.poll() is None and time.monotonic() < deadline:
            if indexing.scratch_files(path) and os.path.exists(path):
                with Archive(path, readonly=True) as ar:
                    if ar.count_messages() >= 50:
                        break
            time.sleep(0.005)
        assert proc.poll() is None, "the import ended before it could be killed"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    left = indexing.scratch_files(path)
    assert len(left) == 1 and os.path.basename(left[0]).startswith("a.db-cjk-build-")
    rows = {name: (text, ok) for name, text, ok in doctor.archive_report(path)}
    text, ok = rows["scratch files"]
    assert not ok and os.path.basename(left[0]) in text
    with Archive(path, auto_catch_up=0) as ar:
        status = ar.indexes.status()["cjk"]
        assert (status["status"], status["indexed_upto"]) == ("building", 0)
        assert ar.indexes.catch_up() and ar.indexes.integrity_check()["cjk"] == "ok"
        assert len(ar.search("第1条", limit=50)) == 1
    os.remove(left[0])
    assert "scratch files" not in {name for name, _, _ in doctor.archive_report(path)}
