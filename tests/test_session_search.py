"""session_search: the four shapes an agent relies on, on a small multilingual archive.

The archive is built here (not from a shared corpus) so each assertion can name
the message it expects.  Every session exists twice: in an archive with the
cjk extension and in one without it (``extension=False``), because an agent's
host may lack the extension and the tool must behave the same there.
"""
from __future__ import annotations

import datetime as dt
import json
import warnings

import pytest

from cjk_tokenizer import Archive
from cjk_tokenizer.session_search import (
    BOOKEND_CHARS,
    CONTEXT_CHARS,
    ERROR_CODES,
    HIT_CHARS,
    cut_text,
    session_search,
)

DAY = 86400.0
T0 = dt.datetime(2024, 5, 1, tzinfo=dt.timezone.utc).timestamp()
T2020 = dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc).timestamp()
T2022 = dt.datetime(2022, 1, 1, tzinfo=dt.timezone.utc).timestamp()

LOG = "I0501 pod web-1 started\n" * 200 + "E0501 container killed: OOMKilled 内存不足\n" + "I0501 retry\n" * 500
TOOL_CALL = [{"id": "call_1", "type": "function",
              "function": {"name": "kubectl", "arguments": json.dumps({"pod": "webfrontend", "tail": 200})}}]
LONG_STEPS = 60


def build(path, extension: bool) -> dict:
    """The archive and the ids a test needs (``sid[...]``, ``mid[...]``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ar = Archive(path, extension=extension)
    sid, mid = {}, {}

    def session(name, title, t):
        sid[name] = ar.add_session(title=title, started_at=t)
        return sid[name]

    s = session("zh", "部署回滚", T0)
    mid["zh_system"] = ar.add_message(s, "system", "你是运维助手。", timestamp=T0)
    mid["zh_user"] = ar.add_message(s, "user", "部署失败了，怎么回滚？服务器报错 connection refused", timestamp=T0 + 1)
    mid["zh_think"] = ar.add_message(s, "assistant", "我先看看日志。",
                                     reasoning="用户的部署失败，可能是配置文件错误。先查日志。", timestamp=T0 + 2)
    mid["zh_call"] = ar.add_message(s, "assistant", None, tool_calls=TOOL_CALL, timestamp=T0 + 3)
    mid["zh_log"] = ar.add_message(s, "tool", LOG, tool_name="kubectl", tool_call_id="call_1", timestamp=T0 + 4)
    mid["zh_answer"] = ar.add_message(s, "assistant", "原因是内存不足（OOMKilled），已回滚成功，恢复到上一版本。",
                                      timestamp=T0 + 5)

    s = session("ja", "デプロイ", T0 + DAY)
    mid["ja_user"] = ar.add_message(s, "user", "デプロイのエラーを確認してください", timestamp=T0 + DAY)
    mid["ja_answer"] = ar.add_message(s, "assistant", "サーバーのログを確認しました。設定ファイルが原因です。",
                                      timestamp=T0 + DAY + 1)

    s = session("ko", "배포", T0 + 2 * DAY)
    mid["ko_user"] = ar.add_message(s, "user", "서버 배포 실패 로그 확인", timestamp=T0 + 2 * DAY)
    mid["ko_answer"] = ar.add_message(s, "assistant", "데이터베이스 설정 문제입니다", timestamp=T0 + 2 * DAY + 1)

    s = session("en", "API keys", T0 + 3 * DAY)
    mid["en_user"] = ar.add_message(s, "user", "How do I rotate the API key?", timestamp=T0 + 3 * DAY)
    mid["en_answer"] = ar.add_message(
        s, "assistant", "Use the pelican script in ops/.",
        reasoning="The pelican script rotates keys; zebrafinch is the old vault name.", timestamp=T0 + 3 * DAY + 1)

    s = session("thought", None, T0 + 4 * DAY)  # visible content empty, reasoning not
    mid["th_user"] = ar.add_message(s, "user", "帮我想一个代号", timestamp=T0 + 4 * DAY)
    mid["th_answer"] = ar.add_message(s, "assistant", "", reasoning="秘密代号：青鸟计划 quokka", timestamp=T0 + 4 * DAY + 1)

    s = session("long", "long run", T0 + 5 * DAY)
    mid["long"] = [ar.add_message(s, "user" if i % 2 == 0 else "assistant", f"step {i} of the longrun",
                                  timestamp=T0 + 5 * DAY + i) for i in range(LONG_STEPS)]

    s = session("mixed", "config", T0 + 6 * DAY)
    mid["mixed_user"] = ar.add_message(s, "user", "请修改config文件里的timeout设置", timestamp=T0 + 6 * DAY)
    mid["mixed_answer"] = ar.add_message(s, "assistant", "已把timeout改成30秒。", timestamp=T0 + 6 * DAY + 1)

    for name, t in (("h2020", T2020), ("h2022", T2022), ("h2024", T0 + 7 * DAY)):
        s = session(name, f"heliotrope {name}", t)
        mid[name] = ar.add_message(s, "user", f"the heliotrope garden, {name}", timestamp=t)
        ar.add_message(s, "assistant", "noted", timestamp=t + 1)
    return {"ar": ar, "sid": sid, "mid": mid}


@pytest.fixture(scope="module", params=[True, False], ids=["ext", "noext"])
def world(request, tmp_path_factory):
    w = build(tmp_path_factory.mktemp("ss") / "a.db", extension=request.param)
    if request.param and not w["ar"].extension_loaded:
        pytest.skip(f"extension not loadable here: {w['ar'].extension_error}")
    yield w
    w["ar"].close()


@pytest.fixture(scope="module")
def ext_world(tmp_path_factory):
    w = build(tmp_path_factory.mktemp("ss1") / "a.db", extension=True)
    yield w
    w["ar"].close()


def ss(w, **kw) -> dict:
    out = session_search(w["ar"], **kw)
    json.dumps(out, ensure_ascii=False)  # every result is JSON-serializable
    return out


def ok(out: dict) -> dict:
    assert "error" not in out, out.get("error")
    return out


def err(out: dict, code: str) -> dict:
    assert code in ERROR_CODES
    assert out.get("error", {}).get("code") == code, out
    assert out["error"]["message"]
    return out


def session_ids(out: dict) -> list[str]:
    return [s["session"]["session_id"] for s in out["sessions"]]


def window_ids(entry: dict) -> list[int]:
    return [m["id"] for m in entry["window"]]


# ---- said versus thought -------------------------------------------------------------


def test_token_only_in_reasoning_needs_include_reasoning_and_is_labelled_thought(world):
    out = ok(ss(world, query="zebrafinch"))
    assert out["mode"] == "discovery" and out["sessions"] == []
    assert any("include_reasoning" in n for n in out["notes"])  # tells the caller where else to look

    out = ok(ss(world, query="zebrafinch", include_reasoning=True))
    [entry] = out["sessions"]
    assert entry["session"]["session_id"] == world["sid"]["en"]
    assert entry["hit"]["message_id"] == world["mid"]["en_answer"]
    assert entry["hit"]["matched_in"] == ["reasoning"]
    assert entry["hit"]["where"] == "thought"
    assert "zebrafinch" in entry["hit"]["snippet"]
    hit = next(m for m in entry["window"] if m.get("hit"))
    assert "zebrafinch" in hit["reasoning"] and hit["content"] == "Use the pelican script in ops/."


def test_token_in_content_and_reasoning_is_reported_as_said(world):
    out = ok(ss(world, query="pelican", include_reasoning=True))
    hit = out["sessions"][0]["hit"]
    assert hit["where"] == "said"
    assert hit["matched_in"] == ["content", "reasoning"]
    out = ok(ss(world, query="pelican"))
    assert out["sessions"][0]["hit"]["matched_in"] == ["content"]


def test_reasoning_is_hidden_unless_asked_but_its_presence_is_shown(world):
    out = ok(ss(world, session_id=world["sid"]["en"]))
    answer = out["messages"][1]
    assert "reasoning" not in answer
    assert answer["reasoning_hidden_chars"] == len("The pelican script rotates keys; zebrafinch is the old vault name.")
    out = ok(ss(world, session_id=world["sid"]["en"], include_reasoning=True))
    assert out["messages"][1]["reasoning"].startswith("The pelican script")


def test_session_with_empty_content_but_reasoning(world):
    sid, mid = world["sid"]["thought"], world["mid"]["th_answer"]
    assert ok(ss(world, query="青鸟计划"))["sessions"] == []
    out = ok(ss(world, query="青鸟计划", include_reasoning=True))
    [entry] = out["sessions"]
    assert entry["hit"]["message_id"] == mid and entry["hit"]["where"] == "thought"
    assert "⟦青鸟计划⟧" in entry["hit"]["snippet"]
    shown = next(m for m in entry["window"] if m["id"] == mid)
    assert shown["content"] == "" and shown["reasoning"] == "秘密代号：青鸟计划 quokka"
    # reading it without reasoning still shows that the turn exists and thought something
    read = ok(ss(world, session_id=sid))
    turn = read["messages"][1]
    assert turn["id"] == mid and turn["content"] == "" and "reasoning" not in turn
    assert turn["reasoning_hidden_chars"] == len("秘密代号：青鸟计划 quokka")


# ---- discovery ------------------------------------------------------------------------


@pytest.mark.parametrize("query, key", [
    ("回滚成功", "zh_answer"),           # Chinese
    ("設定ファイル", "ja_answer"),       # Japanese kanji + katakana
    ("데이터베이스", "ko_answer"),       # Korean
    ("修改config文件", "mixed_user"),    # CJK glued to Latin
    ("timeout 设置", "mixed_user"),      # Latin and CJK terms, ANDed
    ("\"connection refused\"", "zh_user"),  # a phrase
])
def test_discovery_finds_cjk_and_mixed_queries(world, query, key):
    out = ok(ss(world, query=query))
    entry = out["sessions"][0]
    assert entry["hit"]["message_id"] == world["mid"][key]
    assert entry["hit"]["where"] == "said"
    hit = [m for m in entry["window"] if m.get("hit")]
    assert [m["id"] for m in hit] == [world["mid"][key]]
    stored = world["ar"].get_message(world["mid"][key])
    assert hit[0]["content"] == stored["content"]  # verbatim


def test_discovery_snippet_marks_the_match(world):
    entry = ok(ss(world, query="回滚成功"))["sessions"][0]
    assert "⟦回滚成功⟧" in entry["hit"]["snippet"]
    entry = ok(ss(world, query="heliotrope", sort="newest"))["sessions"][0]
    assert "⟦heliotrope⟧" in entry["hit"]["snippet"]


def test_discovery_entry_has_window_bookends_and_session_facts(world):
    out = ok(ss(world, query="webfrontend", window=1))
    [entry] = out["sessions"]
    mid, sid = world["mid"], world["sid"]["zh"]
    assert entry["hit"]["message_id"] == mid["zh_call"] and entry["hit"]["where"] == "tool call"
    assert window_ids(entry) == [mid["zh_think"], mid["zh_call"], mid["zh_log"]]
    # head: what the session set out to do (first messages not already in the window)
    assert [m["id"] for m in entry["head"]] == [mid["zh_system"], mid["zh_user"]]
    assert entry["messages_between_head_and_window"] is False
    # tail: where it ended
    assert [m["id"] for m in entry["tail"]] == [mid["zh_answer"]]
    assert entry["messages_between_window_and_tail"] is False
    s = entry["session"]
    assert s["session_id"] == sid and s["title"] == "部署回滚" and s["message_count"] == 6
    assert s["started_at"] == T0 and s["started_at_iso"] == "2024-05-01T00:00:00Z"
    assert s["last_active"] == T0 + 5
    assert out["labels"]["thought"]


def test_discovery_tool_output_hit_is_cut_around_the_match(world):
    out = ok(ss(world, query="OOMKilled", roles=["tool"]))
    entry = out["sessions"][0]
    assert entry["hit"]["where"] == "tool output"
    hit = next(m for m in entry["window"] if m.get("hit"))
    assert hit["id"] == world["mid"]["zh_log"]
    assert "OOMKilled" in hit["content"]  # the kept part is the snippet window around the match
    assert hit["content"].startswith("[… ") and "earlier characters cut] " in hit["content"]
    assert hit["content"].endswith(" more characters cut]")
    kept = hit["content"].split("cut] ", 1)[1].rsplit(" [… ", 1)[0]
    assert hit["cut"]["content"] == len(LOG) - len(kept)
    # cut as the snippet rule cuts: whole lines of the log, as many as fit
    assert HIT_CHARS - 40 < len(kept) <= HIT_CHARS and ("\n" + kept + "\n") in LOG
    # the other window messages and the bookends have their own, smaller budgets
    for m in entry["window"]:
        if not m.get("hit") and m.get("content"):
            assert len(m["content"]) <= CONTEXT_CHARS + 40
    for m in entry["head"] + entry["tail"]:
        assert len(m.get("content") or "") <= BOOKEND_CHARS + 40


def test_long_body_cut_marker_states_how_much(world):
    out = ok(ss(world, session_id=world["sid"]["zh"]))
    log = next(m for m in out["messages"] if m["id"] == world["mid"]["zh_log"])
    assert log["content"] == LOG[:HIT_CHARS] + f" [… {len(LOG) - HIT_CHARS:,} more characters cut]"
    assert log["cut"] == {"content": len(LOG) - HIT_CHARS}


def test_discovery_groups_by_session_and_respects_limit(world):
    out = ok(ss(world, query="heliotrope", sort="newest"))
    assert session_ids(out) == [world["sid"]["h2024"], world["sid"]["h2022"], world["sid"]["h2020"]]
    out = ok(ss(world, query="heliotrope", sort="oldest", limit=2))
    assert session_ids(out) == [world["sid"]["h2020"], world["sid"]["h2022"]]
    assert out["more_sessions"] is True
    # one session with many hits is one entry, with its other hits listed
    out = ok(ss(world, query="longrun", window=0))
    [entry] = out["sessions"]
    assert entry["hits_in_session"] == LONG_STEPS
    assert len(entry["other_hit_ids"]) == 5 and entry["hit"]["message_id"] not in entry["other_hit_ids"]


def test_discovery_exclude_session_ids(world):
    sid = world["sid"]
    out = ok(ss(world, query="heliotrope", sort="newest", limit=1, exclude_session_ids=[sid["h2024"]]))
    assert session_ids(out) == [sid["h2022"]]
    out = ok(ss(world, query="heliotrope", exclude_session_ids=[sid["h2020"], sid["h2022"], sid["h2024"]]))
    assert out["sessions"] == []
    # a single id is accepted as a one-element list
    out = ok(ss(world, query="heliotrope", exclude_session_ids=sid["h2024"]))
    assert sid["h2024"] not in session_ids(out) and len(out["sessions"]) == 2


def test_discovery_time_filters_accept_epoch_and_iso(world):
    sid = world["sid"]
    found = lambda **kw: set(session_ids(ok(ss(world, query="heliotrope", **kw))))  # noqa: E731
    assert found(after="2023-01-01") == {sid["h2024"]}
    assert found(after="2021-06-01T00:00:00Z", before="2024-01-01T00:00:00+00:00") == {sid["h2022"]}
    assert found(before=T2022) == {sid["h2020"]}  # before is exclusive: the 2022 message is at T2022
    assert found(after=T2022, before=T2022 + 1) == {sid["h2022"]}  # after is inclusive
    assert found(after=str(int(T2022)), before=str(int(T2022) + 1)) == {sid["h2022"]}  # epoch as text
    assert found(after=dt.datetime(2023, 1, 1, tzinfo=dt.timezone.utc)) == {sid["h2024"]}


def test_discovery_inside_one_session(world):
    sid = world["sid"]
    out = ok(ss(world, query="回滚", session_id=sid["zh"]))
    assert session_ids(out) == [sid["zh"]]
    err(ss(world, query="回滚", session_id="no-such-session"), "unknown_session")


def test_discovery_window_is_clamped_and_reported(world):
    out = ok(ss(world, query="step 30 longrun", window=99))
    assert out["window"] == 10 and out["clamped"]["window"] == {"requested": 99, "used": 10, "allowed": [0, 10]}
    entry = out["sessions"][0]
    assert len(entry["window"]) == 21
    out = ok(ss(world, query="heliotrope", limit=0))
    assert len(out["sessions"]) == 1 and out["clamped"]["limit"]["used"] == 1


# ---- scroll ----------------------------------------------------------------------------


def test_scroll_window_anchor_and_paging(world):
    ids, sid = world["mid"]["long"], world["sid"]["long"]
    out = ok(ss(world, session_id=sid, around_message_id=ids[30]))
    assert out["mode"] == "scroll" and out["window"] == 5
    assert [m["id"] for m in out["messages"]] == ids[25:36]
    assert [m["id"] for m in out["messages"] if m.get("anchor")] == [ids[30]]
    assert out["more_before"] and out["more_after"]
    nxt = ok(ss(world, session_id=sid, around_message_id=out["next_anchor"]))
    assert [m["id"] for m in nxt["messages"]] == ids[36:47]  # continues right after the last one shown
    prv = ok(ss(world, session_id=sid, around_message_id=out["prev_anchor"]))
    assert [m["id"] for m in prv["messages"]] == ids[14:25]  # ends right before the first one shown
    # paging to the end terminates
    page, seen = out, set()
    while page["next_anchor"] is not None:
        page = ok(ss(world, session_id=sid, around_message_id=page["next_anchor"]))
        seen.update(m["id"] for m in page["messages"])
    assert ids[-1] in seen and page["more_after"] is False


def test_scroll_beats_query(world):
    ids, sid = world["mid"]["long"], world["sid"]["long"]
    out = ok(ss(world, query="heliotrope", session_id=sid, around_message_id=ids[3], window=1))
    assert out["mode"] == "scroll"
    assert [m["id"] for m in out["messages"]] == ids[2:5]
    assert out["ignored_arguments"] == ["query"]


def test_scroll_window_clamping(world):
    ids, sid = world["mid"]["long"], world["sid"]["long"]
    out = ok(ss(world, session_id=sid, around_message_id=ids[30], window=50))
    assert out["window"] == 20 and out["clamped"]["window"] == {"requested": 50, "used": 20, "allowed": [0, 20]}
    assert [m["id"] for m in out["messages"]] == ids[10:51]
    out = ok(ss(world, session_id=sid, around_message_id=ids[30], window=-4))
    assert [m["id"] for m in out["messages"]] == [ids[30]] and out["clamped"]["window"]["used"] == 0


def test_scroll_at_session_edges_and_without_session_id(world):
    ids = world["mid"]["long"]
    out = ok(ss(world, around_message_id=ids[0], window=3))
    assert out["session"]["session_id"] == world["sid"]["long"]  # taken from the message
    assert [m["id"] for m in out["messages"]] == ids[0:4]
    assert out["more_before"] is False and out["prev_anchor"] is None
    out = ok(ss(world, around_message_id=str(ids[-1]), window=3))  # digits as text
    assert [m["id"] for m in out["messages"]] == ids[-4:] and out["next_anchor"] is None


def test_scroll_errors(world):
    sid, mid = world["sid"], world["mid"]
    err(ss(world, session_id=sid["zh"], around_message_id=mid["ja_user"]), "anchor_not_in_session")
    err(ss(world, session_id=sid["zh"], around_message_id=10**9), "unknown_message")
    err(ss(world, session_id="nope", around_message_id=mid["ja_user"]), "unknown_session")
    err(ss(world, around_message_id=10**30), "unknown_message")
    err(ss(world, around_message_id=-1), "unknown_message")
    out = err(ss(world, session_id=sid["zh"], around_message_id="abc"), "bad_argument")
    assert out["mode"] == "scroll" and out["error"]["argument"] == "around_message_id"


# ---- read ------------------------------------------------------------------------------


def test_read_short_session_whole_and_verbatim(world):
    sid, mid = world["sid"]["zh"], world["mid"]
    out = ok(ss(world, session_id=sid))
    assert out["mode"] == "read" and out["truncated"] is False and out["total_messages"] == 6
    msgs = out["messages"]
    assert [m["id"] for m in msgs] == [mid[k] for k in ("zh_system", "zh_user", "zh_think", "zh_call", "zh_log",
                                                         "zh_answer")]
    assert msgs[1]["content"] == "部署失败了，怎么回滚？服务器报错 connection refused"
    assert msgs[3]["content"] is None and msgs[3]["tool_calls"] == TOOL_CALL
    assert msgs[4]["tool_name"] == "kubectl" and msgs[4]["tool_call_id"] == "call_1"
    assert msgs[1]["timestamp"] == T0 + 1 and msgs[1]["timestamp_iso"] == "2024-05-01T00:00:01Z"


def test_read_long_session_is_truncated_to_head_and_tail(world):
    ids, sid = world["mid"]["long"], world["sid"]["long"]
    out = ok(ss(world, session_id=sid))
    assert out["truncated"] is True
    assert out["total_messages"] == LONG_STEPS and out["omitted_messages"] == LONG_STEPS - 30
    assert [m["id"] for m in out["messages"]] == ids[:20]
    assert [m["id"] for m in out["tail_messages"]] == ids[-10:]
    cont = out["continue_with"]
    nxt = ok(ss(world, session_id=cont["session_id"], around_message_id=cont["around_message_id"]))
    assert nxt["messages"][-1]["id"] == ids[24]  # scrolling from there shows the omitted middle


def test_naming_an_excluded_session_still_serves_it(world):
    sid = world["sid"]["en"]
    out = ok(ss(world, session_id=sid, exclude_session_ids=[sid]))
    assert out["session"]["session_id"] == sid and out["notes"]
    out = ok(ss(world, query="pelican", session_id=sid, exclude_session_ids=[sid]))
    assert session_ids(out) == [sid] and out["notes"]


def test_read_unknown_session(world):
    out = err(ss(world, session_id="missing"), "unknown_session")
    assert out["mode"] == "read"


# ---- browse ----------------------------------------------------------------------------


def test_browse_recent_sessions(world):
    sid = world["sid"]
    out = ok(ss(world))
    assert out["mode"] == "browse"
    listed = [s["session_id"] for s in out["sessions"]]
    assert listed[:3] == [sid["h2024"], sid["mixed"], sid["long"]]  # most recently active first
    assert len(listed) == 10 and out["more_sessions"] is False and out["total_sessions"] == 10
    assert ok(ss(world, limit=9))["more_sessions"] is True
    zh = next(s for s in out["sessions"] if s["session_id"] == sid["zh"])
    assert zh["preview"] == "部署失败了，怎么回滚？服务器报错 connection refused"  # first user message
    assert zh["message_count"] == 6 and zh["title"] == "部署回滚"
    assert zh["started_at_iso"] == "2024-05-01T00:00:00Z" and zh["last_active"] == T0 + 5


def test_browse_limit_exclude_and_time_range(world):
    sid = world["sid"]
    out = ok(ss(world, limit=2, exclude_session_ids=[sid["h2024"]]))
    assert [s["session_id"] for s in out["sessions"]] == [sid["mixed"], sid["long"]]
    out = ok(ss(world, before="2024-01-01"))
    assert [s["session_id"] for s in out["sessions"]] == [sid["h2022"], sid["h2020"]]
    assert out["more_sessions"] is False
    out = ok(ss(world, after="2021-01-01", before="2023-01-01"))
    assert [s["session_id"] for s in out["sessions"]] == [sid["h2022"]]


def test_browse_preview_is_cut(tmp_path):
    ar = Archive(tmp_path / "p.db")
    s = ar.add_session(title="big")
    ar.add_message(s, "user", "长" * 5000)
    out = session_search(ar)
    assert out["sessions"][0]["preview"] == "长" * 200 + " [… 4,800 more characters cut]"
    ar.close()


# ---- errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, code, argument", [
    (dict(query=""), "bad_query", "query"),
    (dict(query="   "), "bad_query", "query"),
    (dict(query="回滚", window="five"), "bad_argument", "window"),
    (dict(query="回滚", limit=True), "bad_argument", "limit"),
    (dict(query="回滚", limit=2.5), "bad_argument", "limit"),
    (dict(query=42), "bad_argument", "query"),
    (dict(query="回滚", roles=["wizard"]), "bad_argument", "roles"),
    (dict(query="回滚", sort="best"), "bad_argument", "sort"),
    (dict(query="回滚", include_reasoning="yes"), "bad_argument", "include_reasoning"),
    (dict(query="回滚", after="last tuesday"), "bad_argument", "after"),
    (dict(query="回滚", after="2024-06-01", before="2024-05-01"), "bad_time_range", "after"),
    (dict(query="回滚", after=T0, before=T0), "bad_time_range", "after"),
    (dict(query="回滚", exclude_session_ids=[1, 2]), "bad_argument", "exclude_session_ids"),
    (dict(after="2024-06-01", before="2024-05-01"), "bad_time_range", "after"),
    (dict(session_id=7), "bad_argument", "session_id"),
])
def test_bad_input_is_a_structured_error(world, kwargs, code, argument):
    out = err(ss(world, **kwargs), code)
    assert out["error"].get("argument") == argument
    assert set(out) == {"mode", "error"}


def test_database_trouble_is_a_structured_error(tmp_path):
    ar = Archive(tmp_path / "c.db")
    ar.add_message("s", "user", "hello")
    ar.close()
    out = session_search(ar, query="hello")
    assert out["error"]["code"] == "database_error"


def test_arguments_a_mode_does_not_use_are_reported(world):
    out = ok(ss(world, session_id=world["sid"]["en"], roles=["user"], sort="newest"))
    assert out["mode"] == "read" and out["ignored_arguments"] == ["roles", "sort"]
    out = ok(ss(world, window=3))
    assert out["mode"] == "browse" and out["ignored_arguments"] == ["window"]


# ---- pieces ----------------------------------------------------------------------------


def test_cut_text():
    assert cut_text("short", 10) == ("short", 0)
    shown, n = cut_text("a" * 100, 10)
    assert shown == "a" * 10 + " [… 90 more characters cut]" and n == 90
    text = "x" * 5000 + "NEEDLE" + "y" * 5000
    shown, n = cut_text(text, 100, focus=(5000, 5006))
    assert "NEEDLE" in shown and n == len(text) - 100
    assert shown.startswith("[… 4,953 earlier characters cut] ") and shown.endswith(" [… 4,953 more characters cut]")
    # a combining mark is never separated from its letter
    text = "e\u0301" * 100
    shown, _ = cut_text(text, 51)
    kept = shown.split(" [… ")[0]
    assert len(kept) == 50 and not kept.endswith("e")


# ---- snippets on every route (Archive.search, which discovery shows) --------------------

SNIPPET_CHARS = 40
PAD_ZH = "这是很长的一段填充文字，用来把匹配推到中间。" * 30
PAD_EN = "filler words keep the match far from both ends. " * 30
SNIPPET_ROWS = {
    "zh": PAD_ZH + "部署之后回滚成功了。" + PAD_ZH,
    "ja": PAD_ZH + "サーバーの設定ファイルを直しました。" + PAD_ZH,
    "ko": PAD_EN + "데이터베이스 설정 문제입니다 🙂 " + PAD_EN,
    "en": PAD_EN + "the needleword sits here, café e\u0301 🙂 " + PAD_EN,
    "mixed": PAD_ZH + "请修改config文件里的timeout设置。" + PAD_ZH,
}
ROUTE_QUERIES = {
    "cjk": ["回滚成功", "回", "設定ファイル", "데이터베이스", "needleword", "修改config文件"],
    "trigram": ["回滚成功", "設定ファイル", "데이터베이스"],
    "unicode61": ["needleword", "timeout"],
    "scan": ["回滚成功", "回", "設定ファイル", "데이터베이스", "needleword", "修改config文件"],
}


@pytest.fixture(scope="module")
def snippet_archive(tmp_path_factory):
    ar = Archive(tmp_path_factory.mktemp("snip") / "s.db", indexes=("cjk", "unicode61", "trigram"))
    for name, text in SNIPPET_ROWS.items():
        ar.add_message(name, "user", text)
        ar.add_message(name, "assistant", "", reasoning=text)  # the same text, only as thought
    yield ar
    ar.close()


def _visible(snippet: str) -> str:
    return snippet.replace("**", "")  # the cjk route's aux function marks matches with **


@pytest.mark.parametrize("route, query", [(r, q) for r, qs in ROUTE_QUERIES.items() for q in qs])
@pytest.mark.parametrize("include_reasoning", [False, True], ids=["content", "reasoning"])
def test_snippets_are_utf8_hold_the_match_and_fit(snippet_archive, route, query, include_reasoning):
    if route == "cjk" and not snippet_archive.extension_loaded:
        pytest.skip("cjk route needs the extension")
    hits = snippet_archive.search(query, route=route, include_reasoning=include_reasoning,
                                  snippet_chars=SNIPPET_CHARS)
    expected = {name for name, text in SNIPPET_ROWS.items() if query in text}
    assert {h.session_id for h in hits} == expected
    roles = {h.role for h in hits}
    assert roles == ({"user", "assistant"} if include_reasoning else {"user"})
    for h in hits:
        assert h.route == route
        h.snippet.encode("utf-8")  # no lone surrogates, no broken sequences
        visible = _visible(h.snippet)
        assert query in visible, (route, h.snippet)
        shown = len(visible) - visible.startswith("…") - visible.endswith("…")
        assert shown <= SNIPPET_CHARS, (route, len(visible), h.snippet)
        assert h.matched_in == (["reasoning"] if h.role == "assistant" else ["content"])


@pytest.mark.parametrize("args", [
    {"query": "needle", "limit": 10, "window": 10, "include_reasoning": True},
    {"around_message_id": 100, "window": 20, "include_reasoning": True},
    {"session_id": "s3", "include_reasoning": True},
])
def test_a_result_is_held_to_its_size_budget(tmp_path, args):
    # agent hosts cap what a tool may return: the widest calls on long messages stay near RESULT_CHARS
    from cjk_tokenizer.session_search import RESULT_CHARS

    with Archive(tmp_path / "big.db") as ar:
        for s in range(12):
            ar.add_messages(f"s{s}", [{"role": "user" if i % 2 else "assistant",
                                       "content": f"needle {s} {i} " + "部署日志 " * 800,
                                       "reasoning": "思考 " * 1500} for i in range(40)])
        out = ar.session_search(**args)
        assert "error" not in out
        assert len(json.dumps(out, ensure_ascii=False)) <= RESULT_CHARS
        assert 0 < out["budget_scale"] < 1 and any("held to about" in n for n in out["notes"])
        shown = out["sessions"][0]["window"] if "sessions" in out else out["messages"]
        assert shown and all("cut" in m for m in shown)  # every cut message says how much went
        small = ar.session_search(query="needle")
        assert "budget_scale" not in small and len(json.dumps(small, ensure_ascii=False)) <= RESULT_CHARS


def test_a_result_of_escape_heavy_text_over_its_budget_says_its_size(tmp_path):
    # JSON writes a control character as six: at the least budgets such a result stayed over
    # RESULT_CHARS while its note said it was held to it
    import re

    from cjk_tokenizer.agent_tool import handle_session_search
    from cjk_tokenizer.session_search import RESULT_CHARS

    with Archive(tmp_path / "esc.db") as ar:
        for s in range(10):
            for _ in range(6):
                ar.add_message(f"s{s}", "assistant", "部署" + "\x1b" * 3000, reasoning="\x1b" * 3000,
                               tool_call_id="\x1b" * 500, tool_calls="\x1b" * 3000)
        text = handle_session_search(ar, {"query": "部署", "limit": 10, "include_reasoning": True})
        out = json.loads(text)
        assert len(text) > RESULT_CHARS and not any("held to about" in n for n in out["notes"])
        (said,) = [n for n in out["notes"] if "over the usual" in n]
        assert abs(int(re.search(r"about ([\d,]+) characters", said)[1].replace(",", "")) - len(text)) < 1000


def test_rendering_a_result_again_smaller_searches_once(tmp_path, monkeypatch):
    """A result over its size budget is rendered again with smaller budgets; the hits do not
    change, so each search is asked once, however many renderings it takes."""
    with Archive(tmp_path / "big.db") as ar:
        for s in range(12):
            ar.add_messages(f"s{s}", [{"role": "user", "content": f"needle {s} {i} " + "部署日志 " * 800,
                                       "reasoning": "思考 " * 1500} for i in range(40)])
        args = {"query": "needle", "limit": 10, "window": 10, "include_reasoning": True}
        calls = []
        for name in ("search", "count_by_session"):
            real = getattr(Archive, name)
            monkeypatch.setattr(Archive, name, lambda self, *a, _real=real, _n=name, **k:
                                calls.append((_n, a, tuple(sorted(k.items(), key=str)))) or _real(self, *a, **k))
        out = ar.session_search(**args)
        assert 0 < out["budget_scale"] < 1
        asked = [repr(c) for c in calls]
        assert len(asked) == len(set(asked)), len(asked) - len(set(asked))


@pytest.mark.parametrize("args", [{"query": "部署"}, {"session_id": "s1"}, {"session_id": "s1", "around_message_id": 1},
                                  {}])
def test_titles_sources_and_tool_labels_are_held_to_the_size_budget_too(tmp_path, args):
    # they were never cut: a long title or call id made results of 120k-200k characters
    from cjk_tokenizer.agent_tool import handle_session_search
    from cjk_tokenizer.session_search import RESULT_CHARS

    with Archive(tmp_path / "a.db") as ar:
        ar.add_session("s1", title="长标题" * 40_000, source="src" * 30_000)
        ar.add_message("s1", "tool", "部署 ok", tool_name="run" * 20_000, tool_call_id="c" * 80_000)
        text = handle_session_search(ar, args)
        out = json.loads(text)
        assert "error" not in out and len(text) <= RESULT_CHARS, len(text)
        session = out["sessions"][0] if "sessions" in out else out["session"]
        session = session.get("session", session)
        assert session["title"].startswith("长标题") and session["cut"]["title"] > 100_000
        if "sessions" not in out or args:
            message = next(iter(out.get("messages") or out["sessions"][0]["window"]))
            assert message["tool_call_id"].startswith("ccc") and message["cut"]["tool_call_id"] > 79_000


def test_a_session_id_is_bounded_when_written(tmp_path):
    from cjk_tokenizer.records import MAX_ID_CHARS, InputError

    with Archive(tmp_path / "a.db") as ar:
        ar.add_message("s" * MAX_ID_CHARS, "user", "ok")
        with pytest.raises(InputError, match=f"at most {MAX_ID_CHARS}"):
            ar.add_message("s" * (MAX_ID_CHARS + 1), "user", "too long an id")


@pytest.mark.parametrize("tail", ["👨\u200d👩\u200d👧", "👍🏽", "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
                                  "e\u0301\u0302", "辻\U000e0100"])
def test_reading_a_long_message_never_cuts_a_character_from_what_extends_it(tmp_path, tail):
    # the cut of a message read (no match to centre on) split emoji sequences
    from cjk_tokenizer.session_search import HIT_CHARS

    with Archive(tmp_path / "a.db") as ar:
        for k in range(len(tail) + 1):
            ar.add_message("s", "user", "x" * (HIT_CHARS - k) + tail + "y" * 10)
        for m in ar.session_search(session_id="s")["messages"]:
            kept = m["content"].split(" [… ")[0]
            assert kept.endswith(tail) or kept.rstrip("x") == "", (ascii(kept[-12:]), m["cut"])


def test_an_empty_roles_list_is_not_given(tmp_path):
    # models send [] for optional arrays: it was a bad_argument, even in modes without roles
    with Archive(tmp_path / "a.db") as ar:
        ar.add_message("s", "user", "部署成功")
        found = ar.session_search(query="部署", roles=[])
        assert "error" not in found and found["sessions"][0]["session"]["session_id"] == "s"
        assert "error" not in ar.session_search(limit=3, roles=[])


@pytest.mark.parametrize("args", [{"session_id": "x" * 100_000}, {"query": "部署", "session_id": "x" * 100_000},
                                  {"x" * 100_000: 1}, {"sort": "s" * 100_000}, {"roles": ["nobody"] * 20_001},
                                  {"query": "部署", "roles": ["r" * 100_000]}])
def test_an_error_is_held_to_a_size_too(tmp_path, args):
    # errors quoted the offending value whole: 100k-200k characters
    from cjk_tokenizer.agent_tool import handle_session_search

    with Archive(tmp_path / "a.db") as ar:
        ar.add_message("s", "user", "部署成功")
        text = handle_session_search(ar, args)
        result = json.loads(text)
        assert "error" in result and len(text) < 1500, (result["error"]["code"], len(text))


def test_a_time_past_any_date_is_no_time_everywhere(tmp_path):
    # 1e301 read as a time but was filtered and sorted as none: browse with after stopped early
    with Archive(tmp_path / "a.db") as ar:
        ar.add_message("A", "user", "needle a", timestamp=1000)
        ar.add_message("Z", "user", "needle z", timestamp=1001)
        ar.add_session("B")
        ar.conn.execute("UPDATE messages SET timestamp = 1e301 WHERE session_id = 'Z'")
        ar.conn.execute("UPDATE sessions SET last_active = 1e301 WHERE id = 'Z'")
        assert ar.messages_of("Z")[0]["timestamp"] is None and ar.session("Z")["last_active"] is None
        assert [h.session_id for h in ar.search("needle", after=0)] == ["A"]
        assert [s["session_id"] for s in ar.session_search(after=0)["sessions"]] == ["A"]
