"""Reading an archive that cannot (or must not) be written, and what an archive path may be.

``Archive(path, readonly=True)`` must never write; an archive whose file or
folder is not writable must open read-only by itself (for ``search``,
``session_search`` and the CLI's read commands), and a write must then be a
clear error naming the path.  The tests run as root, whom permission bits do
not stop, so "not writable" is made real with a read-only bind mount inside a
user namespace (``unshare -rm``): the kernel refuses every write there, for
root too.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from cjk_tokenizer import Archive, ArchiveError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _digest(path) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture
def archive_file(tmp_path):
    path = tmp_path / "ro" / "a.db"
    path.parent.mkdir()
    with Archive(path) as ar:
        ar.add_session("s1", title="部署排查")
        ar.add_message("s1", "user", "部署失败了，怎么回滚？", timestamp=1714521600)
        ar.add_message("s1", "assistant", "先看日志 deploy.log", timestamp=1714521660)
    return str(path)


def test_readonly_true_reads_and_never_writes(archive_file):
    before = _digest(archive_file)
    with Archive(archive_file, readonly=True) as ar:
        assert ar.readonly
        assert [h.message_id for h in ar.search("部署")] == [1]
        found = ar.session_search(query="回滚")
        assert found["sessions"][0]["session"]["session_id"] == "s1", found
        writes = [
            lambda: ar.add_message("s1", "user", "x"),
            lambda: ar.add_session("s2"),
            lambda: ar.update_session("s1", title="t"),
            lambda: ar.bulk_import([{"session_id": "s1", "role": "user", "content": "x"}]),
            lambda: ar.update_message(1, content="x"),
            lambda: ar.delete_message(1),
            lambda: ar.delete_session("s1"),
            lambda: ar.indexes.catch_up(),
            lambda: ar.indexes.rebuild(),
            lambda: ar.indexes.add("trigram"),
            lambda: ar.indexes.drop("cjk"),  # an index the (lean) default archive has
            lambda: ar.indexes.pause("cjk"),
        ]
        for write in writes:
            with pytest.raises(ArchiveError, match=f"^{archive_file} is open read-only") as exc:
                write()
            assert "\n" not in str(exc.value)
        assert ar.indexes.integrity_check()["database"] == "ok"
        assert ar.count_messages() == 2
    assert _digest(archive_file) == before


def test_readonly_true_never_creates_or_converts(tmp_path):
    missing = tmp_path / "missing.db"
    with pytest.raises(ArchiveError, match="missing.db: no such archive"):
        Archive(missing, readonly=True)
    assert not missing.exists()
    with pytest.raises(ArchiveError, match="missing.db: no such archive"):
        Archive(missing, create=False)
    assert not missing.exists()  # not even an empty file is left behind
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    with pytest.raises(ArchiveError, match="empty.db is not a cjk_tokenizer archive"):
        Archive(empty, readonly=True)
    with pytest.raises(ArchiveError, match="empty.db is not a cjk_tokenizer archive"):
        Archive(empty, create=False)
    assert empty.stat().st_size == 0
    with pytest.raises(ArchiveError, match=f"^{tmp_path} is a directory"):
        Archive(tmp_path, readonly=True)
    with pytest.raises(ArchiveError, match=f"^{tmp_path} is a directory"):
        Archive(tmp_path)


@pytest.mark.parametrize("bad", [None, 42, 4.2, b"a.db", sqlite3.connect(":memory:"), ["a.db"]],
                         ids=lambda v: type(v).__name__)
def test_archive_path_must_be_a_path(tmp_path, bad):
    before = set(os.listdir(tmp_path))
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with pytest.raises(TypeError, match="path must be a str or os.PathLike"):
            Archive(bad)
    finally:
        os.chdir(cwd)
    assert set(os.listdir(tmp_path)) == before  # no file named "None", "42", "<sqlite3.Connection …>"


def test_archive_path_forms_that_work(tmp_path):
    with Archive(":memory:") as ar:
        ar.add_message("s", "user", "x")
    with Archive(tmp_path / "p.db") as ar:  # os.PathLike
        assert ar.path == str(tmp_path / "p.db")
    with pytest.raises(ValueError, match="path is empty"):
        Archive("")


# ---- unwritable for real: a read-only bind mount in a user namespace ----------------------

def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    return probe.returncode == 0


needs_unshare = pytest.mark.skipif(not _unshare_works(),
                                   reason="unshare -rm (user + mount namespaces) is not permitted here")

READER = textwrap.dedent("""
    import json, sys, warnings
    from cjk_tokenizer import Archive, ArchiveError
    path = sys.argv[1]
    out = {}
    with Archive(path) as ar:
        out["readonly"] = ar.readonly
        out["hits"] = [h.message_id for h in ar.search("部署")]
        found = ar.session_search(query="回滚")
        out["session_search"] = [s["session"]["session_id"] for s in found.get("sessions", [])] or found
        try:
            ar.add_message("s1", "user", "x")
            out["write"] = "written"
        except ArchiveError as exc:
            out["write"] = str(exc)
    print(json.dumps(out))
""")


def _in_readonly_mount(mount_src: str, mount_dst: str, *command: str) -> subprocess.CompletedProcess:
    script = f'mount --bind -o ro "{mount_src}" "{mount_dst}" && exec "$@"'
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", *command], capture_output=True, text=True,
                          timeout=120, env=env, cwd=ROOT)


@needs_unshare
@pytest.mark.parametrize("what", ["folder", "file"])
def test_unwritable_archive_opens_read_only_by_itself(archive_file, what):
    target = os.path.dirname(archive_file) if what == "folder" else archive_file
    before = _digest(archive_file)
    proc = _in_readonly_mount(target, target, sys.executable, "-c", READER, archive_file)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["readonly"] is True and out["hits"] == [1] and out["session_search"] == ["s1"], out
    assert out["write"].startswith(f"{archive_file} is open read-only (the file or its folder is not writable)")
    assert _digest(archive_file) == before


@needs_unshare
@pytest.mark.parametrize("what", ["folder", "file"])
def test_cli_read_commands_work_on_an_unwritable_archive(archive_file, what):
    target = os.path.dirname(archive_file) if what == "folder" else archive_file
    for args in (["search", archive_file, "部署", "--json"], ["explain", archive_file, "部署"],
                 ["doctor", archive_file]):
        proc = _in_readonly_mount(target, target, sys.executable, "-m", "cjk_tokenizer", *args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
        if args[0] == "search":
            assert [h["message_id"] for h in json.loads(proc.stdout)] == [1]
        if args[0] == "doctor":
            assert f"{archive_file} (read-only): 1 sessions, 2 messages" in proc.stdout
    # a write command says which file it could not write
    proc = _in_readonly_mount(target, target, sys.executable, "-m", "cjk_tokenizer", "rebuild", archive_file)
    assert proc.returncode == 1 and archive_file in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr


def _as_a_plain_user(*command: str) -> subprocess.CompletedProcess:
    """``command`` with file permissions enforced, as they are for a user who is not root."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    prefix = []
    if os.geteuid() == 0:
        drop = "-dac_override,-dac_read_search,-fowner"
        prefix = ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}", "--"]
    return subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)


needs_setpriv = pytest.mark.skipif(os.geteuid() == 0 and shutil.which("setpriv") is None,
                                   reason="root without setpriv: permissions cannot be enforced")


@needs_setpriv
@pytest.mark.parametrize("folder_mode", [0o555, 0o755])
def test_an_archive_nobody_may_write_opens_read_only_and_leaves_nothing_beside_it(archive_file, folder_mode):
    # chmod 0444 in a 0555 folder (a backup) failed to open ("attempt to write a readonly database");
    # in a writable folder it left -wal/-shm made 0444 too, which broke the owner's next write
    folder = os.path.dirname(archive_file)
    os.chmod(archive_file, 0o444)
    os.chmod(folder, folder_mode)
    try:
        proc = _as_a_plain_user(sys.executable, "-c", READER, archive_file)
        assert proc.returncode == 0, proc.stderr
        out = json.loads(proc.stdout)
        assert out["readonly"] is True and out["hits"] == [1] and out["session_search"] == ["s1"], out
        assert sorted(os.listdir(folder)) == ["a.db"]
    finally:
        os.chmod(folder, 0o755)
        os.chmod(archive_file, 0o644)
    with Archive(archive_file) as ar:  # the owner writes again
        assert not ar.readonly and ar.add_message("s1", "user", "再部署一次") == 3


def test_a_uri_for_a_path_is_refused_not_made_into_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="looks like an SQLite URI"):
        Archive("file:u.db?mode=ro")
    assert os.listdir(tmp_path) == []


def test_messages_of_refuses_an_id_that_is_not_one(archive_file):
    with Archive(archive_file) as ar:
        for bad in ("x", 1.5, True):
            with pytest.raises(ValueError, match="after_id must be a message id"):
                ar.messages_of("s1", after_id=bad)
        assert [m["id"] for m in ar.messages_of("s1", after_id=-(2**70), before_id=2**70)] == [1, 2]


@needs_unshare
def test_a_wal_with_commits_in_a_folder_sqlite_cannot_write_is_refused_not_read_without_them(tmp_path):
    # copied as file + -wal without its -shm (a backup habit) into a read-only folder: read
    # with immutable=1 it lost, without a word, every commit still in the log
    src, folder = str(tmp_path / "a.db"), tmp_path / "copy"
    folder.mkdir()
    with Archive(src) as ar:
        ar.conn.execute("PRAGMA wal_autocheckpoint = 0")
        for k in range(5):
            ar.add_message("s1", "user", f"部署日志 {k}")
        assert os.path.getsize(src + "-wal") > 0
        shutil.copy(src, folder / "a.db")
        shutil.copy(src + "-wal", folder / "a.db-wal")
    copy = str(folder / "a.db")
    for args in (["search", copy, "部署"], ["doctor", copy], ["export", copy]):
        proc = _in_readonly_mount(str(folder), str(folder), sys.executable, "-m", "cjk_tokenizer", *args)
        said = proc.stdout if args[0] == "doctor" else proc.stderr  # doctor reports on stdout
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert "write-ahead log" in said and copy in said and "Traceback" not in proc.stderr, (args, said)
    # where the log can be read, every commit is there
    with Archive(copy) as ar:
        assert len(ar.search("部署")) == 5


def test_indexes_naming_what_a_read_only_archive_has_is_no_error(archive_file):
    # a program that always passes its index set could not read a read-only copy
    with Archive(archive_file, readonly=True, indexes=("cjk", "unicode61")) as ar:
        assert ar.search("部署")
    with pytest.raises(ValueError, match="read-only archive cannot"):
        Archive(archive_file, readonly=True, indexes=("cjk", "unicode61", "trigram"))


@pytest.mark.parametrize("kw, message", [
    ({"indexes": ["cjk"]}, "indexes must include unicode61"),
    ({"auto_catch_up": "x"}, "auto_catch_up must be a number >= 0"),
    ({"busy_timeout": "x" * 1000}, "busy_timeout must be a number >= 0"),
    ({"busy_timeout": -1}, "busy_timeout must be a number >= 0"),
])
def test_a_bad_argument_is_named_and_leaves_no_file(tmp_path, kw, message):
    # they left a database (a 94 KB archive for auto_catch_up) behind, or a raw TypeError
    with pytest.raises(ValueError, match=message) as err:
        Archive(tmp_path / "a.db", **kw)
    assert len(str(err.value)) < 250 and os.listdir(tmp_path) == []
