"""The sqlite-utils plugin, through sqlite-utils' CLI (subprocesses) and Python API.

No ``--load-extension`` anywhere: the plugin's ``prepare_connection`` hook
loads the extension.  Needs sqlite-utils and this package installed in the
running Python; the working path also needs a sqlite3 that loads extensions
(CI: the ``plugins`` stage, Debian's python3).
"""
from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import _plugin_hosts as hosts  # noqa: E402

TOOL = "sqlite-utils"
ROWS = [
    {"id": 1, "body": "大别山项目管理"},  # 大 starts a run
    {"id": 2, "body": "这个改动很大"},  # 大 ends a run
    {"id": 3, "body": "伟大的工程"},  # 大 inside a run
    {"id": 4, "body": "hello world"},
    {"id": 5, "body": "大"},  # a run of one
]
HAS_BIG = [1, 2, 3, 5]


@pytest.fixture(autouse=True)
def _plugin_installed():
    hosts.require_plugin("sqlite_utils", "sqlite_utils")


def _cli(args, cwd, ok=True):
    res = hosts.run_tool("sqlite-utils", args, cwd)
    if ok:
        assert res.returncode == 0, res.stderr
    return res


def _ids(res):
    return sorted(r["id"] for r in json.loads(res.stdout or "[]"))


@pytest.fixture
def docs(tmp_path):
    """docs.db made by the CLI: insert, enable-fts with our tokenizer and triggers."""
    hosts.require_loading()
    (tmp_path / "rows.json").write_text(json.dumps(ROWS[:4], ensure_ascii=False), encoding="utf-8")
    _cli(["insert", "docs.db", "docs", "rows.json", "--pk", "id"], tmp_path)
    _cli(["enable-fts", "docs.db", "docs", "body", "--tokenize", "cjk_unicode61", "--create-triggers"], tmp_path)
    # an insert after the triggers exist goes through them into the cjk table
    (tmp_path / "more.json").write_text(json.dumps(ROWS[4:], ensure_ascii=False), encoding="utf-8")
    _cli(["insert", "docs.db", "docs", "more.json", "--pk", "id"], tmp_path)
    return tmp_path


def test_cli_search_one_character_finds_every_row(docs):
    assert _ids(_cli(["search", "docs.db", "docs", "大"], docs)) == HAS_BIG
    assert _ids(_cli(["search", "docs.db", "docs", "大", "--quote"], docs)) == HAS_BIG


def test_cli_search_words_and_fts_syntax_unchanged(docs):
    assert _ids(_cli(["search", "docs.db", "docs", "项目"], docs)) == [1]
    assert _ids(_cli(["search", "docs.db", "docs", "hello"], docs)) == [4]
    assert _ids(_cli(["search", "docs.db", "docs", "大 NOT 工程"], docs)) == [1, 2, 5]  # 大 is "大"* there too
    assert _ids(_cli(["search", "docs.db", "docs", '"大别"*'], docs)) == [1]
    sql = _cli(["search", "docs.db", "docs", "大", "--sql"], docs).stdout
    assert "match cjk_query(:query)" in sql


def test_cli_search_one_character_terms_inside_longer_queries(docs):
    # each one-character phrase is the prefix form, wherever it stands in the FTS5 query
    assert _ids(_cli(["search", "docs.db", "docs", "大 项目"], docs)) == [1]
    assert _ids(_cli(["search", "docs.db", "docs", "body:大"], docs)) == HAS_BIG
    assert _ids(_cli(["search", "docs.db", "docs", '"大" OR hello'], docs)) == [1, 2, 3, 4, 5]
    assert _ids(_cli(["search", "docs.db", "docs", "NEAR(大 工程)"], docs)) == [3]
    assert _ids(_cli(["search", "docs.db", "docs", "大 学", "--quote"], docs)) == []
    assert _ids(_cli(["search", "docs.db", "docs", '"大,"'], docs)) == HAS_BIG


def test_cjk_query_rewrites_only_one_character_phrases():
    from cjk_tokenizer.plugins.sqlite_utils import cjk_query

    assert cjk_query("大 学") == '"大"* "学"*'
    assert cjk_query("{body}: 大 OR NEAR(学 x, 3)") == '{body}: "大"* OR NEAR("学"* x, 3)'
    for q in ["大*", '"大"*', "大 + 学", "大学 项目", '"a ""大"" b"', "{大}: x", 'unterminated "大', "hello"]:
        assert cjk_query(q) == q, q
    # right after a string, the rewritten phrase stands apart ("a""大" would be one phrase: a 大)
    assert cjk_query('"a"大') == '"a" "大"*' and cjk_query('"大 学"小') == '"大 学" "小"*'
    # FTS5 reads a query up to its first NUL: so does the rewrite
    assert cjk_query('大\x00"') == '"大"*'


def test_cli_integrity_after_trigger_inserts(docs):
    res = _cli(["query", "docs.db", "INSERT INTO docs_fts(docs_fts) VALUES ('integrity-check')"], docs)
    assert res.returncode == 0


def test_python_api(tmp_path):
    hosts.require_loading()
    import sqlite_utils

    db = sqlite_utils.Database(tmp_path / "api.db")
    db["docs"].insert_all(ROWS[:3], pk="id")
    db["docs"].enable_fts(["body"], tokenize="cjk_unicode61", create_triggers=True)
    db["docs"].insert_all(ROWS[3:], pk="id")
    assert sorted(r["id"] for r in db["docs"].search("大")) == HAS_BIG
    assert sorted(r["id"] for r in db["docs"].search("大", quote=True)) == HAS_BIG
    assert [r["id"] for r in db["docs"].search("项目")] == [1]
    # a table with another tokenizer keeps sqlite-utils' own SQL and meaning
    db["plain"].insert_all(ROWS, pk="id")
    db["plain"].enable_fts(["body"])
    assert "cjk_query" not in db["plain"].search_sql()
    assert [r["id"] for r in db["plain"].search("大")] == [5]  # unicode61: only the whole-run token
    # a Database opened without plugins has no cjk_query: its SQL stays sqlite-utils' own
    bare = sqlite_utils.Database(tmp_path / "api.db", execute_plugins=False)
    assert "cjk_query" not in bare["docs"].search_sql()


def test_no_extension_loading_says_so_in_one_line(tmp_path):
    if hosts.CAN_LOAD:
        pytest.skip("this Python's sqlite3 loads extensions: nothing to say")
    (tmp_path / "rows.json").write_text(json.dumps(ROWS, ensure_ascii=False), encoding="utf-8")
    res = _cli(["insert", "docs.db", "docs", "rows.json", "--pk", "id"], tmp_path)
    lines = hosts.notice_lines(res.stderr, TOOL)
    assert len(lines) == 1, res.stderr
    assert "built without extension loading" in lines[0] and hosts.names_this_python(lines[0]), lines[0]
    # the later failure still happens, but the reason was said first, once
    res = _cli(["enable-fts", "docs.db", "docs", "body", "--tokenize", "cjk_unicode61"], tmp_path, ok=False)
    assert res.returncode != 0
    assert len(hosts.notice_lines(res.stderr, TOOL)) == 1
    assert res.stderr.index("cjk_tokenizer:") < res.stderr.index("no such tokenizer")
