"""A process killed with SIGKILL mid-write loses nothing it had committed.

The child prints how many messages it has committed after each batch (the
progress callback runs after COMMIT returns); the parent kills it at an
arbitrary moment, reopens the archive and checks every one of those messages
is there and findable, no batch is half-written, and every index passes
FTS5's integrity-check.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import _archive_corpus as corpus  # noqa: E402

from cjk_tokenizer.archive import Archive  # noqa: E402

TESTS = os.path.dirname(os.path.abspath(__file__))
TABLES = {"cjk": "messages_fts_cjk", "unicode61": "messages_fts_u61", "trigram": "messages_fts_tri"}
ALL_OK = {"cjk": "ok", "unicode61": "ok", "trigram": "ok", "database": "ok"}

INGEST = """
import sys
sys.path.insert(0, {tests!r})
import _archive_corpus as corpus
from cjk_tokenizer.archive import Archive

def progress(n):
    print(n, flush=True)

ar = Archive({path!r}, extension={extension!r}, indexes=("cjk", "unicode61", "trigram"))
records = (m for k in range(1000) for m in corpus.messages(100, seed=k, start=k * 100))
ar.bulk_import(records, batch_size=50, progress=progress)
print("finished", flush=True)
"""

CATCH_UP = """
import time
from cjk_tokenizer.archive import Archive
ar = Archive({path!r}, auto_catch_up=0, indexes=("cjk", "unicode61", "trigram"))
# Slow SQLite down (not just the gaps between chunks) so the kill lands mid-transaction.
ar.conn.set_progress_handler(lambda: time.sleep(0.001) or False, 2000)
ar.indexes.catch_up(lambda p: print(p.done, flush=True), chunk=20, target_seconds=None)
print("finished", flush=True)
"""


def run_and_kill(code: str, *, after_lines: int, extra_delay: float):
    """Start ``code`` in a child, SIGKILL it once it has printed ``after_lines`` lines; return them."""
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    deadline = time.monotonic() + 60
    try:
        while len(lines) < after_lines and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            lines.append(line.strip())
        time.sleep(extra_delay)  # let it get into the middle of the next batch
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        rest = child.stdout.read()  # through the same buffer readline() filled
        err = child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
        child.stdout.close()
        child.stderr.close()
    lines += rest.split()
    assert child.returncode == -signal.SIGKILL, (child.returncode, err[-2000:])
    assert "finished" not in lines, "the child finished before it was killed; nothing was tested"
    return lines


def rowids(ar, route, query):
    t = TABLES[route]
    return {r[0] for r in ar.conn.execute(f"SELECT rowid FROM {t} WHERE {t} MATCH ?", (query,))}


@pytest.mark.parametrize("delay", [0.0, 0.013, 0.037])
def test_sigkill_mid_bulk_ingest(tmp_path, delay):
    path = str(tmp_path / "a.db")
    lines = run_and_kill(INGEST.format(tests=TESTS, path=path, extension=True), after_lines=8, extra_delay=delay)
    committed = int(lines[-1])
    assert committed >= 400
    with Archive(path, indexes=("cjk", "unicode61", "trigram")) as ar:
        n = ar.count_messages()
        assert n >= committed and n % 50 == 0, "a batch was half-written"
        rows = dict(ar.conn.execute("SELECT id, content FROM messages"))
        for i in range(n):
            assert corpus.marker(i) in rows[i + 1]
        for i in range(0, n, 7):
            for route in TABLES:
                assert rowids(ar, route, f'"{corpus.marker(i)}"') == {i + 1}, (route, i)
        assert ar.indexes.integrity_check() == ALL_OK
        # and the archive takes more writes afterwards
        mid = ar.add_message("after", "user", "崩溃之后 upd1x")
        assert rowids(ar, "cjk", "upd1x") == {mid}


def test_sigkill_without_extension_then_mid_catch_up(tmp_path):
    path = str(tmp_path / "a.db")
    with Archive(path, indexes=("cjk", "unicode61", "trigram")) as ar:
        ar.bulk_import(corpus.messages(100, seed=1))
    lines = run_and_kill(INGEST.format(tests=TESTS, path=path, extension=False), after_lines=10, extra_delay=0.01)
    with Archive(path, auto_catch_up=0) as ar:
        n = ar.count_messages()
        assert n >= 100 + int(lines[-1])
        st = ar.indexes.status()["cjk"]
        assert st["status"] == "stale" and st["behind"] == n - 100
        assert ar.indexes.integrity_check()["cjk"] == "ok"
    lines = run_and_kill(CATCH_UP.format(path=path), after_lines=5, extra_delay=0.005)
    with Archive(path, auto_catch_up=0) as ar:
        st = ar.indexes.status()["cjk"]
        assert st["status"] == "stale"
        assert st["behind"] <= n - 100 - int(lines[-1])  # what was committed before the kill stays done
        assert ar.indexes.integrity_check()["cjk"] == "ok"
        assert ar.indexes.catch_up() is True
        assert ar.conn.execute("SELECT count(*) FROM messages_fts_cjk_docsize").fetchone()[0] == n
        for i in range(0, n, 3):  # the child restarted the markers at 0 above id 100
            assert i + 1 in rowids(ar, "cjk", f'"{corpus.marker(i if i < 100 else i - 100)}"')
        assert ar.indexes.integrity_check() == ALL_OK
