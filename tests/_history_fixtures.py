"""Agent histories in their tools' own formats, built from the formats' public descriptions.

Each writer returns what it wrote so tests can check every field arrived.
"""
from __future__ import annotations

import json
import os

CLAUDE_SESSION = "7f0c9a6e-3b1d-4a55-9a8e-2d6f1c0b9e11"
CODEX_SESSION = "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"


def write_jsonl(path, lines) -> str:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write((line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)) + "\n")
    return path


def claude_lines(session=CLAUDE_SESSION):
    env = {"sessionId": session, "cwd": "/home/u/proj", "gitBranch": "main", "version": "2.0.14",
           "isSidechain": False, "userType": "external"}
    return [
        {"type": "summary", "summary": "部署失败排查", "leafUuid": "u6"},
        {"type": "file-history-snapshot", "messageId": "m0", "snapshot": {"trackedFileBackups": {}}},
        {**env, "type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2025-11-24T10:00:00.000Z",
         "message": {"role": "user", "content": "帮我看看大别山项目的部署日志"}},
        {**env, "type": "assistant", "uuid": "u2", "parentUuid": "u1", "timestamp": "2025-11-24T10:00:05.000Z",
         "requestId": "req_1",
         "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "thinking", "thinking": "先读日志再判断迁移是否幂等", "signature": "sig"}],
                     "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 3}}},
        {**env, "type": "assistant", "uuid": "u3", "parentUuid": "u2", "timestamp": "2025-11-24T10:00:06.000Z",
         "message": {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "text", "text": "我先读取部署日志。"},
                                 {"type": "tool_use", "id": "toolu_01", "name": "Read",
                                  "input": {"file_path": "/var/log/deploy.log"}}]}},
        {**env, "type": "user", "uuid": "u4", "parentUuid": "u3", "timestamp": "2025-11-24T10:00:07.000Z",
         "toolUseResult": {"type": "text"},
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_01",
              "content": [{"type": "text", "text": "ERROR 迁移失败：索引 idx_owner 已存在"}]}]}},
        {**env, "type": "system", "subtype": "compact_boundary", "uuid": "u5", "content": "Conversation compacted",
         "timestamp": "2025-11-24T10:00:08.000Z"},
        {**env, "type": "progress", "uuid": "p1", "data": {"type": "hook_progress"}},
        {**env, "type": "assistant", "uuid": "u6", "parentUuid": "u4", "timestamp": "2025-11-24T10:00:09.000Z",
         "message": {"id": "msg_2", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "tool_use", "id": "toolu_02", "name": "Bash",
                                  "input": {"command": "psql -c 'DROP INDEX idx_owner'"}}]}},
        {**env, "type": "user", "uuid": "u7", "parentUuid": "u6", "timestamp": "2025-11-24T10:00:10.000Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_02", "content": "permission denied for 索引",
              "is_error": True}]}},
        {**env, "type": "some-future-type", "uuid": "f1", "payload": None},
    ]


def codex_lines(session=CODEX_SESSION):
    ts = "2025-10-29T00:59:3{}.317Z"
    return [
        {"timestamp": ts.format(8), "type": "session_meta", "payload": {
            "id": session, "timestamp": "2025-10-29T00:59:38.308Z", "cwd": "/tmp/codex-proj",
            "originator": "codex_cli_rs", "cli_version": "0.46.0", "instructions": None, "source": "cli",
            "model_provider": "openai", "git": {}}},
        {"timestamp": ts.format(8), "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]}},
        {"timestamp": ts.format(8), "type": "response_item", "payload": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": "東京の天気を調べて"}]}},
        {"timestamp": ts.format(8), "type": "event_msg", "payload": {
            "type": "user_message", "message": "東京の天気を調べて", "kind": "plain"}},
        {"timestamp": ts.format(8), "type": "turn_context", "payload": {
            "cwd": "/tmp/codex-proj", "approval_policy": "never", "model": "gpt-5-codex", "effort": "high"}},
        {"timestamp": ts.format(9), "type": "event_msg", "payload": {
            "type": "agent_reasoning", "text": "**天気予報のツールを使う**"}},
        {"timestamp": ts.format(9), "type": "response_item", "payload": {
            "type": "reasoning", "summary": [{"type": "summary_text", "text": "**天気予報のツールを使う**"}],
            "content": None, "encrypted_content": "gAAAAB..."}},
        {"timestamp": ts.format(9), "type": "response_item", "payload": {
            "type": "reasoning", "summary": [], "encrypted_content": "gAAAAC..."}},
        {"timestamp": ts.format(9), "type": "response_item", "payload": {
            "type": "function_call", "name": "shell", "arguments": "{\"command\":[\"curl\",\"wttr.in/Tokyo\"]}",
            "call_id": "call_abc"}},
        {"timestamp": ts.format(9), "type": "response_item", "payload": {
            "type": "function_call_output", "call_id": "call_abc",
            "output": "{\"output\":\"東京: 晴れ 18°C\\n\",\"metadata\":{\"exit_code\":0}}"}},
        {"timestamp": ts.format(9), "type": "response_item", "payload": {
            "type": "custom_tool_call", "status": "completed", "call_id": "call_def", "name": "apply_patch",
            "input": "*** Begin Patch\n*** Add File: weather.md\n+晴れ\n*** End Patch"}},
        {"timestamp": ts.format(9), "type": "response_item", "payload": {
            "type": "custom_tool_call_output", "call_id": "call_def", "output": "Success. Updated weather.md"}},
        {"timestamp": ts.format(9), "type": "response_item", "payload": {
            "type": "message", "role": "assistant", "id": "msg_9",
            "content": [{"type": "output_text", "text": "東京は晴れ、18°Cです。"}]}},
        {"timestamp": ts.format(9), "type": "event_msg", "payload": {
            "type": "agent_message", "message": "東京は晴れ、18°Cです。"}},
        {"timestamp": ts.format(9), "type": "event_msg", "payload": {
            "type": "token_count", "info": {"total_token_usage": {"input_tokens": 5}}}},
    ]


def write_hermes(path, hermes_state, *, more=False):
    """A state.db written by Hermes' own SessionDB (``more``: a later turn appended)."""
    from pathlib import Path

    db = hermes_state.SessionDB(db_path=Path(path))
    try:
        if not more:
            db.create_session("h1", "cli", model="anthropic/claude-sonnet-4", cwd="/srv/app")
            db.append_message("h1", "user", "서버 배포가 실패했어요", timestamp=1764000000.0)
            db.append_message(
                "h1", "assistant", None, timestamp=1764000001.0,
                reasoning="배포 로그부터 확인해야 한다",
                reasoning_content="배포 로그부터 확인해야 한다",
                reasoning_details=[{"type": "reasoning.text", "text": "마이그레이션 충돌 가능성"},
                                   {"type": "reasoning.encrypted", "data": "opaque"}],
                tool_calls=[{"id": "call_1", "type": "function",
                             "function": {"name": "terminal", "arguments": "{\"command\": \"tail 배포.log\"}"}}])
            db.append_message("h1", "tool", "duplicate key: 인덱스가 이미 존재합니다", tool_name="terminal",
                              tool_call_id="call_1", timestamp=1764000002.0)
            db.append_message("h1", "assistant", "인덱스를 지우고 다시 배포하세요.", timestamp=1764000003.0,
                              finish_reason="stop")
            db.create_session("h2", "telegram", model="gpt-5")
            db.append_message("h2", "user", "早上好", timestamp=1764100000.0)
        else:
            db.set_session_title("h1", "배포 실패")
            db.append_message("h1", "user", "고마워요, 해결됐어요", timestamp=1764000100.0)
            db.end_session("h1", "user_exit")
    finally:
        db.close()
