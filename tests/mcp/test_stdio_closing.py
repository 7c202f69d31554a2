"""The stdio transport closes its server's process whole, pipes included, even when a daemon the server started
(in a session of its own, out of reach of the group kill) still holds the server's stdout and stderr: on
asyncio a process left with open pipe transports is finalised by the garbage collector as an unclosed
transport (a ResourceWarning), in whatever later test happens to collect it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from harness.mcp import StdioConfig
from harness.mcp._stdio import StdioProcess, pidfd_of, stdio_transport, until_exited
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


@pytest.mark.anyio
async def test_a_servers_end_is_awaited_as_an_event_without_polling_while_it_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An idle server costs the agent no wake-ups (three polled ones kept an idle agent at 0.9 % of a CPU):
    where the system has pidfds, the end of the process is an event; it is still seen at once."""
    probe = pidfd_of(os.getpid())
    if probe is None:
        pytest.skip("no pidfd on this system: a server's end is polled there")
    os.close(probe)
    sleeps: list[float] = []
    real_sleep = anyio.sleep

    async def counting(delay: float) -> None:
        sleeps.append(delay)
        await real_sleep(delay)

    process = await anyio.open_process([sys.executable, "-c", "import sys; sys.stdin.read()"])
    async with process:
        monkeypatch.setattr(anyio, "sleep", counting)
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(until_exited, process)
                await anyio.wait_all_tasks_blocked()
                assert sleeps == []  # waiting on the running process, not polling it
                assert process.stdin is not None
                await process.stdin.aclose()  # it reads EOF and ends
        assert process.returncode == 0
        assert all(s < 0.05 for s in sleeps)  # at most the moments until the child watcher recorded it
