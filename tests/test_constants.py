"""One definition per constant: the CLI's choices, the agent tool's schema and the API's checks
all come from cjk_tokenizer.constants, so a name accepted by one entry point is accepted by all."""
from __future__ import annotations

import argparse
import inspect
import os
import re

import pytest

import cjk_tokenizer
from cjk_tokenizer import _native, compiler, constants, export, schema, search, tokenize
from cjk_tokenizer.agent_tool import SESSION_SEARCH_TOOL_OPENAI
from cjk_tokenizer.archive import Archive
from cjk_tokenizer.cli import build_parser
from cjk_tokenizer.errors import QueryError
from cjk_tokenizer.importers import FORMAT_CHOICES
from cjk_tokenizer.records import MESSAGE_COLUMNS, InputError, MessageRow, message_row
from cjk_tokenizer.session_search import ARGUMENTS, parse_arguments, session_search

PACKAGE = os.path.dirname(os.path.abspath(cjk_tokenizer.__file__))


def _options(command: str) -> dict[str, argparse.Action]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {opt: action for action in sub.choices[command]._actions for opt in action.option_strings}


@pytest.mark.parametrize("command, option, expected", [
    ("search", "--role", constants.ROLES),
    ("search", "--sort", constants.SORTS),
    ("search", "--route", constants.ROUTES),
    ("rebuild", "--route", constants.FTS_ROUTES),
    ("tokenize", "--mode", constants.TOKENIZE_MODES),
    ("import", "--format", FORMAT_CHOICES),
    ("export", "--format", export.FORMATS),
])
def test_cli_choices_are_the_api_constants(command, option, expected):
    assert tuple(_options(command)[option].choices) == tuple(expected)


def test_cli_defaults_are_the_api_defaults():
    assert _options("search")["--sort"].default == constants.DEFAULT_SORT
    assert inspect.signature(search.run_search).parameters["sort"].default == constants.DEFAULT_SORT
    assert inspect.signature(Archive.search).parameters["sort"].default == constants.DEFAULT_SORT
    assert _options("tokenize")["--mode"].default == inspect.signature(tokenize).parameters["mode"].default


def test_agent_tool_schema_lists_the_constants_and_the_arguments():
    props = SESSION_SEARCH_TOOL_OPENAI["function"]["parameters"]["properties"]
    assert props["roles"]["items"]["enum"] == list(constants.ROLES)
    assert props["sort"]["enum"] == list(constants.SORTS)
    assert tuple(props) == ARGUMENTS
    assert tuple(p for p in inspect.signature(session_search).parameters if p != "archive") == ARGUMENTS


def test_the_api_uses_the_same_objects():
    assert search.SORTS is constants.SORTS
    assert compiler.ROUTES is constants.ROUTES and compiler.FTS_ROUTES is constants.FTS_ROUTES
    assert tuple(schema.FTS_INDEXES) == constants.FTS_ROUTES


def test_every_role_and_sort_is_accepted_and_nothing_else(tmp_path):
    with Archive(tmp_path / "a.db", indexes=constants.FTS_ROUTES) as ar:
        for role in constants.ROLES:
            ar.add_message("s", role, f"部署失败 deploy {role}")
        with pytest.raises(InputError, match="role must be one of"):
            ar.add_message("s", "narrator", "部署")
        for sort in constants.SORTS:
            assert len(ar.search("部署", sort=sort)) == len(constants.ROLES)
            assert parse_arguments({"query": "部署", "sort": sort}).sort == sort
        with pytest.raises(QueryError):
            ar.search("部署", sort="random")
        for role in constants.ROLES:
            assert [h.role for h in ar.search("部署", roles=[role])] == [role]
            assert parse_arguments({"query": "部署", "roles": role}).roles == (role,)
        can_express = {"cjk": "部署", "unicode61": "deploy", "trigram": "部署失败", "scan": "部署"}
        assert tuple(can_express) == constants.ROUTES
        for route, query in can_express.items():
            assert len(ar.search(query, route=route)) == len(constants.ROLES), route
        with pytest.raises(QueryError, match="unknown route"):
            ar.search("deploy", route="fastest")


# Literal spellings of the constants that only constants.py may hold.
COPIES = {
    "ROLES": r'"system",\s*"developer",\s*"user",\s*"assistant",\s*"tool"',
    "SORTS": r'"relevance",\s*"newest",\s*"oldest"',
    "FTS_ROUTES": r'"cjk",\s*"unicode61",\s*"trigram"',
    "the gap token": r'"\\x1e"',
    "FTS5 tokenize flags": r"\b0x000[1-8]\b",
}


@pytest.mark.parametrize("name", COPIES)
def test_no_module_keeps_its_own_copy(name):
    found = []
    for folder, _, files in os.walk(PACKAGE):
        for f in files:
            path = os.path.join(folder, f)
            if f.endswith(".py") and path != os.path.join(PACKAGE, "constants.py"):
                with open(path, encoding="utf-8") as fh:
                    if re.search(COPIES[name], fh.read()):
                        found.append(os.path.relpath(path, PACKAGE))
    assert not found, f"{name} spelled out again in {found}; import it from cjk_tokenizer.constants"


def test_the_cli_shows_the_c_gap_token(capsys):
    gap = _native.gap_token()
    assert [t for t, *_ in tokenize("中文。文字")].count(gap) == 1  # the runs share 文: kept apart
    args = build_parser().parse_args(["tokenize", "中文。文字"])
    assert args.func(args) == 0
    assert f"{repr(gap)[1:-1]} (gap)\t6-9\t'。'" in capsys.readouterr().out


def test_message_rows_name_the_messages_table_columns(tmp_path):
    with Archive(tmp_path / "a.db") as ar:
        table = [r[1] for r in ar.conn.execute("PRAGMA table_info(messages)")]
    assert table == ["id", *MESSAGE_COLUMNS]
    row = message_row("s", "user", "部署", tool_calls=[{"id": "c1"}], timestamp_=1.5)
    assert isinstance(row, MessageRow) and row.session_id == "s" and row.timestamp == 1.5
    assert row.tool_calls == '[{"id": "c1"}]' and row.text_chars() == len("部署") + len(row.tool_calls)
