"""The stdio transport closes its server's process whole, pipes included, even when a daemon the server started
(in a session of its own, out of reach of the group kill) still holds the server's stdout and stderr: on
asyncio a process left with open pipe transports is finalised by the garbage collector as an unclosed
transport (a ResourceWarning), in whatever later test happens to collect it."""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import warnings
from pathlib import Path

import anyio
import pytest

from harness.mcp import StdioConfig
from harness.mcp._stdio import StdioProcess, stdio_transport

pytestmark = pytest.mark.process

# Not an MCP server: the transport only moves lines. It starts the daemon, says its pid, and exits 0 at the
# end of its input, as a server does when its client closes stdin.
_SERVER_WITH_DAEMON = """
import json, subprocess, sys
daemon = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(60)"], stdin=subprocess.DEVNULL, start_new_session=True
)
print(json.dumps({"jsonrpc": "2.0", "method": "daemon", "params": {"pid": daemon.pid}}), flush=True)
sys.stdin.read()
"""


def test_a_closed_server_leaves_no_pipe_open_even_while_a_daemon_it_started_holds_them(
    tmp_path: Path,
) -> None:
    daemons: list[int] = []
    leaked: list[str] = []

    async def main() -> None:
        config = StdioConfig("daemonic", sys.executable, ("-c", _SERVER_WITH_DAEMON), cwd=str(tmp_path))
        with anyio.fail_after(30):
            async with stdio_transport(config, StdioProcess("daemonic"), lambda: None) as (read, _write):
                said = await read.receive()
                daemons.append(int(json.loads(said.message.model_dump_json())["params"]["pid"]))

    before = sys.unraisablehook
    sys.unraisablehook = lambda u: leaked.append(f"{u.exc_value!r} (in {u.object!r})")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ResourceWarning)
            anyio.run(main)  # its own event loop, closed before the garbage is collected (as a test's is)
            gc.collect()
    finally:
        sys.unraisablehook = before
        for pid in daemons:
            os.kill(pid, signal.SIGKILL)
    assert len(daemons) == 1
    assert not leaked, "\n".join(leaked)
