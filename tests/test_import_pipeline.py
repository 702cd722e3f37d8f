"""An import reads the next batch while the last one is written; stopping it early loses nothing committed.

The reader runs in a worker thread (importers.driver._prefetch).  What a user
relies on: records arrive in file order, a reader error surfaces after the
batches read before it were written, and an import stopped from the caller's
side (Ctrl-C in a progress callback, an error while writing) leaves every
committed batch in place, the source file closed and no thread running, so a
second import completes the rest without duplicates.
"""
import json
import threading

import pytest

from cjk_tokenizer.archive import Archive
from cjk_tokenizer.importers import driver

READER = "cjk_tokenizer import reader"


def _readers_alive():
    return [t for t in threading.enumerate() if t.name == READER]


def _write_chat(path, n):
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"session_id": f"s{i // 50}", "role": "user", "content": f"第{i}条消息 row{i}",
                                "timestamp": 1_700_000_000 + i}, ensure_ascii=False) + "\n")
    return path


def test_items_arrive_in_order_and_a_reader_error_after_them(tmp_path):
    closed = []

    def items():
        try:
            yield from range(5)
            raise ValueError("line 6: broken")
        finally:
            closed.append(threading.current_thread().name)

    got = []
    with pytest.raises(ValueError, match="line 6: broken"):
        for item in driver._prefetch(items()):
            got.append(item)
    assert got == [0, 1, 2, 3, 4]
    assert closed == [READER]
    assert _readers_alive() == []


def test_a_caller_that_stops_early_closes_the_reader_in_its_thread(tmp_path):
    closed = []

    def items():
        try:
            yield from range(10_000)
        finally:
            closed.append(threading.current_thread().name)

    for item in driver._prefetch(items()):
        if item == 3:
            break
    assert closed == [READER]
    assert _readers_alive() == []


def test_ctrl_c_mid_import_keeps_committed_batches_and_a_rerun_adds_the_rest(tmp_path):
    src = _write_chat(str(tmp_path / "chat.jsonl"), 1000)
    with Archive(str(tmp_path / "a.db")) as ar:
        def count():
            return ar.conn.execute("SELECT count(*) FROM messages").fetchone()[0]

        def progress(done, total):
            if count() >= 200:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            ar.import_source(src, format="openai", batch_size=100, progress=progress)
        assert _readers_alive() == []
        kept = count()
        assert 200 <= kept < 1000 and kept % 100 == 0  # whole batches only
        report = ar.import_source(src, format="openai", batch_size=100)
        assert report.messages == 1000 - kept and report.unchanged == kept
        contents = [r[0] for r in ar.conn.execute("SELECT content FROM messages ORDER BY id")]
        assert contents == [f"第{i}条消息 row{i}" for i in range(1000)]
        assert [h.message_id for h in ar.search("消息", limit=3, sort="oldest")] == [1, 2, 3]


def test_progress_runs_in_the_calling_thread_and_reaches_the_total(tmp_path):
    src = _write_chat(str(tmp_path / "chat.jsonl"), 300)
    seen = []
    with Archive(str(tmp_path / "a.db")) as ar:
        ar.import_source(src, format="openai", batch_size=100,
                         progress=lambda done, total: seen.append((threading.current_thread().name, done, total)))
    assert {name for name, _, _ in seen} == {threading.current_thread().name}
    dones = [done for _, done, _ in seen]
    assert dones == sorted(dones) and dones[-1] == seen[-1][2] > 0


def test_a_write_error_stops_the_reader_and_keeps_earlier_batches(tmp_path, monkeypatch):
    src = _write_chat(str(tmp_path / "chat.jsonl"), 500)
    with Archive(str(tmp_path / "a.db")) as ar:
        real_stage, staged = ar._stage, []

        def stage(batch):
            if staged:
                raise OSError("disk full")
            staged.append(len(batch))
            real_stage(batch)

        monkeypatch.setattr(ar, "_stage", stage)
        with pytest.raises(OSError, match="disk full"):
            ar.import_source(src, format="openai", batch_size=100)
        assert _readers_alive() == []
        assert ar.conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 100
