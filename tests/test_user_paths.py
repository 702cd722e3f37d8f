"""What a user meets end to end: CLI edge cases, hit fields, session_search on awkward content.

Each test names the behaviour it guards; all of them go through the public
surface (the CLI as a subprocess, ``Archive``, ``session_search``, the agent
tool's definition).
"""
from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
import warnings

import pytest

import cjk_tokenizer
from cjk_tokenizer import Archive, QueryError, parse_query
from cjk_tokenizer.agent_tool import DESCRIPTION, parameters_schema
from cjk_tokenizer.demo import run_demo
from cjk_tokenizer.export import export
from cjk_tokenizer.session_search import HIT_CHARS, MARKS, session_search

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the package under test's copy (the installed one when the tests run from outside the checkout)
SAMPLE = os.path.join(os.path.dirname(os.path.abspath(cjk_tokenizer.__file__)), "data", "sample_archive.jsonl")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "cjk_tokenizer", *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("paths") / "a.db")
    assert cli("import", path, SAMPLE).returncode == 0
    return path


# ---- the CLI's read commands -------------------------------------------------------------

def test_search_accepts_a_query_that_starts_with_a_dash(db):
    proc = cli("search", db, "-部署", "--json", "--limit", "50")
    assert proc.returncode == 0, proc.stderr
    hits = json.loads(proc.stdout)
    assert hits and all("部署" not in h["snippet"] for h in hits)
    with Archive(db, readonly=True) as ar:
        assert {h["message_id"] for h in hits} == {h.message_id for h in ar.search("-部署", limit=50)}
    proc = cli("search", db, "-deploy", "--limit", "1")  # an ASCII exclusion too
    assert proc.returncode == 0, proc.stderr


def test_search_into_a_closed_pipe_exits_quietly(db):
    proc = subprocess.Popen([sys.executable, "-m", "cjk_tokenizer", "search", db, "-zzzz", "--limit", "1000",
                             "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdout.close()  # the reader is gone before the first line (as `| head -0`)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""


def test_read_commands_never_create_or_convert_and_name_the_path(tmp_path):
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    for args in (["search", str(empty), "部署"], ["explain", str(empty), "部署"]):
        proc = cli(*args)
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
        assert f"{empty} is not a cjk_tokenizer archive" in proc.stderr
    assert empty.stat().st_size == 0 and sorted(os.listdir(tmp_path)) == ["empty.db"]
    folder = tmp_path / "folder.db"
    folder.mkdir()
    proc = cli("search", str(folder), "部署")
    assert proc.returncode == 1 and f"{folder} is a directory" in proc.stderr and proc.stderr.count("\n") == 1
    # doctor keeps its host report and says what is wrong with the archive, naming it
    for bad in (folder, empty):
        proc = cli("doctor", str(bad))
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert "APSW" in proc.stdout and "extension loads into APSW" in proc.stdout
        assert any(line.startswith("BAD archive") and str(bad) in line for line in proc.stdout.splitlines())
    assert empty.stat().st_size == 0


# ---- roles --------------------------------------------------------------------------------

@pytest.mark.parametrize("roles", [["robot"], "Assistant", ["user", "bot"]])
def test_unknown_roles_are_an_error_everywhere(db, roles):
    with Archive(db, readonly=True) as ar:
        with pytest.raises(QueryError, match="unknown role"):
            ar.search("部署", roles=roles)
        err = ar.session_search(query="部署", roles=roles)["error"]
        assert err["code"] == "bad_argument" and err["argument"] == "roles"
        assert ar.search("部署", roles=["user", "assistant"])  # known roles still work


# ---- hits: title and score ----------------------------------------------------------------

def test_hit_has_session_title_and_a_score(db):
    with Archive(db, readonly=True) as ar:
        for query, route in (("部署 OR deploy", None), ("deploy OR log", "unicode61"), ("部署 OR deploy", "scan")):
            hits = ar.search(query, limit=20, route=route)
            assert hits
            for h in hits:
                assert h.title == ar.session(h.session_id)["title"]
            scores = [h.score for h in hits]
            if route == "scan":
                assert all(s is None for s in scores)
            else:
                assert all(isinstance(s, float) for s in scores)
                assert scores == sorted(scores, reverse=True)  # higher is better, best first
        assert all(h.score is None for h in ar.search("部署", sort="newest"))


# ---- session_search: focus on the real match, unambiguous markers ------------------------

PAD = "这段填充文字没有要找的词。" * 400


def test_long_hit_is_cut_around_the_real_match_despite_markdown_bold(tmp_path):
    content = "**注意**：开头的粗体。" + PAD + "**注意** 这里才有 回滚方案 的说明。" + PAD
    assert len(content) > 4 * HIT_CHARS
    with Archive(tmp_path / "b.db") as ar:
        ar.add_message("s", "user", "前一条")
        mid = ar.add_message("s", "assistant", content)
        for extension in (True, False):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                other = Archive(ar.path, extension=extension)
            with other:
                out = session_search(other, query="回滚方案", window=0)
                hit = out["sessions"][0]
                shown = next(m for m in hit["window"] if m["id"] == mid)
                assert "回滚方案" in shown["content"], (extension, shown["content"][:200])
                assert shown["cut"]["content"] > 0
                assert "⟦回滚方案⟧" in hit["hit"]["snippet"] and hit["hit"]["marks"] == ["⟦", "⟧"]
                assert "**注意**" in hit["hit"]["snippet"]  # the content's own markdown stays as it is


def test_markers_never_collide_with_the_content(tmp_path):
    with Archive(tmp_path / "m.db") as ar:
        ar.add_message("s", "user", "数学记号 ⟦x⟧ 与 needle ⟪y⟫ 并存")
        hit = ar.session_search(query="needle")["sessions"][0]["hit"]
        opening, closing = hit["marks"]
        assert (opening, closing) == MARKS[2]
        assert hit["snippet"].count(opening) == 1 and hit["snippet"].count(closing) == 1
        assert hit["snippet"].split(opening)[1].split(closing)[0] == "needle"


def test_long_tool_call_is_cut_around_the_match(tmp_path):
    args = {"path": "/var/log/app.log", "lines": ["填充 line"] * 600 + ["the needleword is here"] + ["x"] * 600}
    with Archive(tmp_path / "t.db") as ar:
        mid = ar.add_message("s", "assistant", "calling",
                             tool_calls=[{"id": "c1", "type": "function",
                                          "function": {"name": "read", "arguments": json.dumps(args)}}])
        out = ar.session_search(query="needleword", window=0)
        shown = next(m for m in out["sessions"][0]["window"] if m["id"] == mid)
        assert "needleword" in shown["tool_calls"] and shown["cut"]["tool_calls"] > 0


# ---- messages written by another tool without a sessions row -----------------------------

def test_message_without_a_session_row_is_shown(tmp_path):
    path = str(tmp_path / "f.db")
    with Archive(path, indexes=("unicode61", "trigram")) as ar:
        ar.add_message("known", "user", "an ordinary message")
    std = sqlite3.connect(path)  # foreign keys are off by default here
    std.execute("INSERT INTO messages(session_id, role, content, timestamp) VALUES "
                "('foreign', 'user', 'written elsewhere: zebrafinch', 1714521600)")
    std.commit()
    with Archive(path) as ar:  # the triggers made the session's row
        assert ar.session("foreign")["started_at"] == 1714521600.0
    std.execute("DELETE FROM sessions WHERE id = 'foreign'")  # nothing stops it here either
    std.commit()
    std.close()
    with Archive(path) as ar:
        dump = io.StringIO()
        assert export(ar, dump) == 2 and '{"type": "session", "id": "foreign"}' in dump.getvalue()
        assert [h.session_id for h in ar.search("zebrafinch")] == ["foreign"]
        out = ar.session_search(query="zebrafinch")
        assert [s["session"]["session_id"] for s in out["sessions"]] == ["foreign"], out
        assert out["hits_considered"] == 1 and "note" in out["sessions"][0]["session"]
        mid = out["sessions"][0]["hit"]["message_id"]
        scroll = ar.session_search(around_message_id=mid)
        assert "error" not in scroll and scroll["messages"][0]["id"] == mid
        read = ar.session_search(session_id="foreign")
        assert "error" not in read and read["total_messages"] == 1


# ---- the tool description says how OR binds ----------------------------------------------

def test_tool_description_states_or_precedence_and_the_parser_agrees():
    assert "`部署 OR deploy 失败` means `部署 OR (deploy AND 失败)`" in DESCRIPTION
    assert "a OR b c is a OR (b AND c)" in parameters_schema()["properties"]["query"]["description"]
    assert str(parse_query("部署 OR deploy 失败")) == str(parse_query("部署 OR (deploy 失败)"))
    assert str(parse_query("部署 OR deploy 失败")) != str(parse_query("(部署 OR deploy) 失败"))


# ---- demo -------------------------------------------------------------------------------

@pytest.mark.parametrize("scale", ["0", "-3", "x"])
def test_demo_refuses_a_bad_scale(scale):
    proc = cli("demo", "--scale", scale)
    assert proc.returncode == 2 and "--scale" in proc.stderr and "Traceback" not in proc.stderr


def test_demo_says_what_it_shows():
    with pytest.raises(ValueError, match="scale must be an integer of at least 1"):
        run_demo(scale=0)
    lines = []
    assert run_demo(scale=2, out=lines.append) == 0
    text = "\n".join(lines)
    assert "synthetic haystack" in text and "--keep PATH" in text
    hit_lines = [l for l in lines if l.startswith("  message ")]
    assert hit_lines and not any(l.lstrip().startswith("#") for l in lines)
