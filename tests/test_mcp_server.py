"""``cjk-tokenizer mcp DB`` as an MCP client sees it.

Each test starts the server as a subprocess (``python -m cjk_tokenizer mcp
DB``, importing this tree) and drives it with the official SDK's own stdio
client and ``ClientSession``.  What an MCP client gets must be exactly what an
in-process agent gets from agent_tool.py: the same tool definition and the
same results, errors included.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading

import apsw
import pytest

from cjk_tokenizer import Archive
from cjk_tokenizer.agent_tool import handle_session_search, parameters_schema, tool_definitions

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CALL_TIMEOUT = 120  # seconds for one whole client conversation (server start included)


@pytest.fixture(scope="module")
def sdk():
    try:
        import anyio
        from mcp import ClientSession, StdioServerParameters, stdio_client
        from mcp.shared.exceptions import MCPError
    except ImportError:
        msg = 'the MCP SDK is not installed (pip install "cjk-tokenizer[mcp]")'
        if os.environ.get("CJK_REQUIRE_ALL_HOSTS"):
            pytest.fail(msg + " and CJK_REQUIRE_ALL_HOSTS is set")
        pytest.skip(msg)
    return {"anyio": anyio, "ClientSession": ClientSession, "StdioServerParameters": StdioServerParameters,
            "stdio_client": stdio_client, "MCPError": MCPError}


def _build(path, **kw):
    with Archive(path, **kw) as ar:
        sid = ar.add_session("s1", title="部署", started_at=1_714_521_600)
        ids = [ar.add_message(sid, "user", "部署失败了，怎么回滚？", timestamp=1_714_521_601),
               ar.add_message(sid, "assistant", "", reasoning="先回滚再查 quokka", timestamp=1_714_521_602),
               ar.add_message(sid, "assistant", "已回滚。", timestamp=1_714_521_603)]
        ar.add_message("s2", "user", "デプロイのエラー", timestamp=1_714_608_000)
    return ids


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("mcp") / "archive.db")
    return path, _build(path)


def converse(sdk, db_path, body, cli_args=()):
    """Start the server on ``db_path`` (``cli_args``: the command line's options before ``mcp``), initialize,
    run ``await body(session)``; its result and the server's stderr."""
    anyio = sdk["anyio"]
    params = sdk["StdioServerParameters"](
        command=sys.executable, args=["-m", "cjk_tokenizer", *cli_args, "mcp", db_path], cwd=ROOT,
        # the whole environment: sanitizer runs preload their runtime, and this tree must be what is imported
        env={**os.environ, "PYTHONPATH": ROOT},
    )
    out = {}

    async def main():
        with anyio.fail_after(CALL_TIMEOUT):
            async with sdk["stdio_client"](params, errlog=errlog) as (read, write):
                async with sdk["ClientSession"](read, write) as session:
                    init = await session.initialize()
                    assert init.server_info.name == "cjk-tokenizer"
                    out["result"] = await body(session)

    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        anyio.run(main)
        errlog.seek(0)
        return out["result"], errlog.read()


def local(db_path, arguments):
    """What the in-process handler answers for ``arguments``."""
    with Archive(db_path, auto_catch_up=0) as ar:
        return json.loads(handle_session_search(ar, arguments))


def unpack(result) -> dict:
    """The structured result, checked against the text block that carries the same JSON."""
    assert len(result.content) == 1 and result.content[0].type == "text"
    assert json.loads(result.content[0].text) == result.structured_content
    assert result.is_error == ("error" in result.structured_content)
    return result.structured_content


# ---- the tool ----------------------------------------------------------------------------


def test_lists_the_agent_tool_and_refuses_unknown_tools(sdk, db):
    async def body(session):
        listed = await session.list_tools()
        with pytest.raises(sdk["MCPError"]) as err:
            await session.call_tool("session_serch", {"query": "x"})
        return listed, err.value

    (listed, err), _ = converse(sdk, db[0], body)
    assert [t.name for t in listed.tools] == ["session_search"]
    tool = listed.tools[0]
    spec = tool_definitions()["anthropic"]
    assert tool.description == spec["description"]
    assert tool.input_schema == parameters_schema() == spec["input_schema"]
    assert tool.annotations.read_only_hint is True and tool.annotations.destructive_hint is False
    assert err.error.code == -32602 and "session_serch" in err.error.message


@pytest.mark.parametrize("cli_args", [(), ("--mmap-size", "0")], ids=["mapped", "unmapped"])
def test_four_shapes_are_the_in_process_results(sdk, db, cli_args):
    path, (m1, m2, m3) = db
    calls = {
        "discovery": {"query": "回滚"},
        "scroll": {"around_message_id": m2, "window": 1},
        "read": {"session_id": "s1"},
        "browse": {},
    }

    async def body(session):
        out = {mode: await session.call_tool("session_search", args) for mode, args in calls.items()}
        out["no arguments"] = await session.call_tool("session_search")
        return out

    results, _ = converse(sdk, path, body, cli_args)
    got = {mode: unpack(r) for mode, r in results.items()}
    for mode, args in calls.items():
        assert got[mode]["mode"] == mode and "error" not in got[mode]
        assert got[mode] == local(path, args), mode
    assert got["no arguments"] == got["browse"]

    assert [s["session"]["session_id"] for s in got["discovery"]["sessions"]] == ["s1"]
    assert got["discovery"]["sessions"][0]["hit"]["where"] == "said"
    assert [m["id"] for m in got["scroll"]["messages"]] == [m1, m2, m3]
    assert [m["content"] for m in got["read"]["messages"]] == ["部署失败了，怎么回滚？", "", "已回滚。"]
    assert {s["session_id"] for s in got["browse"]["sessions"]} == {"s1", "s2"}


def test_reasoning_only_with_include_reasoning(sdk, db):
    path, (_, m2, _) = db
    calls = [{"query": "quokka"}, {"query": "quokka", "include_reasoning": True},
             {"session_id": "s1"}, {"session_id": "s1", "include_reasoning": True}]

    async def body(session):
        return [unpack(await session.call_tool("session_search", args)) for args in calls]

    (hidden, shown, read_hidden, read_shown), _ = converse(sdk, path, body)
    assert hidden["sessions"] == []
    [hit] = shown["sessions"]
    assert hit["hit"]["where"] == "thought" and hit["hit"]["message_id"] == m2
    by_id = {m["id"]: m for m in read_hidden["messages"]}
    assert "reasoning" not in by_id[m2] and by_id[m2]["reasoning_hidden_chars"] == len("先回滚再查 quokka")
    assert {m["id"]: m for m in read_shown["messages"]}[m2]["reasoning"] == "先回滚再查 quokka"
    assert "先回滚再查" not in json.dumps(hidden, ensure_ascii=False) + json.dumps(read_hidden, ensure_ascii=False)


def test_bad_arguments_come_back_as_structured_errors(sdk, db):
    path, _ = db
    calls = [({"window": "wide"}, "bad_argument", "window"),
             ({"query": "回滚", "limt": 2}, "unknown_argument", "limt"),
             ({"session_id": "nope"}, "unknown_session", "session_id"),
             ({"query": "回滚", "after": "2024-13-45"}, "bad_argument", "after")]

    async def body(session):
        return [await session.call_tool("session_search", args) for args, *_ in calls]

    results, _ = converse(sdk, path, body)
    for (args, code, argument), result in zip(calls, results):
        assert result.is_error is True, args
        got = unpack(result)
        assert got["error"]["code"] == code and got["error"].get("argument") == argument, got
        assert got == local(path, args)


# ---- read-only, live, never in the way of writers -------------------------------------------


def test_sees_new_messages_and_never_blocks_writers(sdk, tmp_path):
    path = str(tmp_path / "live.db")
    _build(path)
    errors, written = [], []
    stop = threading.Event()

    def writer():
        # busy_timeout=0: a write that had to wait for the server would fail at once
        try:
            with Archive(path, busy_timeout=0) as ar:
                while not stop.is_set():
                    written.append(ar.add_message("w", "user", f"並行書き込み kiwi{len(written)}"))
        except Exception as exc:  # noqa: BLE001 -- reported by the assertion below
            errors.append(exc)

    async def body(session):
        before = unpack(await session.call_tool("session_search", {"query": "蜂鸟日志"}))
        with Archive(path, busy_timeout=0) as ar:
            new_id = ar.add_message("s3", "user", "蜂鸟日志在这里")
        after = unpack(await session.call_tool("session_search", {"query": "蜂鸟日志"}))
        thread = threading.Thread(target=writer)
        thread.start()
        try:
            during = [unpack(await session.call_tool("session_search", args))
                      for _ in range(10) for args in ({"query": "kiwi*"}, {}, {"session_id": "s1"})]
        finally:
            stop.set()
            thread.join()
        # Idle between calls, the server holds no read transaction: a checkpoint can take the whole WAL.
        with Archive(path, busy_timeout=0) as ar:
            busy, _, _ = ar.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return before, new_id, after, during, busy

    (before, new_id, after, during, busy), _ = converse(sdk, path, body)
    assert before["sessions"] == []
    assert [s["hit"]["message_id"] for s in after["sessions"]] == [new_id]
    assert errors == [] and len(written) > 0
    assert all("error" not in r for r in during)
    assert busy == 0


def test_opens_the_archive_read_only(sdk, tmp_path):
    # Made on a host without the extension, the cjk index is stale; a writer that has the
    # extension would bring it up to date at open.  The server must leave the file as it is.
    path = str(tmp_path / "stale.db")
    _build(path, extension=False)

    def snapshot():
        conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
        try:
            return (conn.execute("SELECT route, status, indexed_upto FROM index_state ORDER BY route").fetchall(),
                    conn.execute("SELECT count(*), max(id) FROM messages").fetchall(),
                    conn.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall())
        finally:
            conn.close()

    before = snapshot()
    assert ("cjk", "live") not in {r[:2] for r in before[0]}

    async def body(session):
        return unpack(await session.call_tool("session_search", {"query": "回滚"}))

    found, _ = converse(sdk, path, body)
    assert [s["session"]["session_id"] for s in found["sessions"]] == ["s1"]  # served by the other routes
    assert snapshot() == before


def test_a_request_the_sdk_cannot_read_is_answered_and_the_server_goes_on(sdk, db):
    # a lone surrogate escape (a JavaScript client's string cut inside an emoji), nesting past the
    # SDK's parser, a request of the wrong shape: the SDK dropped each unanswered, and the client
    # waited for ever
    path, _ = db
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}
    lines = [json.dumps(init), json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
             '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"session_search",'
             '"arguments":{"query":"\\ud83d"}}}',
             '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"session_search","arguments":{"roles":'
             + "[" * 400 + "]" * 400 + "}}}",
             '{"jsonrpc":"2.0","id":4,"method":7}',
             '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"session_search","arguments":{"roles":'
             + "[" * 5000 + "]" * 5000 + "}}}",  # past Python's parser too: the id is read off the top level
             '{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',  # an id no answer can carry: null
             '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"\\udc00"}}',
             "{not json", "",
             json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                         "params": {"name": "session_search", "arguments": {"query": "回滚"}}})]
    proc = subprocess.Popen([sys.executable, "-m", "cjk_tokenizer", "mcp", path], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": ROOT})
    timer = threading.Timer(CALL_TIMEOUT, proc.kill)  # an answer never sent fails the test, not hangs it
    timer.start()
    try:
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()  # and kept open: the server stops reading, and serving, at its end
        answers = [json.loads(proc.stdout.readline() or "null") for _ in range(8)]
    finally:
        timer.cancel()
        proc.stdin.close()
        proc.wait(timeout=CALL_TIMEOUT)
    by_id = {a.get("id"): a for a in answers if a}
    assert sorted(by_id, key=str) == sorted([1, 2, 3, 4, 5, 6, None], key=str), answers
    assert [a.get("id") for a in answers if a].count(None) == 2 and by_id[6]["error"]["code"] == -32600
    assert by_id[2]["error"]["code"] == -32602 and "surrogate" in by_id[2]["error"]["message"]
    assert by_id[3]["error"]["code"] == -32600 and "recursion" in by_id[3]["error"]["message"]
    assert by_id[4]["error"]["code"] == -32600
    assert sorted(a["error"]["code"] for a in answers if a and a.get("id") is None) == [-32700, -32602]
    assert all("\n" not in a["error"]["message"] for a in answers if "error" in a)
    found = by_id[5]["result"]["structuredContent"]
    assert [s["session"]["session_id"] for s in found["sessions"]] == ["s1"]  # and it went on serving


# ---- startup errors ---------------------------------------------------------------------------


def run_cli(args, prelude=""):
    code = f"{prelude}\nfrom cjk_tokenizer.cli import main\nraise SystemExit(main({args!r}))\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT})


HIDE_MCP = """
import sys
class _HideMcp:
    def find_spec(self, name, path=None, target=None):
        if name == "mcp" or name.startswith("mcp."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _HideMcp())
"""


def test_without_the_sdk_one_line_names_the_extra(db):
    proc = run_cli(["mcp", db[0]], prelude=HIDE_MCP)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert 'pip install "cjk-tokenizer[mcp]"' in proc.stderr
    # the rest of the package does not need it
    proc = run_cli(["search", db[0], "回滚", "--json"], prelude=HIDE_MCP)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["session_id"] == "s1"


def test_an_old_sdk_is_one_line_too(db, tmp_path):
    # mcp 1.x has the same module names but registers handlers with decorators
    for name, text in {"mcp/__init__.py": "", "mcp/types.py": "", "mcp/server/__init__.py": "",
                       "mcp/server/stdio.py": "def stdio_server(): pass\n",
                       "mcp/server/lowlevel.py": "class Server:\n    def __init__(self, name, version=None): pass\n"
                       }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    proc = run_cli(["mcp", db[0]], prelude=f"import sys; sys.path.insert(0, {str(tmp_path)!r})")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "older than 2.0" in proc.stderr, proc.stderr
    assert 'pip install "cjk-tokenizer[mcp]"' in proc.stderr


def test_bad_archive_is_one_line(sdk, tmp_path, capsys):
    from cjk_tokenizer.cli import main

    missing = str(tmp_path / "missing.db")
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    other = str(tmp_path / "other.db")
    conn = apsw.Connection(other)
    conn.execute("CREATE TABLE notes(x)")
    conn.close()
    for path, words in ((missing, "no such archive"), (str(empty), "not a cjk_tokenizer archive"),
                        (other, "not a cjk_tokenizer archive")):
        assert main(["mcp", path]) == 1
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and words in err and path in err, err
    assert not os.path.exists(missing) and empty.read_bytes() == b""


# ---- how users get and configure it ----------------------------------------------------------


def test_readme_client_entry_runs_this_command():
    from cjk_tokenizer import cli

    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    start = text.index('```json\n{\n  "mcpServers"') + len("```json\n")
    [entry] = json.loads(text[start:text.index("```", start)])["mcpServers"].values()
    assert entry["command"] == "cjk-tokenizer"
    args = cli.build_parser().parse_args(entry["args"])
    assert args.func is cli._cmd_mcp and args.db == entry["args"][1]


def test_sdk_is_an_extra_not_a_dependency():
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    assert project["scripts"]["cjk-tokenizer"] == "cjk_tokenizer.cli:main"
    assert not any(d.split(">")[0].split(";")[0].strip() == "mcp" for d in project["dependencies"])
    extras = project["optional-dependencies"]
    assert [d.split(">=")[0] for d in extras["mcp"]] == ["mcp"]
    assert any(d.startswith("mcp>=") for d in extras["test"])  # so CI runs the client tests


def test_the_server_opens_its_archive_read_only_with_the_memory_map_asked_for(db):
    from cjk_tokenizer.constants import MMAP_SIZE
    from cjk_tokenizer.mcp_server import open_archive

    path, _ = db
    for options, want in (({}, MMAP_SIZE), ({"mmap_size": 0}, 0), ({"mmap_size": 1 << 20}, 1 << 20)):
        with open_archive(path, **options) as ar:
            assert ar.readonly and ar.conn.execute("PRAGMA mmap_size").fetchone()[0] == want
