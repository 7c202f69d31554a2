"""An MCP server for the fault tests, on the mcp SDK's ``MCPServer``; behaviour chosen by env vars.

FAULT_FAIL_START=1       exit 3 at once, after a line on stderr
FAULT_GATE=<path>        do not serve until <path> exists (a slow start the test controls)
FAULT_GARBAGE_START=1    write a non-JSON line on stdout before serving
FAULT_MARKS=<dir>        where tools leave marks (e.g. "cancelled") for the test to see
argv[1] == "http" <port> serve Streamable HTTP on 127.0.0.1:<port> instead of stdio
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    ToolAnnotations,
)
from pydantic import BaseModel

if os.environ.get("FAULT_FAIL_START"):
    print("fault server: cannot start, the config is missing", file=sys.stderr, flush=True)
    sys.exit(3)
if os.environ.get("FAULT_GARBAGE_START"):
    os.write(1, b"hello, I am not JSON-RPC\n")
gate = os.environ.get("FAULT_GATE")
if gate:
    while not Path(gate).exists():  # the fake server polls; the test waits on our readiness, not on time
        time.sleep(0.02)
marks = Path(os.environ.get("FAULT_MARKS", "."))
print("fault server: serving", file=sys.stderr, flush=True)

mcp = MCPServer("fault")


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text


@mcp.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
def peek() -> str:
    """A read-only tool."""
    return "peeked"


@mcp.tool()
def crash() -> str:
    """Die mid-call."""
    print("fault server: crashing now", file=sys.stderr, flush=True)
    os._exit(7)


@mcp.tool()
async def hang(ctx: Context) -> str:
    """Report that it started, then never answer; leave a mark when cancelled."""
    await ctx.report_progress(0, None, "started")
    try:
        await anyio.sleep_forever()
    finally:
        (marks / "cancelled").write_text("yes")
    return "unreachable"


@mcp.tool()
async def garbage_then_hang() -> str:
    """Write garbage on stdout, then never answer."""
    os.write(1, b"this is garbage, not JSON-RPC\n")
    await anyio.sleep_forever()
    return "unreachable"


@mcp.tool()
async def slow(steps: int, ctx: Context) -> str:
    """Report progress ``steps`` times."""
    for i in range(steps):
        await ctx.report_progress(i + 1, steps, f"step {i + 1}")
    return f"done after {steps} steps"


@mcp.tool()
def huge(n: int) -> str:
    """A result of ``n`` characters."""
    return "x" * n


@mcp.tool()
def fail() -> str:
    """Raise: an isError result."""
    raise ValueError("the tool broke on purpose")


class Name(BaseModel):
    name: str
    age: int = 30


@mcp.tool()
async def ask(ctx: Context) -> str:
    """Elicit a name from the user."""
    r = await ctx.elicit("What is your name?", Name)
    if r.action == "accept":
        return f"accept:{r.data.name}:{r.data.age}"
    return r.action


@mcp.tool()
async def add_tool(ctx: Context) -> str:
    """Register a new tool ``added`` and tell the client the list changed."""

    def added() -> str:
        return "I was added"

    mcp.add_tool(added, name="added")
    await ctx.session.send_tool_list_changed()
    return "ok"


@mcp.tool()
def spawn_grandchild() -> str:
    """Start a long-lived child process; return its pid."""
    p = subprocess.Popen(["sleep", "600"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    return str(p.pid)


@mcp.tool()
def pid() -> str:
    return str(os.getpid())


@mcp.tool()
def env(name: str) -> str:
    """An environment variable of the server, or <unset>."""
    return os.environ.get(name, "<unset>")


@mcp.tool()
async def roots(ctx: Context) -> str:
    """The client's roots, one URI a line."""
    # Deprecated by the MCP SDK (SEP-2577), but clients still answer roots/list and the harness serves it.
    r = await ctx.session.list_roots()  # pyright: ignore[reportDeprecated]
    return "\n".join(str(x.uri) for x in r.roots)


@mcp.tool()
def media() -> CallToolResult:
    """One block of every content kind, and structured content."""
    png = base64.b64encode(b"\x89PNG fake").decode()
    return CallToolResult(
        content=[
            TextContent(text="hello"),
            ImageContent(data=png, mime_type="image/png"),
            AudioContent(data=base64.b64encode(b"RIFFxxxx").decode(), mime_type="audio/wav"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///tmp/a.txt", text="file text")),
            ResourceLink(uri="file:///tmp/b.bin", name="b.bin", mime_type="application/octet-stream"),
        ],
        structured_content={"answer": 42},
    )


@mcp.tool(name="weird.name/with spaces")
def weird() -> str:
    return "weird ok"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        mcp.run("stdio")
