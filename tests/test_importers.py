"""Importers: real agent histories in, each part searchable where it belongs, re-imports add nothing."""
import datetime as dt
import hashlib
import io
import json
import os
import shlex
import shutil
import subprocess
import sys

import apsw
import pytest

from cjk_tokenizer.archive import Archive
from cjk_tokenizer.importers import epoch

sys.path.insert(0, os.path.dirname(__file__))
import _history_fixtures as fx  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cli(*args, stdin=None, check=True):
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.run([sys.executable, "-m", "cjk_tokenizer", *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, input=stdin, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}: {proc.stderr}")
    return proc


@pytest.fixture
def hermes_state():
    try:
        import hermes_state
    except ImportError:
        if os.environ.get("CJK_REQUIRE_ALL_HOSTS"):
            pytest.fail("hermes-agent is not installed (pip install --no-deps hermes-agent) "
                        "and CJK_REQUIRE_ALL_HOSTS is set")
        pytest.skip("hermes-agent is not installed (pip install --no-deps hermes-agent)")
    return hermes_state


def _files_digest(folder):
    out = {}
    for name in sorted(os.listdir(folder)):
        p = os.path.join(folder, name)
        with open(p, "rb") as f:
            out[name] = (hashlib.sha256(f.read()).hexdigest(), os.stat(p).st_mtime_ns)
    return out


def _all(ar):
    return [m for s in ar.sessions() for m in ar.messages_of(s["id"])]


def _hit_ids(ar, query, **kw):
    return {h.message_id for h in ar.search(query, **kw)}


# ------------------------------------------------------------------ Hermes


def test_hermes_state_db_imports_every_part_and_is_never_written(tmp_path, hermes_state):
    src_dir = tmp_path / "hermes"
    src_dir.mkdir()
    db = str(src_dir / "state.db")
    fx.write_hermes(db, hermes_state)
    before = _files_digest(src_dir)
    with Archive(str(tmp_path / "a.db")) as ar:
        report = ar.import_source(db)
        # read-only: the database not touched (SQLite itself may add the WAL companions a
        # read of a WAL database needs, with nothing in the log)
        after = _files_digest(src_dir)
        assert after["state.db"] == before["state.db"]
        assert os.path.getsize(src_dir / "state.db-wal") == 0 if "state.db-wal" in after else True
        assert report.messages == 5 and report.sessions == {"h1", "h2"} and not report.bad
        h1 = ar.session("h1")
        assert h1["source"] == "cli" and h1["metadata"]["model"] == "anthropic/claude-sonnet-4"
        assert h1["metadata"]["cwd"] == "/srv/app" and h1["started_at"] > 1.7e9
        msgs = ar.messages_of("h1")
        assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "assistant"]
        thought = msgs[1]["reasoning"]
        # reasoning and reasoning_content were equal: kept once; reasoning_details' text joined, opaque data not
        assert thought.count("배포 로그부터 확인해야 한다") == 1 and "마이그레이션 충돌 가능성" in thought
        assert "opaque" not in thought
        assert msgs[1]["tool_calls"][0]["function"]["name"] == "terminal"
        assert msgs[2]["tool_name"] == "terminal" and msgs[2]["tool_call_id"] == "call_1"
        assert msgs[0]["timestamp"] == 1764000000.0
        assert msgs[3]["metadata"] == {"finish_reason": "stop"}
        # each part searchable where it belongs
        assert _hit_ids(ar, "마이그레이션") == set()
        assert _hit_ids(ar, "마이그레이션", include_reasoning=True) == {msgs[1]["id"]}
        assert _hit_ids(ar, "인덱스가", roles=["tool"]) == {msgs[2]["id"]}
        assert _hit_ids(ar, "배포.log") == {msgs[1]["id"]}  # CJK inside tool-call arguments, unescaped


def test_hermes_reimport_adds_nothing_and_growth_adds_exactly_the_new(tmp_path, hermes_state):
    db = str(tmp_path / "state.db")
    fx.write_hermes(db, hermes_state)
    with Archive(str(tmp_path / "a.db")) as ar:
        ar.import_source(db)
        again = ar.import_source(db)
        assert again.messages == 0 and again.unchanged == 5 and ar.count_messages() == 5
        assert again.sessions == set() and again.summary().startswith("imported 0 messages in 0 sessions")
        fx.write_hermes(db, hermes_state, more=True)
        grown = ar.sync()
        assert grown.messages == 1 and grown.unchanged == 5 and not grown.changed and grown.sessions == {"h1"}
        assert ar.count_messages() == 6
        h1 = ar.session("h1")
        assert h1["title"] == "배포 실패"  # set in Hermes after the first import
        assert h1["metadata"]["end_reason"] == "user_exit" and h1["metadata"]["ended_at"] > 1.7e9


def test_hermes_fts_side_tables_are_not_read_as_messages(tmp_path, hermes_state):
    db = str(tmp_path / "state.db")
    fx.write_hermes(db, hermes_state)
    with Archive(str(tmp_path / "a.db")) as ar:
        ar.import_source(db)
        assert ar.count_messages() == 5 and ar.count_sessions() == 2


def test_a_hermes_message_the_archive_cannot_store_is_named_by_its_id(tmp_path, hermes_state):
    db = str(tmp_path / "state.db")
    fx.write_hermes(db, hermes_state)
    conn = apsw.Connection(db)
    bad_id, blob_id, other_id = [r[0] for r in conn.execute("SELECT id FROM messages ORDER BY id DESC LIMIT 3")]
    conn.execute("UPDATE messages SET content = X'E4B8FF' WHERE id = ?", (bad_id,))  # bytes, not UTF-8
    conn.execute("UPDATE messages SET content = CAST(X'E983A8E7BDB2FF' AS TEXT) WHERE id = ?", (other_id,))
    conn.execute("UPDATE messages SET content = CAST('部署 blob' AS BLOB) WHERE id = ?", (blob_id,))  # UTF-8 bytes
    time_id = conn.execute("SELECT min(id) FROM messages").fetchone()[0]
    conn.execute("UPDATE messages SET timestamp = CAST(X'80FF' AS TEXT) WHERE id = ?", (time_id,))  # a time column
    conn.close()
    with Archive(str(tmp_path / "a.db")) as ar:
        report = ar.import_source(db)
        # TEXT that is not UTF-8 stopped the whole import with a raw UnicodeDecodeError
        assert report.bad == [f"{db}: message id {time_id}: timestamp is not UTF-8 text (byte 0x80 at byte 0)",
                              f"{db}: message id {other_id}: content is not UTF-8 text (byte 0xFF at byte 6)",
                              f"{db}: message id {bad_id}: content is not UTF-8 text (byte 0xE4 at byte 0)"]
        assert ar.count_messages() == 2  # the others are imported
        assert [h.message_id for h in ar.search("blob")] == [2]


def test_hermes_content_of_parts_is_stored_as_its_text(tmp_path, hermes_state):
    # Hermes encodes a message whose content is a list of parts (text + image) as NUL "json:" + JSON
    from pathlib import Path

    db = str(tmp_path / "state.db")
    writer = hermes_state.SessionDB(db_path=Path(db))
    writer.create_session("h1", "cli")
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    writer.append_message("h1", "user", [{"type": "text", "text": "看这张图：大别山"}, image], timestamp=1764000004.0)
    writer.close()
    with Archive(str(tmp_path / "a.db")) as ar:
        ar.import_source(db)
        (m,) = ar.messages_of("h1")
        assert m["content"] == "看这张图：大别山" and m["metadata"]["content_parts"] == [image]
        assert _hit_ids(ar, "大别山") == {m["id"]}


def test_a_hermes_transcript_rewritten_under_new_ids_is_not_stored_twice(tmp_path, hermes_state):
    # /retry, /undo and /compress delete a session's rows and insert them again under new ids
    from pathlib import Path

    db = str(tmp_path / "state.db")
    writer = hermes_state.SessionDB(db_path=Path(db))
    writer.create_session("h2", "cli")
    writer.append_message("h2", "user", "早上好", timestamp=1764100000.0)
    writer.append_message("h2", "assistant", "早上好！", timestamp=1764100001.0)
    writer.append_message("h2", "user", "早上好", timestamp=1764100002.0)  # the same words, later: another message
    writer.close()
    with Archive(str(tmp_path / "a.db")) as ar:
        ar.import_source(db)
        writer = hermes_state.SessionDB(db_path=Path(db))
        writer.replace_messages("h2", writer.get_messages_as_conversation("h2") + [{"role": "user", "content": "再见"}])
        writer.close()
        report = ar.sync()
        assert report.messages == 1 and report.unchanged == 3 and not report.changed
        assert [m["content"] for m in ar.messages_of("h2")] == ["早上好", "早上好！", "早上好", "再见"]
        assert ar.sync().messages == 0  # the new ids are known now


@pytest.mark.parametrize("imported_before", [True, False], ids=["sync-after", "first-import-after"])
def test_a_hermes_compaction_that_keeps_its_rows_stores_the_kept_tail_once(tmp_path, hermes_state, imported_before):
    # archive_and_compact (Hermes' in-place /compress) leaves the old rows (active = 0) and inserts
    # the kept tail again as new rows, with the same text, time and reasoning
    from pathlib import Path

    db = str(tmp_path / "state.db")
    writer = hermes_state.SessionDB(db_path=Path(db))
    writer.create_session("c1", "cli")
    for i in range(3):
        writer.append_message("c1", "user", f"第{i}个问题", timestamp=1764100000.0 + 2 * i)
        writer.append_message("c1", "assistant", f"第{i}个回答", reasoning=f"想{i}", timestamp=1764100001.0 + 2 * i)
    writer.close()

    def compact():
        w = hermes_state.SessionDB(db_path=Path(db))
        w.archive_and_compact("c1", [{"role": "user", "content": "前情提要"}] + w.get_messages_as_conversation("c1")[-2:])
        w.close()

    with Archive(str(tmp_path / "a.db")) as ar:
        if imported_before:
            assert ar.import_source(db).messages == 6
        compact()
        compact()  # the second archives the first one's copies too
        report = ar.sync() if imported_before else ar.import_source(db)
        want = [f"第{i}个{w}" for i in range(3) for w in ("问题", "回答")] + ["前情提要", "前情提要"]
        assert sorted(m["content"] for m in ar.messages_of("c1")) == sorted(want)
        assert report.messages == (2 if imported_before else 8) and not report.changed
        assert [h.session_id for h in ar.search("想2", include_reasoning=True)] == ["c1"]
        assert ar.sync().messages == 0


def test_two_equal_hermes_rows_in_a_row_stay_two_messages_once_archived(tmp_path, hermes_state):
    # rows reading alike were taken for a compaction's copy of the first, and a first import dropped one
    from pathlib import Path

    db = str(tmp_path / "state.db")
    writer = hermes_state.SessionDB(db_path=Path(db))
    writer.create_session("s1", "telegram")
    writer.append_message("s1", "user", "ok", timestamp=1700000000.0)
    writer.append_message("s1", "user", "ok", timestamp=1700000000.0)
    writer.append_message("s1", "assistant", "noted", timestamp=1700000001.0)
    writer.archive_and_compact("s1", [{"role": "user", "content": "SUMMARY"}])
    writer.close()
    with Archive(str(tmp_path / "a.db")) as ar:
        report = ar.import_source(db)
        assert report.messages == 4 and report.unchanged == 0, report.summary()
        assert [m["content"] for m in ar.messages_of("s1")] == ["ok", "ok", "noted", "SUMMARY"]


# ------------------------------------------------------------------ Claude Code


def _claude_project(tmp_path):
    proj = tmp_path / ".claude" / "projects" / "-home-u-proj"
    path = fx.write_jsonl(str(proj / f"{fx.CLAUDE_SESSION}.jsonl"), fx.claude_lines())
    (proj / "notes.txt").write_text("not a transcript")
    return proj, path


def test_a_moved_or_copied_claude_code_transcript_adds_only_new_lines(tmp_path):
    proj, path = _claude_project(tmp_path)
    db = str(tmp_path / "a.db")
    with Archive(db) as ar:
        first = ar.import_source(str(proj)).messages
        assert first == ar.count_messages() > 0
    moved = proj / "renamed.jsonl"
    os.rename(path, moved)
    assert "imported 0 messages" in cli("sync", db).stdout  # the folder is read again: same uuids
    copy = tmp_path / "backup" / "copy.jsonl"
    copy.parent.mkdir()
    later = {"type": "user", "uuid": "u-later", "sessionId": fx.CLAUDE_SESSION, "timestamp": "2025-11-24T11:00:00Z",
             "message": {"role": "user", "content": "后来又问了一句"}}
    copy.write_text(moved.read_text(encoding="utf-8") + json.dumps(later, ensure_ascii=False) + "\n", encoding="utf-8")
    with Archive(db) as ar:
        report = ar.import_source(str(copy))
        assert report.messages == 1 and report.unchanged > 0 and not report.changed
        assert ar.count_messages() == first + 1
        assert ar.messages_of(fx.CLAUDE_SESSION)[-1]["content"] == "后来又问了一句"


def test_a_resumed_claude_code_session_adds_its_new_lines_and_reports_no_change(tmp_path):
    # a resumed session is written to a new file: the history copied under the same uuids, with
    # the new session's id; that copy was reported as changed records
    proj = tmp_path / "proj"
    lines = [{"type": "user", "uuid": f"u{i}", "sessionId": "A", "timestamp": f"2025-11-24T10:0{i}:00Z",
              "message": {"role": "user", "content": f"第{i}句"}} for i in range(2)]
    fx.write_jsonl(str(proj / "A.jsonl"), lines)
    with Archive(str(tmp_path / "a.db")) as ar:
        ar.import_source(str(proj))
        resumed = [dict(line, sessionId="B") for line in lines]
        resumed.append({"type": "user", "uuid": "u2", "sessionId": "B", "timestamp": "2025-11-24T10:05:00Z",
                        "message": {"role": "user", "content": "接着说"}})
        fx.write_jsonl(str(proj / "B.jsonl"), resumed)
        report = ar.sync()
        assert (report.messages, report.unchanged, report.changed) == (1, 4, []), report.summary()  # A and its copy
        assert [m["content"] for m in ar.messages_of("B")] == ["接着说"]
        assert [m["content"] for m in ar.messages_of("A")] == ["第0句", "第1句"]
        # a line that reads otherwise under a known uuid is still a change
        fx.write_jsonl(str(proj / "C.jsonl"), [dict(lines[0], sessionId="C", message={"role": "user", "content": "改"})])
        assert len(ar.sync().changed) == 1


def test_claude_code_project_folder(tmp_path):
    proj, _ = _claude_project(tmp_path)
    with Archive(str(tmp_path / "a.db")) as ar:
        report = ar.import_source(str(proj))
        assert report.skipped == {"file-history-snapshot": 1, "system": 1, "progress": 1, "some-future-type": 1}
        assert not report.bad
        s = ar.session(fx.CLAUDE_SESSION)
        assert s["title"] == "部署失败排查" and s["source"] == "claude-code"
        assert s["metadata"] == {"cwd": "/home/u/proj", "gitBranch": "main"}
        assert s["started_at"] == epoch("2025-11-24T10:00:00Z")
        msgs = ar.messages_of(fx.CLAUDE_SESSION)
        assert [m["role"] for m in msgs] == ["user", "assistant", "assistant", "tool", "assistant", "tool"]
        user, thinking, said, result, call2, denied = msgs
        assert user["content"] == "帮我看看大别山项目的部署日志"
        assert thinking["content"] is None and thinking["reasoning"] == "先读日志再判断迁移是否幂等"
        assert said["content"] == "我先读取部署日志。"
        assert said["tool_calls"] == [{"id": "toolu_01", "type": "function", "function": {
            "name": "Read", "arguments": json.dumps({"file_path": "/var/log/deploy.log"})}}]
        assert result["tool_call_id"] == "toolu_01" and result["tool_name"] == "Read"
        assert result["content"] == "ERROR 迁移失败：索引 idx_owner 已存在"
        assert denied["tool_name"] == "Bash" and denied["metadata"]["is_error"] is True
        assert user["metadata"]["cwd"] == "/home/u/proj" and user["metadata"]["gitBranch"] == "main"
        assert said["metadata"]["model"] == "claude-sonnet-4-5" and said["metadata"]["uuid"] == "u3"
        assert user["timestamp"] == epoch("2025-11-24T10:00:00.000Z")
        assert _hit_ids(ar, "幂等") == set()
        assert _hit_ids(ar, "幂等", include_reasoning=True) == {thinking["id"]}
        assert _hit_ids(ar, "迁移失败", roles=["tool"]) == {result["id"]}


def test_claude_grown_transcript_adds_exactly_the_new_and_a_changed_line_is_reported(tmp_path):
    proj, path = _claude_project(tmp_path)
    db = str(tmp_path / "a.db")
    with Archive(db) as ar:
        first = ar.import_source(str(proj))
        assert first.messages == 6
        assert ar.import_source(str(proj)).messages == 0 and ar.count_messages() == 6
        lines = fx.claude_lines()
        grown = dict(lines[2], uuid="u8", parentUuid="u7", timestamp="2025-11-24T10:01:00Z",
                     message={"role": "user", "content": "谢谢，解决了"})
        fx.write_jsonl(path, lines + [grown])
        report = ar.sync()
        assert report.messages == 1 and ar.count_messages() == 7 and not report.changed
        lines[2] = dict(lines[2], message={"role": "user", "content": "edited afterwards"})
        fx.write_jsonl(path, lines + [grown])
        report = ar.import_source(path)
        assert report.messages == 0 and ar.count_messages() == 7
        assert len(report.changed) == 1 and f"{fx.CLAUDE_SESSION}.jsonl:3" in report.changed[0]


# ------------------------------------------------------------------ Codex


def test_codex_sessions_folder_without_event_mirrors(tmp_path):
    day = tmp_path / ".codex" / "sessions" / "2025" / "10" / "29"
    fx.write_jsonl(str(day / f"rollout-2025-10-29T00-59-38-{fx.CODEX_SESSION}.jsonl"), fx.codex_lines())
    with Archive(str(tmp_path / "a.db")) as ar:
        report = ar.import_source(str(tmp_path / ".codex" / "sessions"))
        assert report.skipped == {"event_msg": 4, "turn_context": 1, "reasoning (encrypted only)": 1}
        s = ar.session(fx.CODEX_SESSION)
        assert s["source"] == "codex" and s["started_at"] == epoch("2025-10-29T00:59:38.308Z")
        assert s["metadata"]["cwd"] == "/tmp/codex-proj" and s["metadata"]["model"] == "gpt-5-codex"
        msgs = ar.messages_of(fx.CODEX_SESSION)
        roles = [m["role"] for m in msgs]
        assert roles == ["user", "user", "assistant", "assistant", "tool", "assistant", "tool", "assistant"]
        assert [m["content"] for m in msgs].count("東京の天気を調べて") == 1  # event_msg mirror not copied
        assert sum("東京は晴れ" in (m["content"] or "") for m in msgs) == 1
        thought = msgs[2]
        assert thought["reasoning"] == "**天気予報のツールを使う**" and thought["content"] is None
        call, out = msgs[3], msgs[4]
        assert call["tool_calls"][0]["function"] == {"name": "shell",
                                                     "arguments": "{\"command\":[\"curl\",\"wttr.in/Tokyo\"]}"}
        assert out["tool_call_id"] == "call_abc" and out["tool_name"] == "shell" and out["content"] == "東京: 晴れ 18°C\n"
        assert msgs[5]["tool_calls"][0]["function"]["name"] == "apply_patch"
        assert msgs[6]["tool_name"] == "apply_patch" and msgs[6]["content"].startswith("Success")
        assert _hit_ids(ar, "天気予報") == set() and len(_hit_ids(ar, "天気予報", include_reasoning=True)) == 1


# ------------------------------------------------------------------ OpenAI chat JSONL


def test_openai_both_shapes_and_detection_in_a_mixed_folder(tmp_path):
    folder = tmp_path / "mixed"
    fx.write_jsonl(str(folder / "chat.jsonl"), [
        {"role": "user", "content": "一条一行"},
        {"role": "assistant", "content": "好的", "reasoning_content": "简单"},
    ])
    fx.write_jsonl(str(folder / "ft.jsonl"), [
        {"messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "ping"},
                      {"role": "assistant", "content": "pong"}], "tools": [{"type": "function"}]},
        {"id": "named", "title": "第二个", "messages": [{"role": "user", "content": "多轮对话"}]},
    ])
    fx.write_jsonl(str(folder / "claude" / "x.jsonl"), fx.claude_lines())
    fx.write_jsonl(str(folder / "rollout-1.jsonl"), fx.codex_lines())
    with Archive(str(tmp_path / "a.db")) as ar:
        report = ar.import_source(str(folder))
        assert report.sources == 4 and not report.bad
        assert [m["content"] for m in ar.messages_of("chat")] == ["一条一行", "好的"]
        assert [m["role"] for m in ar.messages_of("ft:1")] == ["system", "user", "assistant"]
        assert ar.session("ft:1")["metadata"] == {"tools": [{"type": "function"}]}
        assert ar.session("named")["title"] == "第二个"
        assert ar.session(fx.CLAUDE_SESSION)["source"] == "claude-code"
        assert ar.session(fx.CODEX_SESSION)["source"] == "codex"


def test_stdin_import_and_summary_line(tmp_path):
    db = str(tmp_path / "a.db")
    data = "\n".join(json.dumps(line, ensure_ascii=False) for line in fx.codex_lines()) + "\n"
    proc = cli("import", db, "-", stdin=data)
    assert proc.stdout.splitlines()[0] == (f"imported 8 messages in 1 session from 1 source into {db}; skipped: "
                                           "event_msg 4, reasoning (encrypted only) 1, turn_context 1")
    again = cli("import", db, "-", "--format", "codex", stdin=data)
    assert "imported 0 messages" in again.stdout and "8 records already imported" in again.stdout
    other = "\n".join(json.dumps(line, ensure_ascii=False) for line in fx.codex_lines("other-session")) + "\n"
    assert "imported 8 messages" in cli("import", db, "-", stdin=other).stdout  # another stream, not a clash


def test_two_piped_streams_that_begin_alike_are_both_imported(tmp_path):
    # streams are told apart by their first line: a second conversation opening with the same
    # system prompt had its lines reported as changed and was never stored
    db = str(tmp_path / "a.db")
    system = {"role": "system", "content": "You are a helpful assistant."}

    def stream(*texts):
        return "".join(json.dumps(m, ensure_ascii=False) + "\n" for m in
                       [system, *({"role": "user", "content": t} for t in texts)])

    cli("import", db, "-", stdin=stream("第一个对话：部署"))
    second = cli("import", db, "-", stdin=stream("第二个对话：数据库", "还有一句"))
    assert "imported 2 messages" in second.stdout and "changed" not in second.stdout, second.stdout
    again = cli("import", db, "-", stdin=stream("第二个对话：数据库", "还有一句", "又长了一句"))
    assert "imported 1 message " in again.stdout and "changed" not in again.stdout, again.stdout
    with Archive(db) as ar:
        assert sorted(m["content"] for m in _all(ar)) == sorted(
            [system["content"], "第一个对话：部署", "第二个对话：数据库", "还有一句", "又长了一句"])
    # a session line (several messages) that grew is a changed record, not another stream's
    sessions = [{"id": "A", "messages": [system, {"role": "user", "content": "甲"}]},
                {"id": "B", "messages": [{"role": "user", "content": "乙"}, {"role": "assistant", "content": "乙答"}]}]
    cli("import", db, "-", stdin="".join(json.dumps(m, ensure_ascii=False) + "\n" for m in sessions))
    sessions[1]["messages"].append({"role": "user", "content": "乙又问"})
    grown = cli("import", db, "-", stdin="".join(json.dumps(m, ensure_ascii=False) + "\n" for m in sessions))
    assert "imported 0 messages" in grown.stdout and "1 changed" in grown.stdout, grown.stdout
    # a record named by its own id (a Claude Code uuid) that reads otherwise is still a change
    lines = [{"type": "user", "uuid": f"u{i}", "sessionId": "c", "timestamp": "2025-11-24T10:00:00Z",
              "message": {"role": "user", "content": f"第{i}句"}} for i in range(2)]
    cli("import", db, "-", stdin="".join(json.dumps(m, ensure_ascii=False) + "\n" for m in lines))
    lines[1]["message"]["content"] = "改过的"
    changed = cli("import", db, "-", stdin="".join(json.dumps(m, ensure_ascii=False) + "\n" for m in lines))
    assert "imported 0 messages" in changed.stdout and "1 changed" in changed.stdout, changed.stdout


# ------------------------------------------------------------------ bad input


def test_a_moved_codex_rollout_adds_nothing_and_a_resumed_one_adds_its_lines(tmp_path):
    # Codex moves an archived rollout to ~/.codex/archived_sessions/: sync read it as a new file
    live = tmp_path / ".codex" / "sessions" / "2025" / "10" / "29"
    rollout = fx.write_jsonl(str(live / "rollout-x.jsonl"), fx.codex_lines())
    db = str(tmp_path / "a.db")
    with Archive(db) as ar:
        ar.import_source(str(tmp_path / ".codex"))
        n = ar.count_messages()
        moved = tmp_path / ".codex" / "archived_sessions"
        moved.mkdir()
        os.rename(rollout, moved / "rollout-x.jsonl")
        report = ar.sync()
        assert ar.count_messages() == n and report.messages == 0 and not report.changed
        # another rollout of the same session id holding other text at the same lines is stored
        other = [dict(line) for line in fx.codex_lines()]
        for line in other:
            if line.get("type") == "response_item" and line["payload"].get("type") == "message":
                line["payload"] = {**line["payload"], "content": [{"type": "input_text", "text": "续会 resumed"}]}
        fx.write_jsonl(str(live / "rollout-y.jsonl"), other)
        report = ar.sync()
        assert report.messages > 0 and not report.changed and len(_hit_ids(ar, "续会")) == report.messages


def test_an_older_codex_rollout_of_bare_items_is_found_in_a_folder_and_imported(tmp_path):
    # before the {"type", "payload"} lines: a bare session_meta, state lines, the items themselves
    day = tmp_path / ".codex" / "sessions" / "2025" / "05" / "12"
    fx.write_jsonl(str(day / "rollout-2025-05-12T09-00-00-d3b5.jsonl"), [
        {"id": "d3b5", "timestamp": "2025-05-12T09:00:00Z", "instructions": None},
        {"record_type": "state"},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "旧问题 older rollout"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "想一想旧的"}]},
        {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": "旧文件.txt"},
        {"record_type": "state"},
    ])
    fx.write_jsonl(str(tmp_path / ".codex" / "sessions" / "2025" / "10" / "29" / "rollout-x.jsonl"), fx.codex_lines())
    with Archive(str(tmp_path / "a.db")) as ar:
        report = ar.import_source(str(tmp_path / ".codex"))
        assert not report.bad and report.sources == 2
        rows = ar.messages_of("d3b5")
        assert [m["role"] for m in rows] == ["user", "assistant", "assistant", "tool"]
        assert rows[0]["content"] == "旧问题 older rollout" and rows[1]["reasoning"] == "想一想旧的"
        assert rows[3]["content"] == "旧文件.txt" and rows[3]["tool_name"] == "shell"
        assert {h.session_id for h in ar.search("旧问题")} == {"d3b5"}


def test_codex_lines_imported_under_their_line_numbers_are_known_still(tmp_path):
    # an archive whose Codex records were keyed by line number alone adds nothing on a re-import
    rollout = fx.write_jsonl(str(tmp_path / "rollout-x.jsonl"), fx.codex_lines())
    db = str(tmp_path / "a.db")
    with Archive(db) as ar:
        ar.import_source(rollout)
        n = ar.count_messages()
        ar.conn.execute("UPDATE imported SET key = substr(key, instr(key, 'line ')) WHERE key LIKE 'session %'")
        assert ar.conn.execute("SELECT count(*) FROM imported WHERE key LIKE 'line %'").fetchone()[0] > 0
        report = ar.import_source(rollout)
        assert ar.count_messages() == n and report.messages == 0 and not report.changed


def test_two_imports_of_one_source_at_once_store_each_record_once(tmp_path):
    # the other import commits the records this one read as new: its batch must not store them again
    # (it failed on the UNIQUE key of imported, an SQLite error the user could do nothing with)
    path = fx.write_jsonl(str(tmp_path / "chat.jsonl"),
                          [{"session_id": f"s{i // 10}", "role": "user", "content": f"消息 {i}"} for i in range(300)])
    db = str(tmp_path / "a.db")
    with Archive(db) as ar, Archive(db) as other:
        ran = []

        def progress(done, total):
            if not ran:
                ran.append(other.import_source(path, optimize=False))

        report = ar.import_source(path, progress=progress, optimize=False)
        assert ran[0].messages == 300
        assert report.messages == 0 and report.unchanged == 300 and not report.bad
        assert ar.count_messages() == 300


def test_a_pipe_named_as_a_source_is_refused_not_waited_on(tmp_path):
    # format detection used to open the FIFO and wait for a writer forever
    db, fifo = str(tmp_path / "a.db"), str(tmp_path / "pipe.jsonl")
    os.mkfifo(fifo)
    proc = cli("import", db, fifo, check=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "not a regular file" in proc.stderr
    assert not os.path.exists(db)
    folder = tmp_path / "histories"
    folder.mkdir()
    os.mkfifo(folder / "zz.jsonl")
    fx.write_jsonl(str(folder / "claude.jsonl"), fx.claude_lines())
    proc = cli("import", db, str(folder))  # the pipe is passed over, the file imported
    assert "imported 6 messages" in proc.stdout, proc.stdout


def test_a_line_nested_too_deeply_to_parse_does_not_break_format_detection(tmp_path):
    db, path = str(tmp_path / "a.db"), str(tmp_path / "deep.jsonl")
    with open(path, "w") as f:
        f.write(json.dumps(fx.claude_lines()[2], ensure_ascii=False) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    proc = cli("import", db, path, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{path}:2: not valid JSON (nested too deeply)" in proc.stderr and "imported 1 message" in proc.stdout


@pytest.mark.parametrize("uuid", [123, ["u"]])
def test_a_claude_line_whose_uuid_is_not_a_string_is_skipped_alone(tmp_path, uuid):
    db, path = str(tmp_path / "a.db"), str(tmp_path / "c.jsonl")
    lines = fx.claude_lines()
    bad = dict(lines[2], uuid=uuid)
    fx.write_jsonl(path, [bad, *lines[3:]])
    proc = cli("import", db, path, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{path}:1: uuid must be a string" in proc.stderr
    with Archive(db) as ar:
        assert ar.count_messages() == 5  # the lines after it are imported


def test_a_piped_hermes_database_is_refused_and_leaves_no_file_behind(tmp_path, hermes_state):
    db, state = str(tmp_path / "a.db"), str(tmp_path / "state.db")
    fx.write_hermes(state, hermes_state)
    spool_dir = tmp_path / "tmp"
    spool_dir.mkdir()
    with open(state, "rb") as f:
        proc = subprocess.run([sys.executable, "-m", "cjk_tokenizer", "import", db, "-"], stdin=f,
                              capture_output=True, text=True, timeout=300, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": ROOT, "TMPDIR": str(spool_dir)})
    assert proc.returncode == 1 and "must be named by its path" in proc.stderr
    assert os.listdir(spool_dir) == []


def test_a_piped_import_killed_leaves_its_spool_for_the_next_one_to_remove(tmp_path):
    # kill -9 ran no cleanup: the whole piped history stayed in $TMPDIR for good
    spool_dir = tmp_path / "tmp"
    spool_dir.mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = spool_dir / f"cjk-import-{gone.stdout.strip()}-abc.jsonl"  # a process that has ended
    alive = spool_dir / f"cjk-import-{os.getpid()}-def.jsonl"  # a running import's (this process)
    for p in (dead, alive):
        p.write_text("{}\n")
    data = "\n".join(json.dumps(line, ensure_ascii=False) for line in fx.codex_lines()) + "\n"
    proc = subprocess.run([sys.executable, "-m", "cjk_tokenizer", "import", str(tmp_path / "a.db"), "-"], input=data,
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT, "TMPDIR": str(spool_dir)})
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(spool_dir)) == [alive.name]


def test_bad_lines_are_counted_reported_1_based_and_never_half_imported(tmp_path):
    path = fx.write_jsonl(str(tmp_path / "c.jsonl"), [
        *fx.claude_lines()[:3],
        "{not json",
        # one line, two tool results, the second unstorable: neither is imported
        json.dumps({"type": "user", "uuid": "ux", "sessionId": fx.CLAUDE_SESSION,
                    "timestamp": "2025-11-24T10:00:00Z", "message": {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "a", "content": "fine"},
                        {"type": "tool_result", "tool_use_id": "b", "content": "lone \ud800 surrogate"}]}}),
        {"type": "user", "uuid": "uy", "sessionId": fx.CLAUDE_SESSION, "timestamp": "yesterday-ish",
         "message": {"role": "user", "content": "bad time"}},
        {"type": "user", "uuid": "uz", "sessionId": fx.CLAUDE_SESSION, "timestamp": "2025-11-24T10:05:00Z",
         "message": {"role": "user", "content": "after the bad ones"}},
    ])
    db = str(tmp_path / "a.db")
    proc = cli("import", db, path, check=False)
    assert proc.returncode == 1
    errs = [l for l in proc.stderr.splitlines() if l.startswith("cjk-tokenizer:")]
    assert [e.split(": ")[1] for e in errs] == [f"{path}:4", f"{path}:5", f"{path}:6"]
    assert "not valid JSON (Expecting property name enclosed in double quotes at column 2)" in errs[0]
    assert "lone surrogate" in errs[1] and "yesterday-ish" in errs[2]
    assert "skipped: bad 3, file-history-snapshot 1" in proc.stdout
    with Archive(db) as ar:
        contents = [m["content"] for m in _all(ar)]
        assert contents == ["帮我看看大别山项目的部署日志", "after the bad ones"]


def test_an_unknown_format_or_empty_folder_fails_before_any_archive_exists(tmp_path):
    (tmp_path / "empty").mkdir()
    weird = tmp_path / "weird.jsonl"
    weird.write_text('{"hello": 1}\n')
    for src, message in ((tmp_path / "empty", "a folder with no importable files"),
                         (weird, "cannot tell its format"),
                         (tmp_path / "nope.jsonl", "no such file")):
        db = tmp_path / "never.db"
        proc = cli("import", str(db), str(src), check=False)
        assert proc.returncode == 1 and message in proc.stderr and proc.stderr.count("\n") == 1
        assert not db.exists(), src


def test_the_archive_itself_in_an_imported_folder_is_not_read(tmp_path):
    fx.write_jsonl(str(tmp_path / "chat.jsonl"), [{"role": "user", "content": "hi"}])
    db = str(tmp_path / "a.db")
    cli("import", db, str(tmp_path))
    proc = cli("sync", db)
    assert "imported 0 messages" in proc.stdout and "1 record already imported" in proc.stdout
    proc = cli("import", db, db, "--format", "hermes", check=False)
    assert proc.returncode == 1 and "is the archive being imported into" in proc.stderr


# ------------------------------------------------------------------ session headers, time (one rule)


@pytest.mark.parametrize("header_first", [True, False])
def test_session_header_started_at_wins_over_its_messages(tmp_path, header_first):
    header = {"type": "session", "id": "s1", "title": "t", "started_at": "2025-01-01T00:00:00"}
    msg = {"session_id": "s1", "role": "user", "content": "x", "timestamp": 1800000000}
    path = fx.write_jsonl(str(tmp_path / "h.jsonl"), [header, msg] if header_first else [msg, header])
    with Archive(str(tmp_path / "a.db")) as ar:
        ar.import_source(path)
        # naive ISO-8601 means UTC
        assert ar.session("s1")["started_at"] == 1735689600.0


def test_a_bad_started_at_names_the_line(tmp_path):
    path = fx.write_jsonl(str(tmp_path / "h.jsonl"), [
        {"session_id": "s1", "role": "user", "content": "x"},
        {"type": "session", "id": "s1", "started_at": "2025-13-45"},
    ])
    proc = cli("import", str(tmp_path / "a.db"), path, check=False)
    assert proc.returncode == 1 and f"{path}:2: started_at='2025-13-45' is not a time" in proc.stderr


def test_a_bad_session_header_names_its_line_and_the_rest_imports(tmp_path):
    path = fx.write_jsonl(str(tmp_path / "h.jsonl"), [
        {"session_id": "s1", "role": "user", "content": "x"},
        {"type": "session", "id": "s1", "title": ["not", "text"]},
        {"session_id": "s1", "role": "robot", "content": "y"},
    ])
    with Archive(str(tmp_path / "a.db")) as ar:
        report = ar.import_source(path)
        assert report.bad[0].startswith(f"{path}:2: session 's1': title must be a str")
        assert report.bad[1].startswith(f"{path}:3: role must be one of")
        assert ar.count_messages() == 1


def test_time_rule():
    assert epoch("2025-01-01T00:00:00") == epoch("2025-01-01T00:00:00Z") == 1735689600.0
    assert epoch("2025-01-01T09:00:00+09:00") == 1735689600.0
    assert epoch("1735689600") == epoch(1735689600) == 1735689600.0
    assert epoch(dt.datetime(2025, 1, 1)) == 1735689600.0
    assert epoch(None) is None
    for bad in ("soon", True, float("nan"), [1]):
        with pytest.raises(ValueError):
            epoch(bad)


# ------------------------------------------------------------------ schema, export


def test_an_archive_made_before_imports_existed_gains_the_tables_and_keeps_its_data(tmp_path):
    db = str(tmp_path / "old.db")
    with Archive(db) as ar:
        ar.add_message("mine", "user", "已有的消息", timestamp=1.0)
        assert ar.conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'imported'").fetchone()[0] == 0
    path = fx.write_jsonl(str(tmp_path / "c.jsonl"), fx.claude_lines())
    with Archive(db) as ar:
        ar.import_source(path)
        assert ar.messages_of("mine")[0]["content"] == "已有的消息"
        assert ar.count_messages() == 7
        keys = ar.conn.execute("SELECT key FROM imported ORDER BY key").fetchall()
        assert [k[0] for k in keys] == ["u1", "u2", "u3", "u4", "u6", "u7"]


def _comparable(ar):
    return [(s, [{k: v for k, v in m.items() if k != "id"} for m in ar.messages_of(s["id"])])
            for s in sorted(ar.sessions(), key=lambda s: s["id"])]


def test_jsonl_export_imports_back_into_an_equal_archive(tmp_path, hermes_state):
    proj, _ = _claude_project(tmp_path)
    fx.write_jsonl(str(tmp_path / "codex" / "rollout-1.jsonl"), fx.codex_lines())
    hermes_db = str(tmp_path / "state.db")
    fx.write_hermes(hermes_db, hermes_state)
    with Archive(str(tmp_path / "a.db")) as a:
        a.import_source([str(proj), str(tmp_path / "codex"), hermes_db])
        a.add_session("empty", title="没有消息", started_at=5.0)
        out = tmp_path / "export.jsonl"
        with open(out, "w", encoding="utf-8") as f:
            assert a.export(f) == a.count_messages()
        with Archive(str(tmp_path / "b.db")) as b:
            report = b.import_source(str(out))
            assert not report.bad
            assert _comparable(b) == _comparable(a)
        buf = io.StringIO()
        a.export(buf, session_id=fx.CLAUDE_SESSION)
        assert buf.getvalue().splitlines()[0].startswith('{"type": "session", "id": "' + fx.CLAUDE_SESSION)


def test_an_archive_re_exported_after_it_grew_syncs_exactly_its_new_messages_in_their_order(tmp_path):
    # sessions were written one after another, so a message added to any but the last moved
    # every later line, and the sync stored those lines again; the order they arrived in was lost
    src, copy, out = str(tmp_path / "g1.db"), str(tmp_path / "g3.db"), str(tmp_path / "hist.jsonl")
    with Archive(src) as ar:
        ar.add_session("A", started_at=100.0)
        ar.add_message("A", "user", "部署 一", timestamp=101.0)
        ar.add_session("B", started_at=200.0)
        ar.add_message("B", "user", "部署 二", timestamp=201.0)
        ar.add_session("E", title="还没有消息", started_at=50.0)
        ar.add_message("A", "user", "部署 三", timestamp=301.0)
        with open(out, "w", encoding="utf-8") as f:
            ar.export(f)
    with Archive(copy) as ar:
        ar.import_source(out)
    with Archive(src) as ar:
        ar.add_message("B", "user", "部署 四", timestamp=401.0)
        ar.add_message("E", "user", "部署 五", timestamp=501.0)
        ar.add_message("A", "user", "部署 六", timestamp=601.0)
        with open(out, "w", encoding="utf-8") as f:
            ar.export(f)
        want = [(h.session_id, h.snippet) for h in ar.search("部署", sort="newest")]
    with Archive(copy) as ar:
        report = ar.sync()
        assert (report.messages, report.changed) == (3, []), report.summary()
        assert [(h.session_id, h.snippet) for h in ar.search("部署", sort="newest")] == want
        assert len(want) == 6 and ar.session("E")["title"] == "还没有消息"


def test_a_failed_export_leaves_its_output_file_as_it_was_and_never_overwrites_an_archive(tmp_path):
    # -o truncated its file before anything was checked: `export a.db -o a.db` emptied the archive
    db, other = str(tmp_path / "a.db"), str(tmp_path / "other.db")
    for path, text in ((db, "要导出的"), (other, "另一个")):
        with Archive(path) as ar:
            ar.add_message("s1", "user", text, timestamp=100.0)
    before = {p: open(p, "rb").read() for p in (db, other)}
    for target in (db, other, db + "-wal"):
        proc = cli("export", db, "-o", target, check=False)
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and target in proc.stderr, proc.stderr
    assert {p: open(p, "rb").read() for p in (db, other)} == before and not os.path.exists(db + "-wal")
    keep = tmp_path / "keep.jsonl"
    keep.write_text("kept\n")
    os.chmod(keep, 0o640)
    proc = cli("export", db, "--session", "typo", "-o", str(keep), check=False)
    assert proc.returncode == 1 and "typo" in proc.stderr and keep.read_text() == "kept\n"
    cli("export", db, "-o", str(keep))
    assert "要导出的" in keep.read_text() and os.stat(keep).st_mode & 0o777 == 0o640
    assert sorted(os.listdir(tmp_path)) == ["a.db", "keep.jsonl", "other.db"]  # nothing left beside it
    new = tmp_path / "new.jsonl"
    cli("export", db, "-o", str(new), "--format", "markdown")
    assert "要导出的" in new.read_text() and os.stat(new).st_mode & 0o777 == 0o666 & ~_umask()
    assert cli("export", db, "-o", os.devnull).returncode == 0 and os.path.exists(os.devnull)
    piped = subprocess.run(f"{sys.executable} -m cjk_tokenizer export {shlex.quote(db)} -o /dev/stdout | cat",
                           shell=True, capture_output=True, text=True, timeout=120, cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": ROOT})
    assert piped.returncode == 0 and "要导出的" in piped.stdout, piped.stderr


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_markdown_export_tells_said_thought_and_tool_output_apart(tmp_path):
    _, path = _claude_project(tmp_path)
    db = str(tmp_path / "a.db")
    cli("import", db, path)
    md = cli("export", db, "--session", fx.CLAUDE_SESSION, "--format", "markdown").stdout
    assert md.startswith("# 部署失败排查\n")
    assert "> **thought**\n>\n> 先读日志再判断迁移是否幂等" in md
    assert "## tool output (Read)" in md and "```\nERROR 迁移失败：索引 idx_owner 已存在\n```" in md
    assert "**calls** `Bash`" in md
    assert "我先读取部署日志。\n" in md
    proc = cli("export", db, "--session", "nope", check=False)
    assert proc.returncode == 1 and "no session 'nope'" in proc.stderr


@pytest.mark.parametrize("calls, shown", [
    ({"name": "deploy", "arguments": {"env": "生产"}}, '{"name": "deploy", "arguments": {"env": "生产"}}'),
    ({"function": {"name": "deploy", "arguments": {"env": "生产"}}}, '{"env": "生产"}'),
    ([{"id": "c1", "input": "部署"}], '{"id": "c1", "input": "部署"}'),
    ("部署 as text", "部署 as text"),
])
def test_markdown_export_shows_tool_calls_of_every_stored_shape(tmp_path, calls, shown):
    # a call stored as one dict, or in a shape other than OpenAI's, was left out
    with Archive(str(tmp_path / "a.db")) as ar:
        ar.add_message("s", "assistant", None, tool_calls=calls)
        assert len(ar.search("生产 OR 部署")) == 1
        buf = io.StringIO()
        ar.export(buf, format="markdown")
    assert f"\n{shown}\n```" in buf.getvalue(), buf.getvalue()


def test_cli_imports_hermes_claude_and_codex_histories_then_adds_nothing(tmp_path, hermes_state):
    proj, _ = _claude_project(tmp_path)
    codex_dir = tmp_path / ".codex" / "sessions"
    fx.write_jsonl(str(codex_dir / "2025" / "10" / "29" / "rollout-x.jsonl"), fx.codex_lines())
    hermes_db = str(tmp_path / "state.db")
    fx.write_hermes(hermes_db, hermes_state)
    db = str(tmp_path / "a.db")
    first = cli("import", db, hermes_db, str(proj), str(codex_dir))
    assert first.stdout.startswith("imported 19 messages in 4 sessions from 3 sources")
    again = cli("import", db, hermes_db, str(proj), str(codex_dir))
    assert again.stdout.startswith(f"imported 0 messages in 0 sessions from 3 sources into {db}; "
                                   "19 records already imported")
    assert cli("sync", db).stdout.startswith("imported 0 messages")
    for query, role in (("인덱스가", "tool"), ("大别山", "user"), ("東京は晴れ", "assistant")):
        hits = json.loads(cli("search", db, query, "--json").stdout)
        assert [h["role"] for h in hits] == [role], query


@pytest.mark.parametrize("field", ["uuid", "sessionId"])
def test_a_claude_line_whose_id_is_not_utf8_is_one_bad_record_and_the_folder_imports(tmp_path, field):
    # an id that cannot be stored as text stopped the whole import, and every later sync
    def line(uuid, session, text):
        return (json.dumps({"type": "user", "uuid": uuid, "sessionId": session, "timestamp": "2025-11-24T10:00:00Z",
                            "message": {"role": "user", "content": text}}, ensure_ascii=False) + "\n").encode()

    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(line("a1", "sa", "甲"))
    bad = line("b2", "sb", "x").replace(b'"b2"' if field == "uuid" else b'"sb"', b'"\xff"')
    (folder / "b.jsonl").write_bytes(line("b1", "sb", "乙") + bad)
    (folder / "c.jsonl").write_bytes(line("c1", "sc", "丙"))
    db = str(tmp_path / "a.db")
    proc = cli("import", db, str(folder), check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    errs = [e for e in proc.stderr.splitlines() if e.startswith("cjk-tokenizer:")]
    assert len(errs) == 1 and f"{folder / 'b.jsonl'}:2: " in errs[0] and "0xFF" in errs[0], proc.stderr
    assert "skipped: bad 1" in proc.stdout, proc.stdout
    with Archive(db) as ar:
        assert sorted(m["content"] for m in _all(ar)) == sorted(["甲", "乙", "丙"])
    again = cli("sync", db, check=False)
    assert again.returncode == 1 and "Traceback" not in again.stderr and "imported 0 messages" in again.stdout


def test_a_codex_rollout_copied_from_one_of_three_of_its_session_is_not_stored_again(tmp_path):
    # three rollouts of one session id hold other text at the same lines: a copy of the second
    # was checked against one of them only
    db = str(tmp_path / "a.db")
    for name, text in (("a", "甲文件"), ("b", "乙文件"), ("c", "丙文件")):
        lines = [dict(line) for line in fx.codex_lines()[:3]]
        lines[2]["payload"] = {**lines[2]["payload"], "content": [{"type": "input_text", "text": text}]}
        fx.write_jsonl(str(tmp_path / "live" / f"rollout-{name}.jsonl"), lines)
    with Archive(db) as ar:
        ar.import_source(str(tmp_path / "live"))
        n = ar.count_messages()
        os.makedirs(tmp_path / "elsewhere")
        shutil.copy(tmp_path / "live" / "rollout-b.jsonl", tmp_path / "elsewhere" / "rollout-b.jsonl")
        report = ar.import_source(str(tmp_path / "elsewhere"))
        assert report.messages == 0 and ar.count_messages() == n and len(_hit_ids(ar, "乙文件")) == 1


def _cli_bound_by_file_modes(*args):
    """The CLI as a user whose file modes bind it (root, without the capabilities that pass over them)."""
    prefix = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: file modes cannot be made to bind")
        prefix = ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search", "--"]
    env = {**os.environ, "PYTHONPATH": ROOT}
    return subprocess.run([*prefix, sys.executable, "-m", "cjk_tokenizer", *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT, env=env)


def test_an_unreadable_history_is_reported_not_passed_over(tmp_path):
    # in a folder it was left out without a word, and on its own it was said to be of no known format
    folder = tmp_path / "proj"
    fx.write_jsonl(str(folder / "good.jsonl"), [{"role": "user", "content": "读得到"}])
    locked = fx.write_jsonl(str(folder / "locked.jsonl"), [{"role": "user", "content": "读不到"}])
    (folder / "notes.txt").write_text("not a history")
    os.chmod(locked, 0)
    os.chmod(folder / "notes.txt", 0)
    try:
        proc = _cli_bound_by_file_modes("import", str(tmp_path / "a.db"), str(folder))
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        errs = [e for e in proc.stderr.splitlines() if e.startswith("cjk-tokenizer:")]
        assert len(errs) == 1 and f"{locked}: cannot be read (Permission denied)" in errs[0], proc.stderr
        with Archive(str(tmp_path / "a.db")) as ar:
            assert [m["content"] for m in _all(ar)] == ["读得到"]
        alone = _cli_bound_by_file_modes("import", str(tmp_path / "b.db"), locked, "--format", "openai")
        assert alone.returncode == 1 and f"{locked}: cannot be read (Permission denied)" in alone.stderr
        assert alone.stderr.count("\n") == 1 and not os.path.exists(tmp_path / "b.db")
    finally:
        os.chmod(locked, 0o644)


def test_a_line_that_is_not_utf8_is_named_as_such(tmp_path):
    # the byte was reported as a "lone surrogate", which the line does not hold
    path = str(tmp_path / "c.jsonl")
    good = json.dumps(fx.claude_lines()[2], ensure_ascii=False).encode()
    bad = json.dumps(dict(fx.claude_lines()[5], uuid="u-bad")).encode().replace(b"ERROR", b"ERR\xffOR")
    with open(path, "wb") as f:
        f.write(good + b"\n" + bad + b"\n")
    proc = cli("import", str(tmp_path / "a.db"), path, check=False)
    assert proc.returncode == 1 and f"{path}:2: content holds byte 0xFF at position" in proc.stderr, proc.stderr
    assert "not UTF-8" in proc.stderr and "surrogate" not in proc.stderr


def test_a_json_error_says_where_on_its_line(tmp_path):
    path = fx.write_jsonl(str(tmp_path / "c.jsonl"), [*fx.claude_lines()[:1], '{"type": "user", "x": "a\tb"}'])
    proc = cli("import", str(tmp_path / "a.db"), path, check=False)
    assert proc.returncode == 1
    assert f"{path}:2: not valid JSON (Invalid control character at column 25)" in proc.stderr


def test_a_source_read_as_the_wrong_format_is_an_error_not_an_empty_import(tmp_path):
    codex = fx.write_jsonl(str(tmp_path / "rollout.jsonl"), fx.codex_lines())
    db = str(tmp_path / "a.db")
    proc = cli("import", db, codex, "--format", "claude-code", check=False)
    assert proc.returncode == 1
    assert "imported 0 messages in 0 sessions from 1 source into" in proc.stdout and "skipped: " in proc.stdout
    assert proc.stderr.splitlines()[-1] == (
        "cjk-tokenizer: error: no record read is a claude-code message; is the source in another format? "
        "Without --format each file's format is detected")
    proc = cli("import", db, codex)  # detected: the same file imports
    assert "imported 0 messages" not in proc.stdout and proc.returncode == 0


@pytest.mark.parametrize("header", [False, True])
def test_a_wrong_format_leaves_no_session_and_no_source_to_sync(tmp_path, header):
    # chat lines read as Codex looked like an older rollout's session line: an empty session named
    # after the file, and a source every sync read again, adding nothing
    lines = [{"session_id": "s1", "role": "user", "content": "你好"},
             {"session_id": "s1", "role": "assistant", "content": "hi"}]
    if header:
        lines.insert(0, {"type": "session", "id": "s1", "title": "问候"})
    chat = fx.write_jsonl(str(tmp_path / "chat.jsonl"), lines)
    db = str(tmp_path / "a.db")
    proc = cli("import", db, chat, "--format", "codex", check=False)
    assert proc.returncode == 1 and "no record read is a codex message" in proc.stderr
    with Archive(db) as ar:
        assert ar.sessions() == [] and ar.conn.execute("SELECT count(*) FROM import_roots").fetchone()[0] == 0
    cli("import", db, chat)  # detected as openai
    with Archive(db) as ar:
        assert [s["id"] for s in ar.sessions()] == ["s1"] and ar.count_messages() == 2
    assert "imported 0 messages" in cli("sync", db).stdout


def test_an_export_of_what_other_writers_stored_imports_back_verbatim(tmp_path):
    # tool_calls given as text were parsed on read (repeated keys lost data) and exported
    # re-spelt, [] came back as no calls, metadata that is not a dict made the message a
    # bad record, and a message without a time got the import's time
    src = Archive(str(tmp_path / "a.db"))
    src.add_message("s", "assistant", "x", tool_calls='{"q":"\\u90e8\\u7f72","n":1.50}', timestamp=1)
    src.add_message("s", "assistant", "y", tool_calls=[], timestamp=2)
    src.add_message("s", "assistant", None, tool_calls='{"cmd": "部署到生产", "cmd": "ls"}', timestamp=3)
    src.add_message("s", "assistant", "z", tool_calls=[{"id": "c1", "function": {"name": "f", "arguments": "{}"}}],
                    metadata={"k": [1, 2]}, timestamp=4)
    src.conn.execute("INSERT INTO messages(session_id, role, content, timestamp, metadata) "
                     "VALUES ('s', 'user', 'note', 5, 'imported from X'), ('s', 'user', 'list', 6, '[1,2]')")
    src.conn.execute("INSERT INTO messages(session_id, role, content) VALUES ('s', 'user', 'no time')")
    src.add_session("t", title="标题", source="tool")
    src.add_message("t", "user", "in t", timestamp=7, metadata=[])  # an empty value stores no metadata
    src.conn.execute("UPDATE sessions SET metadata = 'written by another tool' WHERE id = 't'")
    assert src.get_message(3)["tool_calls"] == '{"cmd": "部署到生产", "cmd": "ls"}'  # as stored, not {'cmd': 'ls'}
    assert src.get_message(4)["tool_calls"][0]["id"] == "c1"  # what the archive wrote reads parsed
    out = io.StringIO()
    assert src.export(out) == 8
    path = tmp_path / "e.jsonl"
    path.write_text(out.getvalue(), encoding="utf-8")
    dst = Archive(str(tmp_path / "b.db"))
    report = dst.import_source(str(path))
    assert report.bad == []
    columns = "role, content, reasoning, tool_name, tool_calls, tool_call_id, timestamp, metadata"
    rows = f"SELECT {columns} FROM messages ORDER BY id"
    assert dst.conn.execute(rows).fetchall() == src.conn.execute(rows).fetchall()
    assert len(dst.search("u90e8")) == len(src.search("u90e8")) == 1
    sessions = "SELECT id, title, source, started_at, metadata FROM sessions ORDER BY id"
    assert dst.conn.execute(sessions).fetchall() == src.conn.execute(sessions).fetchall()


def test_a_jsonl_file_with_a_byte_order_mark_keeps_its_first_line(tmp_path):
    path = tmp_path / "chat.jsonl"
    with open(path, "w", encoding="utf-8-sig") as f:
        for t in ("第一条", "第二条"):
            f.write(json.dumps({"session_id": "s", "role": "user", "content": t}) + "\n")
    with Archive(str(tmp_path / "a.db")) as ar:
        for fmt in ("openai", "auto"):
            report = ar.import_source(str(path), format=fmt)
            assert report.bad == []
        assert [m["content"] for m in ar.messages_of("s")] == ["第一条", "第二条"]


def test_add_openai_message_drops_no_value_that_another_field_names(tmp_path):
    with Archive(str(tmp_path / "a.db")) as ar:
        m = ar.get_message(ar.add_openai_message("s", {"role": "tool", "name": "A", "tool_name": "B", "content": "x"}))
        assert (m["tool_name"], m["metadata"]) == ("B", {"name": "A"})
        m = ar.get_message(ar.add_openai_message("s", {"role": "tool", "name": "A", "content": "x"}))
        assert (m["tool_name"], m["metadata"]) == ("A", {})
        m = ar.get_message(ar.add_openai_message("s", {"role": "user", "content": "x", "metadata": {"foo": 1, "k": 2},
                                                       "foo": 2, "k": 2, "bar": 3}))
        assert m["metadata"] == {"foo": 1, "k": 2, "bar": 3, "message_fields": {"foo": 2}}
        # metadata given as text has no room for the name: refused, not dropped
        from cjk_tokenizer.records import InputError

        with pytest.raises(InputError, match="metadata must be a dict when the message has other fields"):
            ar.add_openai_message("s", {"role": "user", "name": "alice", "content": "x", "metadata": "note"})
        m = ar.get_message(ar.add_openai_message("s", {"role": "user", "content": "x", "metadata": "note"}))
        assert m["metadata"] == "note"


def test_a_copied_transcript_imported_while_its_original_imports_is_stored_once(tmp_path, monkeypatch):
    # two imports at once (a cron sync and an import of the archived copy): each checked
    # the other's keys before the other committed them, and both stored the lines
    from cjk_tokenizer.importers import driver

    proj, path = _claude_project(tmp_path)
    copy = tmp_path / "archived" / "copy.jsonl"
    copy.parent.mkdir()
    shutil.copy(path, copy)
    with Archive(str(tmp_path / "a.db")) as ar:
        first = ar.import_source(str(path))
        assert first.messages > 0
        # the second import read the other file's keys before the first committed them
        monkeypatch.setattr(driver._Run, "_imported_elsewhere", lambda self, src, key, digest: None)
        second = ar.import_source(str(copy))
        assert (second.messages, len(second.sessions)) == (0, 0), second.summary()
        assert second.unchanged == first.messages and ar.count_messages() == first.messages


def test_a_hermes_rewrite_between_reading_its_ids_and_its_rows_adds_nothing(tmp_path, hermes_state, monkeypatch):
    # the ids and the rows were read in two snapshots: a /retry between them made every
    # re-inserted row look new, and the whole transcript was stored again
    from pathlib import Path

    from cjk_tokenizer.importers import hermes

    db = str(tmp_path / "state.db")
    writer = hermes_state.SessionDB(db_path=Path(db))
    writer.create_session("h2", "cli")
    for k in range(5):
        writer.append_message("h2", "user", f"第{k}条消息", timestamp=1764100000.0 + k)
    writer.close()
    with Archive(str(tmp_path / "a.db")) as ar:
        ar.import_source(db)
        real_keys = hermes.keys

        def keys_then_rewrite(src):
            found = real_keys(src)
            # Hermes in its own process, as it runs (two SQLite libraries in one process do
            # not see each other's locks: its closing checkpoint would pull the pages away)
            rewrite = ("import sys, hermes_state; from pathlib import Path\n"
                       "db = hermes_state.SessionDB(db_path=Path(sys.argv[1]))\n"
                       "db.replace_messages('h2', db.get_messages_as_conversation('h2')); db.close()\n")
            proc = subprocess.run([sys.executable, "-c", rewrite, db], capture_output=True, text=True, timeout=60)
            assert proc.returncode == 0, proc.stderr
            return found

        monkeypatch.setattr(hermes, "keys", keys_then_rewrite)
        report = ar.sync()
        assert report.messages == 0 and ar.count_messages() == 5, report.summary()
        monkeypatch.undo()
        report = ar.sync()  # now the rewrite is seen whole: its new ids stand for the old rows
        assert report.messages == 0 and report.unchanged == 5 and ar.count_messages() == 5


def test_a_hermes_database_locked_for_a_moment_is_waited_for(tmp_path, hermes_state):
    # a rollback-journal state.db locked by Hermes: "cannot tell its format", or "database is locked"
    import threading
    import time

    db = str(tmp_path / "state.db")
    fx.write_hermes(db, hermes_state)
    conn = apsw.Connection(db)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("BEGIN EXCLUSIVE")
    released = threading.Timer(1.0, lambda: conn.execute("COMMIT"))
    released.start()
    try:
        t0 = time.monotonic()
        with Archive(str(tmp_path / "a.db")) as ar:
            report = ar.import_source(db)
        assert report.messages == 5 and not report.bad and time.monotonic() - t0 >= 0.9, report.summary()
    finally:
        released.join()
        conn.close()


def test_a_transcript_line_still_being_written_is_not_a_bad_record(tmp_path):
    # an agent writing its transcript leaves the last line unfinished: the import failed (status 1)
    lines = [json.dumps({"session_id": "s", "role": "user", "content": f"第{k}条"}) for k in range(3)]
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(lines[:2]) + "\n" + lines[2][:15], encoding="utf-8")
    db = str(tmp_path / "a.db")
    proc = cli("import", db, str(path), "--format", "openai")
    assert proc.returncode == 0 and "unfinished last line 1" in proc.stdout, (proc.stdout, proc.stderr)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with Archive(db) as ar:
        assert ar.sync().messages == 1
        assert [m["content"] for m in ar.messages_of("s")] == ["第0条", "第1条", "第2条"]
    path.write_text("\n".join(lines) + "\n" + "{not json\n", encoding="utf-8")  # a finished line is bad
    with Archive(db) as ar:
        assert ar.sync().bad == [f"{path}:4: not valid JSON (Expecting property name enclosed in double quotes "
                                 "at column 2)"]


def test_cjk_in_tool_call_arguments_written_with_json_escapes_is_found(tmp_path, hermes_state):
    # Hermes (and json.dumps anywhere) writes arguments as \\uXXXX escapes: no search found them
    from pathlib import Path

    args = json.dumps({"cmd": "echo 天堂寨景区", "path": "C:\\\\u5929", "emoji": "😀"})
    assert "\\u5929\\u5802" in args
    db = str(tmp_path / "state.db")
    writer = hermes_state.SessionDB(db_path=Path(db))
    writer.create_session("h1", "cli")
    writer.append_message("h1", "assistant", "x", timestamp=1764000000.0,
                          tool_calls=[{"id": "c1", "type": "function", "function": {"name": "terminal",
                                                                                    "arguments": args}}])
    writer.close()
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"session_id": "o1", "role": "assistant", "content": None, "tool_calls": [
        {"id": "c2", "type": "function", "function": {"name": "weather", "arguments": json.dumps({"city": "合肥天气"})}}
    ]}) + "\n", encoding="utf-8")
    with Archive(str(tmp_path / "a.db")) as ar:
        assert not ar.import_source(db).bad and not ar.import_source(str(chat)).bad
        for word, session in (("天堂寨景区", "h1"), ("合肥天气", "o1")):
            hits = ar.search(word)
            assert [h.session_id for h in hits] == [session] and hits[0].matched_in == ["tool_calls"], word
        call, = ar.messages_of("h1")[0]["tool_calls"]
        # the same JSON value, CJK written out; an escaped backslash before "u" is left as it is
        assert json.loads(call["function"]["arguments"]) == json.loads(args)
        assert "天堂寨景区" in call["function"]["arguments"] and "C:\\\\\\\\u5929" in call["function"]["arguments"]
        m = ar.get_message(ar.add_openai_message("s", {"role": "assistant", "tool_calls": [
            {"id": "c3", "function": {"name": "f", "arguments": json.dumps({"q": "部署"})}}]}))
        assert m["tool_calls"][0]["function"]["arguments"] == '{"q": "部署"}'


def test_tool_calls_nested_past_the_parser_are_a_clear_error_or_kept(tmp_path):
    # readable_json met RecursionError: one such record aborted a whole import with a traceback
    from cjk_tokenizer.records import InputError, readable_json

    deep_args = "[" * 1000 + '"\\u4e2d"' + "]" * 1000
    assert readable_json(deep_args) == deep_args
    with Archive(str(tmp_path / "a.db")) as ar:
        mid = ar.add_message("s", "assistant", None, tool_calls=[
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": deep_args}}])
        assert ar.get_message(mid)["tool_calls"][0]["function"]["arguments"] == deep_args
        deep = []
        for _ in range(3000):
            deep = [deep]
        with pytest.raises(InputError, match="nests deeper"):
            ar.add_message("s", "assistant", None, tool_calls=deep)


def test_tool_calls_written_or_exported_any_way_are_found_and_round_trip(tmp_path):
    # update_message stored arguments escaped, and an export of calls stored escaped
    # imported back as other text
    calls = [{"id": "c1", "type": "function",
              "function": {"name": "web_search", "arguments": json.dumps({"query": "东京天气"})}}]
    src = Archive(str(tmp_path / "a.db"))
    src.add_message("s", "assistant", "x", tool_calls=calls)
    src.update_message(src.add_message("s", "assistant", "plain"), tool_calls=calls)
    src.add_message("s", "assistant", "y", tool_calls=json.dumps(calls))  # a string: as given
    src.conn.execute("INSERT INTO messages(session_id, role, content, tool_calls) VALUES ('s', 'assistant', 'z', ?)",
                     (json.dumps(calls, ensure_ascii=False),))  # another writer, arguments escaped
    assert [h.message_id for h in src.search("东京天气")] == [2, 1]
    out = io.StringIO()
    src.export(out)
    path = tmp_path / "e.jsonl"
    path.write_text(out.getvalue(), encoding="utf-8")
    dst = Archive(str(tmp_path / "b.db"))
    assert not dst.import_source(str(path)).bad
    rows = "SELECT role, content, tool_calls FROM messages ORDER BY id"
    assert dst.conn.execute(rows).fetchall() == src.conn.execute(rows).fetchall()
