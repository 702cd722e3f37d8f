"""One writer appending while four readers query, each thread with its own Archive.

What a user relies on: readers never see an error (WAL + busy timeout), a
message is findable by every live index as soon as its write has returned, and
afterwards every committed message is there.
"""
from __future__ import annotations

import importlib.util
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
import _archive_corpus as corpus  # noqa: E402

from cjk_tokenizer.archive import Archive  # noqa: E402

TABLES = {"cjk": "messages_fts_cjk", "unicode61": "messages_fts_u61", "trigram": "messages_fts_tri"}
RUN_SECONDS = 3.0
HAVE_SEARCH = importlib.util.find_spec("cjk_tokenizer.search") is not None


def rowids(ar, route, query):
    t = TABLES[route]
    return {r[0] for r in ar.conn.execute(f"SELECT rowid FROM {t} WHERE {t} MATCH ?", (query,))}


def test_one_writer_four_readers(tmp_path):
    path = tmp_path / "a.db"
    with Archive(path, indexes=("cjk", "unicode61", "trigram")) as ar:
        ar.bulk_import(corpus.messages(200, seed=1))
    committed: list[tuple[int, str]] = [(i + 1, corpus.marker(i)) for i in range(200)]
    errors: list[BaseException] = []
    stop = threading.Event()
    reads = [0] * 4

    def writer():
        rng = random.Random(2)
        n = 200
        try:
            with Archive(path) as w:
                while not stop.is_set():
                    if rng.random() < 0.2:  # now and then a small bulk batch
                        batch = [corpus.message(rng, n + k, f"s{rng.randrange(5)}") for k in range(20)]
                        w.bulk_import(batch)
                        last = w.conn.execute("SELECT max(id) FROM messages").fetchone()[0]  # the only writer
                        committed.extend((last - 19 + k, corpus.marker(n + k)) for k in range(20))
                        n += 20
                    else:
                        msg = corpus.message(rng, n, f"s{rng.randrange(5)}")
                        mid = w.add_openai_message(msg["session_id"], msg)
                        committed.append((mid, corpus.marker(n)))
                        n += 1
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    def reader(k):
        rng = random.Random(100 + k)
        try:
            with Archive(path) as r:
                while not stop.is_set():
                    mid, mark = committed[rng.randrange(len(committed))]  # committed before we look
                    route = rng.choice(sorted(TABLES))
                    found = rowids(r, route, f'"{mark}"')
                    assert found == {mid}, (route, mark, mid, found)
                    assert r.get_message(mid)["content"].count(mark) == 1
                    r.messages_of(f"s{rng.randrange(5)}", limit=5, order="desc")
                    r.sessions(limit=3)
                    if HAVE_SEARCH and rng.random() < 0.3:
                        r.search(rng.choice(["部署", "rollback", "サーバー", "서버", mark]), limit=5)
                    reads[k] += 1
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    time.sleep(RUN_SECONDS)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
    assert min(reads) > 0 and len(committed) > 250, (reads, len(committed))

    with Archive(path) as ar:
        assert ar.count_messages() == len(committed)
        for mid, mark in committed:
            for route in TABLES:
                assert rowids(ar, route, f'"{mark}"') == {mid}, (route, mark)
        assert ar.indexes.integrity_check() == {"cjk": "ok", "unicode61": "ok", "trigram": "ok", "database": "ok"}


def test_one_archive_shared_between_threads(tmp_path):
    """Calls on one Archive from several threads are serialized, not an error."""
    errors = []
    with Archive(tmp_path / "a.db", indexes=("cjk", "unicode61", "trigram")) as ar:
        def work(k):
            try:
                for i in range(100):
                    mid = ar.add_message(f"t{k}", "user", f"线程 thread{k}x{i}q")
                    assert ar.get_message(mid)["session_id"] == f"t{k}"
                    ar.messages_of(f"t{k}", limit=3, order="desc")
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert ar.count_messages() == 400
        assert [s["message_count"] for s in ar.sessions()] == [100] * 4


def test_a_search_sees_another_connections_rebuild_start_whole_or_not_at_all(tmp_path):
    # the rebuild empties the cjk index and marks it building in one commit; a search that
    # read "live" just before that commit must not then read the emptied index (no hits)
    from cjk_tokenizer import indexing

    path = str(tmp_path / "a.db")
    with Archive(path) as ar:
        ids = [ar.add_message("s", "user", f"重建测试 第{i}条") for i in range(50)]
    with Archive(path) as reader, Archive(path) as writer:
        served = reader.indexes.served

        def served_then_a_rebuild_starts():
            out = served()
            indexing.start_rebuild(writer.conn, "cjk")
            return out

        reader.indexes.served = served_then_a_rebuild_starts
        hits = reader.search("重建测试", sort="newest", limit=100)
        assert [h.message_id for h in hits] == ids[::-1] and {h.route for h in hits} == {"cjk"}
        reader.indexes.served = served
        hits = reader.search("重建测试", sort="newest", limit=100)  # building: not served, the scan answers
        assert [h.message_id for h in hits] == ids[::-1] and {h.route for h in hits} == {"scan"}


def test_opening_to_read_while_another_process_holds_the_write_lock_does_not_fail(tmp_path):
    # an index one row behind made the open catch it up, which needs the write lock:
    # a raw apsw.BusyError after busy_timeout, although reading never waits in WAL
    import subprocess
    import warnings

    path = tmp_path / "a.db"
    with Archive(path) as ar:
        ar.add_message("s", "user", "部署成功")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with Archive(path, extension=False) as bare:
            bare.add_message("s", "user", "回滚完成")  # the cjk index is now one row behind
    holder = subprocess.Popen([sys.executable, "-c", "import apsw, sys, time; c = apsw.Connection(sys.argv[1]); "
                               "c.execute('BEGIN IMMEDIATE'); print('held', flush=True); time.sleep(30)", str(path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with Archive(path, busy_timeout=0.5) as ar:
            assert ar.indexes.status()["cjk"]["status"] == "stale"
            assert [h.message_id for h in ar.search("回滚")] == [2]  # the scan route, exact
    finally:
        holder.kill()
        holder.wait()
    with Archive(path) as ar:  # the next open catches up
        assert ar.indexes.status()["cjk"]["status"] == "live" and [h.message_id for h in ar.search("回滚")] == [2]


def test_an_export_is_one_snapshot_while_another_process_writes(tmp_path):
    # read page by page, it mixed states: a message committed after an earlier one it
    # depends on could be in the file without it
    import io

    import apsw

    import cjk_tokenizer

    path = tmp_path / "a.db"
    with Archive(path) as ar:
        for sid in ("a", "b"):
            ar.add_message(sid, "user", f"{sid} first")
        other = cjk_tokenizer.load(apsw.Connection(str(path)))

        class WritesAsItGoes(io.StringIO):
            def write(self, text):
                # each line written, another process commits one message to each session
                other.execute("INSERT INTO messages(session_id, role, content) VALUES ('a', 'user', 'later a'), "
                              "('b', 'user', 'later b')")
                return super().write(text)

        out = WritesAsItGoes()
        assert ar.export(out) == 2
        assert "later" not in out.getvalue()
        other.close()


def test_a_write_inside_reading_is_a_clear_error(tmp_path):
    # its snapshot cannot take a write once another connection committed: a raw
    # "database is locked" at once, though nothing held a lock
    from cjk_tokenizer.archive import ArchiveError

    path = tmp_path / "a.db"
    with Archive(path) as a, Archive(path) as b:
        a.add_message("s", "user", "部署")
        with a.reading():
            assert a.search("部署")
            b.add_message("s", "user", "回滚")
            try:
                a.add_message("s", "user", "写不进去")
                raise AssertionError("the write went through")
            except ArchiveError as exc:
                assert "inside archive.reading()" in str(exc)
            assert len(a.search("回滚")) == 0  # still the snapshot
        assert a.add_message("s", "user", "之后可以") == 3 and len(a.search("回滚")) == 1
