"""``cjk-tokenizer mcp DB``: the archive's ``session_search`` tool over the Model Context Protocol (stdio).

The tool is the one agent_tool.py defines -- the same name, description and
input schema, run by the same handler, so an MCP client gets exactly what an
in-process agent gets, errors included.  On the wire a result is:

* ``content``: one text block holding the handler's JSON text, for clients
  that show text to the model;
* ``structuredContent``: the same result as a JSON object;
* ``isError``: true when the result is ``{"mode": ..., "error": {...}}`` (a
  bad argument, an unknown session, a locked database ...), so the client
  hands the model the error to correct, as the tool's description promises.

The server only reads.  It opens the archive read-only (SQLite refuses any
write through this connection), so it can never change the file, and every
call runs in autocommit: each statement reads the newest committed state and
no read transaction stays open between or across calls.  In WAL mode that
means messages other processes add while the server runs are found by the
next call, their writes never wait for the server, and their checkpoints are
never held back by it.

The SDK is the optional ``mcp`` extra (``pip install "cjk-tokenizer[mcp]"``);
it is imported only when the server starts, so the rest of the package never
needs it.
"""
from __future__ import annotations

import functools
import inspect
import io
import json
import re
import sys

from .agent_tool import TOOL_NAME, handle_session_search, tool_definitions
from .archive import Archive
from .constants import MMAP_SIZE
from .errors import CjkTokenizerError

__all__ = ["MISSING_SDK", "build_server", "open_archive", "serve", "unreadable_answer"]

MISSING_SDK = 'the MCP server needs the official MCP SDK (mcp 2.x, Python 3.10+): pip install "cjk-tokenizer[mcp]"'
SERVER_NAME = "cjk-tokenizer"


def open_archive(path, *, mmap_size: int = MMAP_SIZE) -> Archive:
    """Open the archive at ``path`` for the server: read-only, and it must already exist
    (``mmap_size``: Archive's)."""
    return Archive(path, readonly=True, mmap_size=mmap_size)


@functools.lru_cache(maxsize=1)  # asked for every line a client sends (unreadable_answer)
def _sdk():
    """The SDK's modules, or a CjkTokenizerError saying which extra to install."""
    try:
        import anyio
        import mcp.types as types
        from mcp.server.lowlevel import Server
        from mcp.server.stdio import stdio_server
    except ImportError:
        raise CjkTokenizerError(MISSING_SDK) from None
    if "on_call_tool" not in inspect.signature(Server).parameters:  # 1.x registers handlers by decorators
        raise CjkTokenizerError(f"{MISSING_SDK} (the installed mcp is older than 2.0)")
    return anyio, types, Server, stdio_server


def build_server(archive):
    """An ``mcp.server.lowlevel.Server`` serving ``session_search`` over ``archive``."""
    anyio, types, Server, _ = _sdk()
    from mcp.shared.exceptions import MCPError

    spec = tool_definitions()["anthropic"]  # name, description, input_schema: MCP's Tool fields
    tool = types.Tool(name=spec["name"], description=spec["description"], input_schema=spec["input_schema"],
                      annotations=types.ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                                        idempotent_hint=True, open_world_hint=False))

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=[tool])

    async def call_tool(ctx, params):
        if params.name != TOOL_NAME:  # a protocol error, as MCP specifies for an unknown tool
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown tool {params.name!r}; this server has "
                                                              f"{TOOL_NAME!r}")
        # SQLite work off the event loop, so pings and cancellations are still answered meanwhile.
        text = await anyio.to_thread.run_sync(handle_session_search, archive, params.arguments)
        result = json.loads(text)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                    structured_content=result, is_error="error" in result)

    from . import __version__

    return Server(SERVER_NAME, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)


def unreadable_answer(line: str):
    """For a line of the client's the SDK's transport cannot read, the JSON-RPC error that
    answers it; None for a line it reads (or a blank one), False for one to drop unanswered
    (a notification: nothing waits for it).

    The SDK passes over a line it cannot read without a word, and the client then waits for
    ever.  Python's JSON reads some of them: a lone surrogate escape (``"\\ud83d"``, which a
    JavaScript client writes for a string cut inside an emoji), nesting past the SDK's
    parser, a request of the wrong shape.  Such a request is answered with its id; a line
    that is not JSON at all with id null, as JSON-RPC says."""
    _, types, _, _ = _sdk()
    if not line.strip():
        return None
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except Exception as exc:  # the SDK's own parser refused it: say why, in one line
        said = [part.strip() for part in str(exc).splitlines()[1:3] if not part.strip().startswith("For further")]
        why = ": ".join(part.split(" [type=")[0] for part in said) or type(exc).__name__
    try:
        message = json.loads(line)
    except RecursionError:  # JSON, nested past Python's parser too: its id is read off the top level
        message = {"id": _top_level_id(line), "method": None}
    except ValueError:
        return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(
            code=types.PARSE_ERROR, message=f"not a JSON-RPC message the server can read: {why[:200]}"))
    ident = message.get("id") if isinstance(message, dict) else None
    if isinstance(message, dict) and "id" not in message and "method" in message:
        return False
    if isinstance(ident, bool) or not isinstance(ident, (int, str)) or not _writable(ident):
        ident = None  # an id the answer cannot carry (half a surrogate pair): JSON-RPC's null
    try:
        line.encode("utf-8")
        json.dumps(message, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        return types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(
            code=types.INVALID_PARAMS, message=f"the request holds {exc.object[exc.start]!r}, half of a "
                                               "UTF-16 surrogate pair, which is not text: send whole characters"))
    except (ValueError, RecursionError):
        pass
    return types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(
        code=types.INVALID_REQUEST, message=f"not a JSON-RPC message the server can read: {why[:200]}"))


def _writable(ident) -> bool:
    try:
        json.dumps(ident, ensure_ascii=False).encode("utf-8")
        return True
    except (UnicodeEncodeError, ValueError):
        return False


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_ID_VALUE = re.compile(r'\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def _top_level_id(line: str):
    """The ``id`` member of the JSON object ``line`` (an int or a str), read at its top level
    without parsing what is nested, or None."""
    depth = 0
    for token in _TOKENS.finditer(line):  # strings whole, and brackets
        t = token.group()
        if t[0] != '"':
            depth += 1 if t in "[{" else -1
            continue
        value = _ID_VALUE.match(line, token.end()) if depth == 1 and t == '"id"' else None
        if value is not None:  # the key "id" (not a value "id": no colon follows that)
            try:
                return json.loads(value.group(1))
            except ValueError:
                return None
    return None


def serve(path, *, mmap_size: int = MMAP_SIZE) -> int:
    """Serve the archive at ``path`` on stdin/stdout until the client closes the connection."""
    anyio, _, _, stdio_server = _sdk()  # before opening anything: a missing SDK is the first thing to say
    from mcp.shared.message import SessionMessage

    archive = open_archive(path, mmap_size=mmap_size)
    try:
        server = build_server(archive)

        async def run():
            answers = {}
            up = anyio.Event()
            stdin = anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))

            async def lines():  # the client's lines as the transport reads them, less those answered here
                async for line in stdin:
                    answer = unreadable_answer(line)
                    if answer is None:
                        yield line
                    elif answer is not False:
                        await up.wait()
                        await answers["stream"].send(SessionMessage(answer))

            async with stdio_server(stdin=lines()) as (read_stream, write_stream):
                answers["stream"] = write_stream
                up.set()
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(run)
    finally:
        archive.close()
    return 0
