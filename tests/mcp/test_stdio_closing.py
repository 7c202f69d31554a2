"""The stdio transport closes its server's process whole, pipes included, even when a daemon the server started
(in a session of its own, out of reach of the group kill) still holds the server's stdout and stderr: on
asyncio a process left with open pipe transports is finalised by the garbage collector as an unclosed
transport (a ResourceWarning), in whatever later test happens to collect it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from harness.mcp import StdioConfig
from harness.mcp._stdio import StdioProcess, stdio_transport
from tests._leaks import daemon_holding_pipes, kill_all, unraisables

pytestmark = pytest.mark.process

# Not an MCP server: the transport only moves lines.
_SERVER_WITH_DAEMON = daemon_holding_pipes("daemon")


def test_a_closed_server_leaves_no_pipe_open_even_while_a_daemon_it_started_holds_them(
    tmp_path: Path,
) -> None:
    daemons: list[int] = []

    async def main() -> None:
        config = StdioConfig("daemonic", sys.executable, ("-c", _SERVER_WITH_DAEMON), cwd=str(tmp_path))
        with anyio.fail_after(30):
            async with stdio_transport(config, StdioProcess("daemonic"), lambda: None) as (read, _write):
                said = await read.receive()
                daemons.append(int(json.loads(said.message.model_dump_json())["params"]["pid"]))

    try:
        with unraisables() as leaked:
            anyio.run(main)  # its own event loop, closed before the garbage is collected (as a test's is)
    finally:
        kill_all(daemons)
    assert len(daemons) == 1
    assert not leaked, "\n".join(leaked)
