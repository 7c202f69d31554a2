"""The real agent process, spawned with command-line arguments, allowing every tool call it asks about.

``AgentProcess`` (see ``_reliability_support``) records the agent's notifications and answers; this
subclass also takes the agent's own requests: ``session/request_permission`` is answered ``allow_once``
by a task that runs for the life of the process, anything else with a method-not-found error.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.reliability._reliability_support import REPO, AgentProcess, params_of, update_of


@dataclass
class ToolAgent(AgentProcess):
    """An ``AgentProcess`` whose requests to the client are kept in ``requests`` (in arrival order)."""

    requests: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    _request_seen: anyio.Event = field(default_factory=anyio.Event)

    def _check_message(self, message: dict[str, Any]) -> None:
        super()._check_message(message)
        if isinstance(message.get("method"), str) and "id" in message:
            self.requests.append(message)
            self._request_seen.set()
            self._request_seen = anyio.Event()

    async def answer_requests(self) -> None:
        """Answer each request of the agent as it comes: permissions allowed once, the rest refused."""
        done = 0
        while True:
            seen = self._request_seen
            while done < len(self.requests):
                await self._answer(self.requests[done])
                done += 1
            await seen.wait()

    async def _answer(self, request: dict[str, Any]) -> None:
        if request["method"] == "session/request_permission":
            options: list[dict[str, Any]] = request["params"]["options"]
            allow = next(o["optionId"] for o in options if o.get("kind") == "allow_once")
            result = {"outcome": {"outcome": "selected", "optionId": allow}}
            await self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})
        else:
            error = {"code": -32601, "message": f"{request['method']} is not offered by this client"}
            await self.send({"jsonrpc": "2.0", "id": request["id"], "error": error})

    def updates(self, session_id: str, start: int = 0) -> list[dict[str, Any]]:
        """The ``update`` objects of ``session/update`` notifications for ``session_id`` from ``start``."""
        out: list[dict[str, Any]] = []
        for message in self.notifications[start:]:
            params = params_of(message)
            if message.get("method") == "session/update" and params.get("sessionId") == session_id:
                out.append(params["update"])
        return out


@asynccontextmanager
async def tool_agent(
    home: Path, env: Mapping[str, str], args: Sequence[str] = ()
) -> AsyncGenerator[ToolAgent]:
    """Spawn ``python -m acp_agent *args``; on exit close stdin, wait (bounded), kill if it lingers."""
    stderr_path = home.parent / f"{home.name}-stderr.txt"
    with stderr_path.open("ab") as stderr_file:
        process = await anyio.open_process(
            [sys.executable, "-m", "acp_agent", *args], env=dict(env), cwd=str(REPO), stderr=stderr_file
        )
    try:
        agent = ToolAgent(process, home, stderr_path)
        assert process.stdout is not None
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent._read_loop, BufferedByteReceiveStream(process.stdout))  # pyright: ignore[reportPrivateUsage]
            tg.start_soon(agent.answer_requests)
            try:
                yield agent
            finally:
                with anyio.CancelScope(shield=True):
                    await _shut_down(agent)
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
                await process.wait()
            with anyio.move_on_after(5):
                # wait() returns at the exit, before the pipes' end: close them here, not in the GC
                await process.aclose()


async def _shut_down(agent: ToolAgent) -> None:
    process = agent.process
    if process.returncode is None:
        try:
            assert process.stdin is not None
            await process.stdin.aclose()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        with anyio.move_on_after(10):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
    with anyio.move_on_after(5):
        await agent.exited.wait()


def is_update(session_id: str, check: Callable[[dict[str, Any]], bool]) -> Callable[[dict[str, Any]], bool]:
    """A predicate for ``AgentProcess.notification``: a ``session/update`` of ``session_id`` passing ``check``."""

    def match(message: dict[str, Any]) -> bool:
        return (
            message.get("method") == "session/update"
            and params_of(message).get("sessionId") == session_id
            and check(update_of(message))
        )

    return match
