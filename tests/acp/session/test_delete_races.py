"""A ``session/delete`` racing a request that uses the same session (``session/load``, ``resume``, ``fork``,
``set_title``, ``archive``): whichever order they run in, the session is gone afterwards (no folder, no
live session, not listed), and one that comes while the delete runs answers "not found"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.protocol.jsonvalue import as_object
from acp_agent.session import AcpAgent, SessionEnvironment, SessionSetup, default_factory
from acp_agent.session._deletes import Deletes
from harness.testing import FakeModel
from tests.acp.session._support import running_agent
from tests.acp_client import AcpClient

pytestmark = pytest.mark.anyio


class _HeldSetUp:
    """A session factory whose ``held``-th set-up waits until ``release`` (a reopen's set-up is slow: MCP
    servers start, a long history is read)."""

    def __init__(self, held: int) -> None:
        self._held = held
        self._made = 0
        self.entered = anyio.Event()
        self.release = anyio.Event()

    async def __call__(self, env: SessionEnvironment) -> SessionSetup:
        self._made += 1
        if self._made == self._held:
            self.entered.set()
            await self.release.wait()
        return await default_factory(env)


async def _closed_session(client: AcpClient, cwd: Path) -> str:
    await client.initialize()
    session_id = await client.new_session(str(cwd))
    assert await client.call("session/close", {"sessionId": session_id}) == {}
    return session_id


async def _listed(client: AcpClient) -> set[str]:
    return {s["sessionId"] for s in (await client.call("session/list", {}))["sessions"]}


def _reopen(method: str, session_id: str, cwd: Path) -> tuple[str, dict[str, Any]]:
    """``method``'s request for ``session_id`` (a load, resume or fork; a title or archive change)."""
    if method == "session/set_title":
        return method, {"sessionId": session_id, "title": "renamed"}
    if method == "session/archive":
        return method, {"sessionId": session_id}
    return method, {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}


@pytest.mark.parametrize("method", ["session/resume", "session/load"])
async def test_a_delete_sent_while_a_reopen_sets_the_session_up_leaves_nothing_behind(
    tmp_path: Path, method: str
) -> None:
    factory = _HeldSetUp(held=2)  # the first set-up is the session/new's
    async with running_agent(tmp_path, FakeModel([]), factory=factory) as (client, agent, _tg):
        session_id = await _closed_session(client, tmp_path)
        reopen = await client.send_request(*_reopen(method, session_id, tmp_path))
        with anyio.fail_after(5):
            await factory.entered.wait()
        delete = await client.send_request("session/delete", {"sessionId": session_id})
        with anyio.fail_after(5):  # the delete waits for the reopen under way (or, unguarded, is done)
            while not _delete_waits(agent, session_id) and not _answered(client, delete):
                await anyio.wait_all_tasks_blocked()
        factory.release.set()
        answered = await client.response(reopen)
        assert "result" in answered, answered  # it came first: it opened the session the delete then removed
        assert (await client.response(delete))["result"] == {}
        assert not (tmp_path / "sessions" / session_id).exists()
        assert session_id not in agent.sessions
        assert session_id not in await _listed(client)
        prompt = await client.send_request("session/prompt", client.prompt_params(session_id, "still there?"))
        assert (await client.response(prompt))["error"]["code"] == -32002  # resource not found
        assert not (tmp_path / "sessions" / session_id).exists()


@pytest.mark.parametrize(
    "method", ["session/resume", "session/load", "session/fork", "session/set_title", "session/archive"]
)
async def test_a_request_using_the_session_sent_while_a_delete_runs_answers_not_found(
    tmp_path: Path, method: str
) -> None:
    async with running_agent(tmp_path, FakeModel([])) as (client, agent, _tg):
        session_id = await _closed_session(client, tmp_path)
        removing, release = anyio.Event(), anyio.Event()
        store_delete = agent.store.delete

        async def held_delete(deleted: str) -> bool:
            removing.set()
            await release.wait()
            return await store_delete(deleted)

        agent.store.delete = held_delete  # type: ignore[method-assign]
        delete = await client.send_request("session/delete", {"sessionId": session_id})
        with anyio.fail_after(5):
            await removing.wait()
        reopen = await client.send_request(*_reopen(method, session_id, tmp_path))
        with anyio.fail_after(5):  # the reopen waits for the delete (or, unguarded, is answered)
            while not _reopen_waits(agent, session_id) and not _answered(client, reopen):
                await anyio.wait_all_tasks_blocked()
        release.set()
        assert (await client.response(delete))["result"] == {}
        answered = await client.response(reopen)
        assert answered.get("error", {}).get("code") == -32002, answered
        assert not (tmp_path / "sessions" / session_id).exists()
        assert session_id not in agent.sessions
        assert [p.name for p in (tmp_path / "sessions").iterdir() if p.is_dir()] == []  # no fork either


def _answered(client: AcpClient, request_id: Any) -> bool:
    objects = [as_object(message) for message in client.messages]
    return any("method" not in m and m.get("id") == request_id for m in objects if m)


def _delete_waits(agent: AcpAgent, session_id: str) -> bool:
    deletes = getattr(agent, "deletes", None)
    return deletes is not None and deletes.delete_waits(session_id)


def _reopen_waits(agent: AcpAgent, session_id: str) -> bool:
    deletes = getattr(agent, "deletes", None)
    return deletes is not None and deletes.use_waits(session_id)


async def test_the_bookkeeping_of_uses_and_deletes_ends_empty_whatever_is_cancelled() -> None:
    deletes = Deletes()
    order: list[str] = []
    held = anyio.Event()

    async def use(name: str, hold: bool = False) -> None:
        async with deletes.using("s"):
            order.append(name)
            if hold:
                await held.wait()

    async def delete() -> None:
        async with deletes.deleting("s"):
            order.append("delete")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(use, "first", True)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(delete)
            await anyio.wait_all_tasks_blocked()
            assert deletes.delete_waits("s")
            tg.start_soon(use, "second")  # waits for the delete, which waits for the first
            await anyio.wait_all_tasks_blocked()
            assert deletes.use_waits("s")
            async with anyio.create_task_group() as waiting:  # a use that stops waiting for the delete
                waiting.start_soon(use, "cancelled")
                await anyio.wait_all_tasks_blocked()
                waiting.cancel_scope.cancel()
            held.set()
    assert order == ["first", "delete", "second"]
    assert deletes.tracked() == 0
