"""The command line: every subcommand works from a shell, errors are one line and a non-zero exit."""
import json
import os
import shlex
import subprocess
import sys

import pytest

import cjk_tokenizer
from cjk_tokenizer import loadable_path
from cjk_tokenizer.archive import Archive
from cjk_tokenizer.constants import MMAP_SIZE

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the package under test's copy (the installed one when the tests run from outside the checkout)
SAMPLE = os.path.join(os.path.dirname(os.path.abspath(cjk_tokenizer.__file__)), "data", "sample_archive.jsonl")
COMMANDS = ["path", "tokenize", "search", "import", "sync", "export", "explain", "doctor", "rebuild", "mcp", "demo"]


def cli(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "cjk_tokenizer", *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr}")
    return proc


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("cli") / "a.db")
    Archive(path, indexes=("cjk", "unicode61", "trigram")).close()  # trigram is opt-in; the routes test uses it
    out = cli("import", path, SAMPLE).stdout
    assert "imported 27 messages in 6 sessions from 1 source" in out
    return path


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command):
    proc = cli(command, "--help")
    assert proc.stdout.startswith("usage: cjk-tokenizer " + command)


def test_path_prints_the_plain_library():
    assert cli("path").stdout.strip() == loadable_path()


def test_tokenize_shows_bigrams_colocated_unigram_and_offsets():
    lines = cli("tokenize", "大别山abc").stdout.splitlines()
    assert lines[0].split("\t")[:2] == ["大别", "0-6"]
    assert lines[1].split("\t")[:2] == ["别山", "3-9"]
    assert lines[2].split("\t")[:2] == ["  +山", "6-9"]
    assert lines[3].split("\t")[:2] == ["abc", "9-12"]
    query = cli("tokenize", "大别山", "--mode", "query").stdout
    assert "+山" not in query


def test_tokenize_rejects_bad_arguments_in_one_line():
    proc = cli("tokenize", "x", "--arg", "remove_diacritics", "--arg", "7", check=False)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1 and "remove_diacritics must be 0, 1 or 2" in proc.stderr


def test_import_then_search_finds_cjk_and_reports_reasoning(db):
    hits = json.loads(cli("search", db, "项目", "--json").stdout)
    assert hits and all("项目" in h["snippet"] for h in hits)
    assert {h["route"] for h in hits} == {"cjk"}
    assert cli("search", db, "合肥", "--json").stdout.strip() == "[]"
    hits = json.loads(cli("search", db, "合肥", "--reasoning", "--json").stdout)
    assert hits and all(h["matched_in"] == ["reasoning"] for h in hits)
    text = cli("search", db, "合肥", "--reasoning").stdout
    assert "(thought)" in text


def test_search_filters_and_sort(db):
    newest = json.loads(cli("search", db, "迁移", "--sort", "newest", "--json").stdout)
    oldest = json.loads(cli("search", db, "迁移", "--sort", "oldest", "--json").stdout)
    assert [h["message_id"] for h in newest] == sorted((h["message_id"] for h in newest), reverse=True)
    assert [h["message_id"] for h in oldest] == sorted(h["message_id"] for h in oldest)
    users = json.loads(cli("search", db, "部署", "--role", "user", "--json").stdout)
    assert users and {h["role"] for h in users} == {"user"}
    one = json.loads(cli("search", db, "worker.join OR 비빔밥", "--session", "s-seoul", "--json").stdout)
    assert one and {h["session_id"] for h in one} == {"s-seoul"}


def test_forced_routes_agree(db):
    ids = {}
    for route in ("cjk", "trigram", "scan"):
        hits = json.loads(cli("search", db, "天堂寨", "--route", route, "--json").stdout)
        ids[route] = sorted(h["message_id"] for h in hits)
    assert ids["cjk"] and ids["cjk"] == ids["trigram"] == ids["scan"]


def test_explain_names_the_route(db):
    plan = json.loads(cli("explain", db, "项目").stdout)
    assert plan["route"] == "cjk"


def test_explain_sql_prints_the_statement_a_search_runs(db):
    import apsw

    found = [h["message_id"] for h in json.loads(cli("search", db, "项目", "--json").stdout)]
    printed = cli("explain", db, "项目", "--sql").stdout
    assert found and printed.rstrip().endswith(";") and "--" not in printed
    conn = cjk_tokenizer.load(apsw.Connection(db))
    assert [row[0] for row in conn.execute(printed)] == found
    conn.close()


def test_explain_sql_of_a_walk_prints_one_statement_finding_the_same_rows(tmp_path):
    # without the cjk index a search walks the messages in stretches; the first stretch alone missed
    # message 1 when pasted
    path = str(tmp_path / "walk.db")
    with Archive(path) as ar:
        ar.add_message("s", "user", "辻村さんの会議")
        ar.add_messages("t", [{"role": "user", "content": f"filler {i}"} for i in range(3000)])
        ar.indexes.drop("cjk")
    found = [h["message_id"] for h in json.loads(cli("search", path, "辻村", "--json").stdout)]
    printed = cli("explain", path, "辻村", "--sql").stdout
    comments = [line for line in printed.splitlines() if line.startswith("--")]
    assert found == [1] and any(line.startswith("-- the search walks") for line in comments)
    with Archive(path) as ar:
        from cjk_tokenizer.search import ensure_functions

        ensure_functions(ar.conn)
        statement = "\n".join(line for line in printed.splitlines() if not line.startswith("--"))
        assert [row[0] for row in ar.conn.execute(statement)] == found


def test_rebuild_catches_up_an_index_left_stale(db, tmp_path):
    path = str(tmp_path / "stale.db")
    cli("import", path, SAMPLE)
    with Archive(path, extension=False) as ar:
        ar.add_message("s-new", "user", "新加的消息：黄山旅游")
        assert "cjk" not in ar.indexes.live()
    proc = cli("rebuild", path)
    assert "cjk: live" in proc.stdout
    hits = json.loads(cli("search", path, "黄山", "--json").stdout)
    assert [h["route"] for h in hits] == ["cjk"]
    full = cli("rebuild", path, "--full", "--route", "cjk")
    assert "cjk: live" in full.stdout


def test_doctor_reports_host_and_archive(db):
    proc = cli("doctor", db, "--integrity", check=False)
    assert "extension loads into APSW" in proc.stdout
    assert "index cjk" in proc.stdout and "integrity cjk" in proc.stdout
    lines = [l for l in proc.stdout.splitlines() if l.startswith("BAD")]
    assert proc.returncode == (1 if lines else 0)
    assert not [l for l in lines if "index" in l or "integrity" in l or "APSW" in l], lines


@pytest.mark.parametrize("args, message", [
    (["search", "/nonexistent/x.db", "项目"], "no such archive"),
    (["import", "{db}", "/nonexistent/file.jsonl"], "No such file"),
    (["search", "{db}", "!!!"], "nothing to search"),
])
def test_errors_are_one_line_and_nonzero(db, args, message):
    args = [a.replace("{db}", db) for a in args]
    proc = cli(*args, check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("cjk-tokenizer: error:") and proc.stderr.count("\n") == 1
    assert message.lower() in proc.stderr.lower()


def test_sqlite_errors_name_the_archive_and_odd_bytes_name_the_argument(db, tmp_path):
    broken = tmp_path / "broken.db"
    with open(db, "rb") as f:
        broken.write_bytes(f.read(20000))  # a truncated copy
    proc = cli("search", str(broken), "项目", check=False)
    assert proc.returncode == 1 and proc.stderr.startswith(f"cjk-tokenizer: error: {broken}: ") and \
        proc.stderr.count("\n") == 1, proc.stderr
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.run([sys.executable.encode(), b"-m", b"cjk_tokenizer", b"search", db.encode(), b"x",
                           b"--session", b"\xff"], capture_output=True, timeout=120, env=env, cwd=ROOT)
    assert proc.returncode == 1 and proc.stderr.decode() == \
        "cjk-tokenizer: error: session '\\udcff' is not UTF-8 text\n", proc.stderr


def test_an_interrupt_says_resume_only_where_there_is_something_to_resume(db, monkeypatch, capsys):
    from cjk_tokenizer import cli as cli_module

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_module, "_cmd_search", interrupted)
    assert cli_module.main(["search", db, "项目"]) == 130
    assert capsys.readouterr().err == "cjk-tokenizer: interrupted\n"


@pytest.mark.parametrize("command", [["search", "x"], ["explain", "x"], ["export"], ["rebuild"], ["sync"]])
def test_only_import_makes_a_missing_or_empty_file_an_archive(tmp_path, command):
    missing, empty = tmp_path / "missing.db", tmp_path / "empty.db"
    empty.write_bytes(b"")
    for path, message in ((missing, "no such archive"), (empty, "not a cjk_tokenizer archive")):
        proc = cli(command[0], str(path), *command[1:], check=False)
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
        assert message in proc.stderr and str(path) in proc.stderr
    assert not missing.exists() and empty.stat().st_size == 0
    cli("import", str(empty), SAMPLE)  # import creates archives, an empty file included
    cli(command[0], str(empty), *command[1:])  # then the command works on it
    with Archive(str(empty), readonly=True) as ar:
        assert ar.count_messages() == 27


def test_import_arguments_that_cannot_work_are_refused_before_any_archive_exists(tmp_path):
    # --batch-size 0 was refused after an empty archive was made, and :memory: "imported" into nothing
    target = tmp_path / "new.db"
    proc = cli("import", str(target), SAMPLE, "--batch-size", "0", check=False)
    assert proc.returncode == 2 and "--batch-size: must be at least 1, not 0" in proc.stderr and not target.exists()
    proc = cli("import", ":memory:", SAMPLE, check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "gone when the command ends" in proc.stderr
    assert not (tmp_path / ":memory:").exists() and not os.path.exists(os.path.join(ROOT, ":memory:"))


def test_fold_variants_on_an_archive_made_without_it_says_what_to_type(tmp_path):
    db = str(tmp_path / "a.db")
    cli("import", db, SAMPLE)
    proc = cli("import", db, SAMPLE, "--fold-variants", check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "leave out --fold-variants" in proc.stderr


def test_the_demo_kept_in_a_path_with_spaces_suggests_a_command_that_runs(tmp_path):
    kept = str(tmp_path / "演示 db.db")
    out = cli("demo", "--scale", "1", "--keep", kept).stdout
    suggested = out.rsplit("Try: ", 1)[1].strip()
    assert suggested.startswith("python -m cjk_tokenizer search ")
    args = shlex.split(suggested)[3:]
    assert args[1] == kept and "部署" in cli(*args).stdout


def test_import_reports_the_bad_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"session_id": "s", "role": "user", "content": "ok"}\n{not json\n', encoding="utf-8")
    proc = cli("import", str(tmp_path / "b.db"), str(bad), check=False)
    assert proc.returncode == 1 and "bad.jsonl:2" in proc.stderr


def test_demo_runs_and_shows_routes_hits_and_timings():
    proc = cli("demo", "--scale", "3")
    out = proc.stdout
    assert "extension loaded" in out
    assert "route cjk:" in out and "scan of the same archive" in out
    assert "THOUGHT in reasoning" in out  # the reasoning-only fact, labelled
    assert "大别山项目管理系统" in out and "ｼﾝｶﾝｾﾝ" in out and "비빔밥" in out


def test_mmap_size_sets_how_every_command_reads_the_archive(db):
    mapped = [l for l in cli("doctor", db).stdout.splitlines() if "memory map" in l]
    assert mapped and mapped[0].startswith("ok ") and f"up to {MMAP_SIZE:,} bytes" in mapped[0], mapped
    off = [l for l in cli("--mmap-size", "0", "doctor", db).stdout.splitlines() if "memory map" in l]
    assert off and "off: every read is a system call" in off[0], off
    small = [l for l in cli("--mmap-size", "1048576", "doctor", db).stdout.splitlines() if "memory map" in l]
    assert "up to 1,048,576 bytes" in small[0], small
    # a read and a write command give the same answers either way
    for args in (["search", db, "项目", "--json", "--sort", "newest"], ["explain", db, "项目"]):
        assert cli("--mmap-size", "0", *args).stdout == cli(*args).stdout
    assert "cjk: live" in cli("--mmap-size", "0", "rebuild", db).stdout


@pytest.mark.parametrize("value, message", [("-1", "mmap_size must be a whole number of bytes >= 0"),
                                            ("16G", "not a whole number of bytes: '16G'")])
def test_a_bad_mmap_size_is_a_one_line_usage_error(db, value, message):
    proc = cli("--mmap-size", value, "search", db, "项目", check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("cjk-tokenizer: error: argument --mmap-size:") and message in last, proc.stderr


@pytest.mark.parametrize("command", [["search", "{db}", "项目"], ["explain", "{db}", "项目"], ["export", "{db}"],
                                     ["rebuild", "{db}"], ["sync", "{db}"], ["import", "{db}", SAMPLE],
                                     ["doctor", "{db}"]])
def test_every_command_that_opens_db_opens_it_with_the_mmap_size_given(db, tmp_path, monkeypatch, capsys, command):
    from cjk_tokenizer import archive, cli as cli_module

    if command[0] in ("import", "sync", "rebuild"):  # commands that write get a copy of the archive
        copy = str(tmp_path / "copy.db")
        with Archive(db, auto_catch_up=0) as ar:
            ar.conn.execute("VACUUM INTO ?", (copy,))
        target = copy
    else:
        target = db
    opened = []
    real_init = archive.Archive.__init__

    def spy(self, path, **kw):
        real_init(self, path, **kw)
        opened.append(self.conn.execute("PRAGMA mmap_size").fetchone()[0])

    monkeypatch.setattr(archive.Archive, "__init__", spy)
    code = cli_module.main(["--mmap-size", "4096", *[a.replace("{db}", target) for a in command]])
    capsys.readouterr()
    assert code == 0 and opened and set(opened) == {4096}, (code, opened)
