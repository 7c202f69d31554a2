"""The kit's agent process leaves nothing for the garbage collector: every process it started (stopped at the
end of a scenario, or killed and started again by a ``kill``/``start`` pair) has its pipes closed by the time
its event loop ends, even when a daemon the agent started still holds their other ends. A process whose
stdout and stderr transports are left open is finalised by the garbage collector as an unclosed transport
(ResourceWarning), in whatever later test happens to collect it: once a CI run in seven, in
``test_kit_scenario[3i02_other_versions]``."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_conformance.agent import AgentProcess
from acp_conformance.validate import MessageValidator
from tests._leaks import daemon_holding_pipes, kill_all, unraisables

pytestmark = pytest.mark.process

_AGENT_WITH_DAEMON = daemon_holding_pipes("_daemon")


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
        kill_all(daemons)
    return daemons


def test_a_stopped_agent_leaves_no_pipe_open_even_while_a_daemon_it_started_holds_them(
    tmp_path: Path,
) -> None:
    with unraisables() as leaked:
        assert len(_play(tmp_path, restart=False)) == 1
    assert not leaked, "\n".join(leaked)


def test_an_agent_killed_and_started_again_leaves_the_first_process_closed(tmp_path: Path) -> None:
    with unraisables() as leaked:
        assert len(_play(tmp_path, restart=True)) == 2
    assert not leaked, "\n".join(leaked)
