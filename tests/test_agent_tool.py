"""The session_search tool as an agent sees it: its schema and the JSON-in/JSON-out handler."""
from __future__ import annotations

import inspect
import json
import re
import types

import pytest

from cjk_tokenizer import Archive, agent_tool
from cjk_tokenizer.agent_tool import (
    SESSION_SEARCH_TOOL_ANTHROPIC,
    SESSION_SEARCH_TOOL_OPENAI,
    handle_session_search,
    tool_definitions,
)
from cjk_tokenizer.constants import ROLES
from cjk_tokenizer.session_search import session_search

PARAMS = [p for p in inspect.signature(session_search).parameters if p != "archive"]


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    ar = Archive(tmp_path_factory.mktemp("tool") / "t.db")
    sid = ar.add_session("s1", title="部署", started_at=1_714_521_600)
    ar.add_message(sid, "user", "部署失败了，怎么回滚？", timestamp=1_714_521_601)
    ar.add_message(sid, "assistant", "", reasoning="先回滚再查 quokka", timestamp=1_714_521_602)
    ar.add_message(sid, "assistant", "已回滚。", timestamp=1_714_521_603)
    ar.add_message("s2", "user", "デプロイのエラー", timestamp=1_714_608_000)
    yield ar
    ar.close()


def call(archive, arguments) -> dict:
    text = handle_session_search(archive, arguments)
    assert isinstance(text, str)
    return json.loads(text)


# ---- schema ----------------------------------------------------------------------------


def test_openai_and_anthropic_shapes():
    o, a = SESSION_SEARCH_TOOL_OPENAI, SESSION_SEARCH_TOOL_ANTHROPIC
    assert o["type"] == "function" and o["function"]["name"] == "session_search"
    assert a["name"] == "session_search" and a["input_schema"] == o["function"]["parameters"]
    schema = a["input_schema"]
    assert schema["type"] == "object" and schema["additionalProperties"] is False and schema["required"] == []
    json.dumps(o), json.dumps(a)
    assert tool_definitions() == {"openai": o, "anthropic": a}
    assert tool_definitions()["openai"] is not o  # callers may edit their copy


def test_schema_covers_exactly_the_function_parameters():
    props = SESSION_SEARCH_TOOL_OPENAI["function"]["parameters"]["properties"]
    assert list(props) == PARAMS
    for name, spec in props.items():
        assert spec.get("description"), name
    assert props["roles"]["items"]["enum"] == list(ROLES)
    assert props["sort"]["enum"] == ["relevance", "newest", "oldest"]


def test_description_explains_how_the_shape_is_chosen():
    d = SESSION_SEARCH_TOOL_OPENAI["function"]["description"]
    for word in ("DISCOVERY", "SCROLL", "READ", "BROWSE", "query", "around_message_id", "session_id",
                 "thought", "include_reasoning", "next_anchor"):
        assert word in d, word


def _docstring_example() -> list[str]:
    lines = [ln.strip() for ln in agent_tool.__doc__.splitlines()]
    start = next(i for i, ln in enumerate(lines) if ln.startswith("from cjk_tokenizer.agent_tool import"))
    return lines[start:start + 3]


def test_docstring_example_is_three_lines_that_wire_a_tool_call(archive):
    example = _docstring_example()
    assert len(example) == 3 and example[2].startswith("if call.function.name")
    call_ = types.SimpleNamespace(function=types.SimpleNamespace(name="session_search",
                                                                 arguments='{"query": "回滚"}'))
    scope = {"tools": [], "call": call_, "archive": archive}
    exec("\n".join(example), scope)  # noqa: S102 - our own docstring
    assert scope["tools"] == [SESSION_SEARCH_TOOL_OPENAI]
    assert json.loads(scope["result"])["mode"] == "discovery"


# ---- handler ---------------------------------------------------------------------------


def test_round_trip_json_string(archive):
    text = handle_session_search(archive, '{"query": "回滚", "window": 1}')
    assert "回滚" in text  # ensure_ascii=False: CJK stays readable
    out = json.loads(text)
    assert out["mode"] == "discovery" and out["sessions"][0]["session"]["session_id"] == "s1"
    assert "⟦回滚⟧" in out["sessions"][0]["hit"]["snippet"] and out["sessions"][0]["hit"]["marks"] == ["⟦", "⟧"]


def test_round_trip_dict_and_every_mode(archive):
    assert call(archive, {"query": "quokka", "include_reasoning": True})["sessions"][0]["hit"]["where"] == "thought"
    assert call(archive, {"session_id": "s1"})["mode"] == "read"
    out = call(archive, {"session_id": "s1", "around_message_id": 2, "window": 0, "query": "回滚"})
    assert out["mode"] == "scroll" and [m["id"] for m in out["messages"]] == [2]
    out = call(archive, "{}")
    assert out["mode"] == "browse" and [s["session_id"] for s in out["sessions"]] == ["s2", "s1"]


def test_nulls_and_empty_arguments_mean_not_given(archive):
    out = call(archive, '{"query": null, "session_id": null, "around_message_id": null, "window": null, '
                        '"include_reasoning": null, "roles": null}')
    assert out["mode"] == "browse" and "error" not in out
    assert call(archive, "")["mode"] == "browse"
    assert call(archive, "  \n")["mode"] == "browse"
    assert call(archive, None)["mode"] == "browse"


def test_model_friendly_spellings(archive):
    out = call(archive, '{"around_message_id": "2", "window": 0}')
    assert out["mode"] == "scroll" and out["anchor_id"] == 2
    out = call(archive, '{"query": "デプロイ", "after": "2024-05-02", "roles": "user"}')
    assert [s["session"]["session_id"] for s in out["sessions"]] == ["s2"]
    out = call(archive, '{"query": "デプロイ", "after": 1714608001}')
    assert out["sessions"] == []


@pytest.mark.parametrize("arguments, code, mode", [
    ('{"query": "回滚"', "bad_json", "unknown"),
    ("not json at all", "bad_json", "unknown"),
    ('["回滚"]', "bad_argument", "unknown"),
    ("42", "bad_argument", "unknown"),
    (b"\xff\xfe", "bad_json", "unknown"),
    ('{"query": "回滚", "bogus": 1}', "unknown_argument", "discovery"),
    ('{"q": "回滚"}', "unknown_argument", "browse"),
    ('{"query": "回滚", "window": "5"}', "bad_argument", "discovery"),
    ('{"query": "回滚", "limit": [3]}', "bad_argument", "discovery"),
    ('{"query": "回滚", "include_reasoning": "true"}', "bad_argument", "discovery"),
    ('{"query": ""}', "bad_query", "discovery"),
    ('{"session_id": "nope"}', "unknown_session", "read"),
    ('{"session_id": "s2", "around_message_id": 1}', "anchor_not_in_session", "scroll"),
    ('{"after": "2024-06-01", "before": "2024-01-01"}', "bad_time_range", "browse"),
])
def test_bad_arguments_come_back_as_structured_errors(archive, arguments, code, mode):
    out = call(archive, arguments)
    assert out["error"]["code"] == code, out
    assert out["mode"] == mode and out["error"]["message"]


def test_unknown_argument_error_names_the_allowed_ones(archive):
    out = call(archive, {"qurey": "回滚"})
    assert out["error"]["argument"] == "qurey"
    for name in PARAMS:
        assert name in out["error"]["message"]


def test_handler_never_raises(tmp_path, monkeypatch):
    ar = Archive(tmp_path / "x.db")
    ar.close()
    out = call(ar, '{"query": "回滚"}')  # closed archive: an error to read, not a traceback
    assert out["error"]["code"] == "database_error"

    def boom(*args, **kwargs):
        raise RuntimeError("unexpected")

    monkeypatch.setattr(agent_tool, "respond", boom)
    out = call(ar, '{"query": "回滚"}')
    assert out["error"]["code"] == "internal_error" and "unexpected" in out["error"]["message"]


def test_results_are_plain_json_with_no_escaped_cjk(archive):
    text = handle_session_search(archive, {"session_id": "s1"})
    assert not re.search(r"\\u[0-9a-f]{4}", text)
    assert json.loads(text)["messages"][0]["content"] == "部署失败了，怎么回滚？"


@pytest.mark.parametrize("name", ["query", "session_id", "exclude_session_ids", "cursor"])
def test_half_a_surrogate_pair_is_an_argument_error_not_a_broken_result(tmp_path, name):
    # json.loads accepts "\\ud83d" alone (half an emoji escape), which no UTF-8 can hold
    with Archive(tmp_path / "s.db") as ar:
        ar.add_message("s", "user", "hello")
        raw = '{"%s": %s}' % (name, '["x\\ud83d"]' if name == "exclude_session_ids" else '"x\\ud83d"')
        text = handle_session_search(ar, raw)
        text.encode("utf-8")  # the agent loop can forward it
        err = json.loads(text)["error"]
        assert err["code"] == "bad_argument" and err["argument"] == name, err
