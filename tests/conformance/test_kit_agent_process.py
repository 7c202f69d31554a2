"""The kit's agent process leaves nothing for the garbage collector: every process it started (stopped at the
end of a scenario, or killed and started again by a ``kill``/``start`` pair) has its pipes closed by the time
its event loop ends, even when a daemon the agent started still holds their other ends. A process whose
stdout and stderr transports are left open is finalised by the garbage collector as an unclosed transport
(ResourceWarning), in whatever later test happens to collect it: once a CI run in seven, in
``test_kit_scenario[3i02_other_versions]``."""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import warnings
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_conformance.agent import AgentProcess
from acp_conformance.validate import MessageValidator

pytestmark = pytest.mark.process

# An agent that starts a daemon (its own session, so the kit's kill of the agent's group misses it) holding
# the agent's stdout and stderr, says the daemon's pid, and exits 0 at the end of its input.
_AGENT_WITH_DAEMON = """
import json, subprocess, sys
daemon = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(60)"], stdin=subprocess.DEVNULL, start_new_session=True
)
print(json.dumps({"jsonrpc": "2.0", "method": "_daemon", "params": {"pid": daemon.pid}}), flush=True)
sys.stdin.read()
"""


@contextmanager
def _unraisables() -> Generator[list[str]]:
    """What was finalised unclosed (a ResourceWarning raised in a finaliser) inside the block, and by a full
    garbage collection at its end."""
    seen: list[str] = []
    before = sys.unraisablehook
    sys.unraisablehook = lambda u: seen.append(f"{u.exc_value!r} (in {u.object!r})")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ResourceWarning)
            yield seen
            gc.collect()
    finally:
        sys.unraisablehook = before


async def _started(agent: AgentProcess, tg: Any, daemons: list[int]) -> None:
    await agent.start(tg)
    assert agent.lines is not None
    line = await agent.lines.receive()
    assert line is not None and line.parsed, line
    daemons.append(int(json.loads(line.raw)["params"]["pid"]))


def _play(tmp_path: Path, *, restart: bool) -> list[int]:
    daemons: list[int] = []

    async def main() -> None:
        command = [sys.executable, "-c", _AGENT_WITH_DAEMON]
        agent = AgentProcess(command, dict(os.environ), str(tmp_path), MessageValidator(), {})
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                try:
                    await _started(agent, tg, daemons)
                    if restart:  # the ``kill`` and ``start`` steps of a scenario
                        await agent.kill()
                        await _started(agent, tg, daemons)
                finally:
                    with anyio.CancelScope(shield=True):
                        await agent.stop()
                    tg.cancel_scope.cancel()

    try:
        anyio.run(main)  # its own event loop, closed before the garbage is collected (as a test's is)
    finally:
        for pid in daemons:
            os.kill(pid, signal.SIGKILL)
    return daemons


def test_a_stopped_agent_leaves_no_pipe_open_even_while_a_daemon_it_started_holds_them(
    tmp_path: Path,
) -> None:
    with _unraisables() as leaked:
        assert len(_play(tmp_path, restart=False)) == 1
    assert not leaked, "\n".join(leaked)


def test_an_agent_killed_and_started_again_leaves_the_first_process_closed(tmp_path: Path) -> None:
    with _unraisables() as leaked:
        assert len(_play(tmp_path, restart=True)) == 2
    assert not leaked, "\n".join(leaked)
