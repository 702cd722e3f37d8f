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

import inspect
import json

from .agent_tool import TOOL_NAME, handle_session_search, tool_definitions
from .archive import Archive
from .constants import MMAP_SIZE
from .errors import CjkTokenizerError

__all__ = ["MISSING_SDK", "build_server", "open_archive", "serve"]

MISSING_SDK = 'the MCP server needs the official MCP SDK (mcp 2.x, Python 3.10+): pip install "cjk-tokenizer[mcp]"'
SERVER_NAME = "cjk-tokenizer"


def open_archive(path, *, mmap_size: int = MMAP_SIZE) -> Archive:
    """Open the archive at ``path`` for the server: read-only, and it must already exist
    (``mmap_size``: Archive's)."""
    return Archive(path, readonly=True, mmap_size=mmap_size)


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


def serve(path, *, mmap_size: int = MMAP_SIZE) -> int:
    """Serve the archive at ``path`` on stdin/stdout until the client closes the connection."""
    anyio, _, _, stdio_server = _sdk()  # before opening anything: a missing SDK is the first thing to say
    archive = open_archive(path, mmap_size=mmap_size)
    try:
        server = build_server(archive)

        async def run():
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(run)
    finally:
        archive.close()
    return 0
