"""An ``AcpAgent`` served over memory pipes to the shared ``AcpClient``."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import TaskGroup

from acp_agent._early import EarlyOpened
from acp_agent.model_setup import ModelSettings
from acp_agent.session import AcpAgent, SessionFactory, default_factory, serve
from acp_agent.session._turn_writes import TurnWrites
from harness import Model, Run
from tests.acp_client import AcpClient, memory_pipe


@asynccontextmanager
async def running_agent(
    home: Path,
    model: Model | None = None,
    *,
    factory: SessionFactory = default_factory,
    settings: ModelSettings | None = None,
    early: EarlyOpened | None = None,
    shutdown_grace: float = 5,
) -> AsyncGenerator[tuple[AcpClient, AcpAgent, TaskGroup]]:
    """An agent served over memory pipes, and a client reading its output. ``early``: a ``session/new``
    answered before the agent started (as ``acp_agent._early`` answers one)."""
    to_agent, from_agent = memory_pipe(1000), memory_pipe(1000)
    agent = AcpAgent(home=home, settings=settings or ModelSettings(None), factory=factory, model=model)
    agent.early.opened = early
    client = AcpClient(to_agent.send, from_agent.receive)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.read_loop)

            async def run_agent() -> None:
                async with from_agent.send:
                    await serve(to_agent.receive, from_agent.send, agent, shutdown_grace=shutdown_grace)

            tg.start_soon(run_agent)
            try:
                yield client, agent, tg
            finally:
                await client.close_output()
    finally:
        to_agent.close()
        from_agent.close()


def transcript_lines(home: Path, session_id: str) -> list[dict[str, Any]]:
    path = home / "sessions" / session_id / "messages.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def kinds(updates: Sequence[dict[str, Any]]) -> list[str]:
    return [u["sessionUpdate"] for u in updates]


class HeldEnd:
    """Holds the first turn at its end: its run's turn is over (``TurnEnded`` seen) and the session is
    writing its last step, still busy: the window a steering message used to be lost in (a steering message
    then is one the turn ends without reading, the session's next turn)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reached, self.release = anyio.Event(), anyio.Event()
        persist = TurnWrites.persist

        async def held(writes: TurnWrites, run: Run, *, final: bool, behind: bool = False) -> None:
            if final and not self.reached.is_set():
                assert not run.is_running()
                self.reached.set()
                await self.release.wait()
            await persist(writes, run, final=final, behind=behind)

        monkeypatch.setattr(TurnWrites, "persist", held)
