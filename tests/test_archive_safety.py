"""One record never breaks the archive; every bad value gets the documented error."""
from __future__ import annotations

import datetime as dt
import itertools
import json

import apsw
import pytest

from cjk_tokenizer import records
from cjk_tokenizer.agent_tool import handle_session_search
from cjk_tokenizer.archive import Archive, ArchiveError, InputError
from cjk_tokenizer.errors import QueryError

DEEP_TEXT = "[" * 1000 + "]" * 1000  # about 2 KB; Python's json gives up (RecursionError)


def _deep_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def _strict_json(text: str):
    """JSON as other readers see it: NaN and Infinity are errors."""
    def refuse(name):
        raise ValueError(f"{name} in JSON output")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def ar(tmp_path):
    a = Archive(tmp_path / "a.db")
    yield a
    a.close()


@pytest.mark.parametrize("bad", [
    DEEP_TEXT,
    _deep_list(5000),
    _deep_list(records.MAX_JSON_DEPTH + 1),
    [{"x": float("nan")}],
    '[{"x": NaN}]',
    '{"x": -Infinity}',
    '[{"score": 1e400}]',  # JSON's grammar allows it, but it reads as Infinity, which export would write
], ids=["deep-text", "deep-list", "one-too-deep", "nan-value", "nan-text", "infinity-text", "past-double-text"])
def test_tool_calls_breaking_json_rules_are_refused_at_write(ar, bad):
    with pytest.raises(InputError, match="tool_calls"):
        ar.add_message("s", "assistant", "hi", tool_calls=bad)
    with pytest.raises(InputError, match="tool_calls"):
        ar.add_openai_message("s", {"role": "assistant", "content": "hi", "tool_calls": bad})
    with pytest.raises(InputError, match="record #0"):
        ar.bulk_import([{"role": "assistant", "content": "hi", "tool_calls": bad}], session_id="s")
    mid = ar.add_message("s", "assistant", "hi")
    with pytest.raises(InputError, match="tool_calls"):
        ar.update_message(mid, tool_calls=bad)
    assert ar.count_messages() == 1 and ar.get_message(mid)["tool_calls"] is None


def test_json_within_the_rules_round_trips_and_text_stays_text(ar, monkeypatch):
    ok = _deep_list(records.MAX_JSON_DEPTH - 1)
    mid = ar.add_message("s", "assistant", "a", tool_calls=ok)
    assert ar.get_message(mid)["tool_calls"] == ok
    mid = ar.add_message("s", "assistant", "b", tool_calls="[not json, just text")
    assert ar.get_message(mid)["tool_calls"] == "[not json, just text"
    monkeypatch.setattr(records, "MAX_JSON_CHARS", 100)
    with pytest.raises(InputError, match="at most 100"):
        ar.add_message("s", "assistant", "c", tool_calls=[{"arguments": "x" * 200}])
    with pytest.raises(InputError, match="at most 100"):
        ar.add_message("s", "assistant", "c", metadata={"note": "x" * 200})


POISON = {
    "deep": DEEP_TEXT,
    "huge_number": '[{"score": -1e999}]',
    "nan": '[{"function": {"name": "f", "arguments": NaN}}]',
    "huge_depth_dict": '{"a": ' * 999 + "1" + "}" * 999,
}


@pytest.mark.parametrize("kind", sorted(POISON))
def test_a_poisoned_row_written_by_another_tool_never_breaks_a_read(ar, kind):
    sid = ar.add_session("poisoned", title="部署")
    ids = [ar.add_message(sid, "user", "部署失败了 rollback"),
           ar.add_message(sid, "assistant", "回滚 rollback done"),
           ar.add_message(sid, "user", "谢谢")]
    # another tool writes straight into the file, past every check of ours
    ar.conn.execute("UPDATE messages SET tool_calls = ?, metadata = ? WHERE id = ?",
                    (POISON[kind], POISON[kind], ids[1]))
    m = ar.get_message(ids[1])
    assert m["tool_calls"] == POISON[kind] and m["metadata"] == POISON[kind]  # returned as stored
    assert [x["id"] for x in ar.messages_of(sid)] == ids
    calls = [
        {},                                                    # browse
        {"session_id": sid},                                   # read
        {"session_id": sid, "around_message_id": ids[1]},      # scroll
        {"query": "回滚"},                                      # discovery hitting the row
        {"query": "rollback"},
    ]
    for args in calls:
        out = ar.session_search(**args)
        assert "error" not in out, (args, out)
        _strict_json(json.dumps(out, ensure_ascii=False))
        text = handle_session_search(ar, json.dumps(args))
        result = _strict_json(text)
        assert "error" not in result, (args, result)
        assert result["mode"] == out["mode"]


def test_roles_given_as_any_iterable_keep_every_role_they_list(ar):
    """A tuple with repeats or a generator is read whole: no role after the first few is dropped,
    and a bad one anywhere in it is named."""
    for role in ("user", "assistant", "tool"):
        ar.add_message("r", role, "hello")
    many = ("user",) * 6 + ("assistant",)
    for given in (many, (r for r in many), iter(list(many)), set(many)):
        assert sorted(h.role for h in ar.search("hello", roles=given)) == ["assistant", "user"]
    assert ar.count_by_session("hello", ["r"], roles=many) == {"r": 2}
    with pytest.raises(QueryError, match="unknown role 'bogus'"):
        ar.search("hello", roles=("user",) * 6 + ("bogus",))
    with pytest.raises(QueryError, match="at most"):
        ar.search("hello", roles=itertools.repeat("user"))


def test_bad_values_raise_the_documented_errors(ar):
    ar.add_message("s", "user", "hello")
    with pytest.raises(InputError, match="timestamp"):
        ar.add_message("s", "user", "x", timestamp=10**400)
    with pytest.raises(InputError, match="timestamp"):
        ar.add_message("s", "user", "x", timestamp=-10**400)
    try:
        dt.datetime(1, 1, 1).timestamp()
    except (ValueError, OverflowError, OSError):  # this system has no timestamp for it
        with pytest.raises(InputError, match="timestamp"):
            ar.add_message("s", "user", "x", timestamp=dt.datetime(1, 1, 1))
        with pytest.raises(QueryError, match="before"):
            ar.search("hello", before=dt.datetime(1, 1, 1))
    with pytest.raises(QueryError, match="roles"):
        ar.search("hello", roles=123)
    with pytest.raises(QueryError, match="after"):
        ar.search("hello", after=10**400)
    with pytest.raises(QueryError, match="before"):
        ar.search("hello", before=-10**400)
    assert ar.count_messages() == 1
    out = ar.session_search(session_id="s", around_message_id="²")  # "²".isdigit() is True
    assert out["error"]["code"] == "bad_argument" and out["error"]["argument"] == "around_message_id"
    result = json.loads(handle_session_search(ar, {"session_id": "s", "around_message_id": "²"}))
    assert result["error"]["code"] == "bad_argument"


def test_unknown_route_in_index_state_is_an_archive_error(tmp_path):
    path = tmp_path / "a.db"
    Archive(path).close()
    c = apsw.Connection(str(path))
    c.execute("INSERT INTO index_state(route, status, indexed_upto) VALUES ('bm42', 'stale', 0)")
    c.close()
    with pytest.raises(ArchiveError, match="unknown index 'bm42'"):
        Archive(path)


def test_a_message_id_is_an_int_and_one_no_message_can_have_is_no_message():
    with Archive(":memory:") as ar:
        mid = ar.add_message("s", "user", "留着")
        assert ar.get_message(str(mid))["id"] == mid  # digits, as a tool's JSON may send them
        for bad in (None, True, 1.0, "1x", [1]):  # True is not message 1
            for call in (ar.get_message, ar.delete_message, lambda m: ar.update_message(m, content="改")):
                with pytest.raises(InputError, match="message_id must be an int"):
                    call(bad)
        for huge in (2**70, -(2**70)):
            assert ar.get_message(huge) is None and ar.delete_message(huge) is False
            assert ar.update_message(huge, content="改") is False
        assert ar.get_message(mid)["content"] == "留着" and ar.count_messages() == 1
