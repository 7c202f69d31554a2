"""Every session close the agent starts finishes, shutdown or not: a session replaced by a second load is
closed in the background, and the end of input neither forgets that close nor cuts it off before its
last writes and its resources (the sandbox folder) are seen to."""

from __future__ import annotations

import shutil
import tempfile
from functools import partial
from pathlib import Path
from typing import cast

import anyio
import anyio.to_thread
import pytest
from anyio.lowlevel import checkpoint

from acp_agent.protocol.jsonvalue import as_object
from acp_agent.session import AcpAgent
from acp_agent.session._closes import Closes
from acp_agent.session._session import Session
from acp_agent.session._setup import SessionEnvironment, SessionSetup
from tests.acp.session._support import running_agent
from tests.acp_client import AcpClient

pytestmark = pytest.mark.anyio

LIMIT_S = 20


class _Folders:
    """A factory that gives each session a private folder (as the coding factory's sandbox does) and
    removes it in its ``aclose``, in a worker thread; once ``together`` is set, that many opens wait for
    each other."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.made: list[Path] = []
        self.removed: list[Path] = []
        self.together = 0
        self._all_in = anyio.Event()
        self._changed = anyio.Event()

    async def __call__(self, env: SessionEnvironment) -> SessionSetup:
        folder = Path(await anyio.to_thread.run_sync(lambda: tempfile.mkdtemp(dir=self.root)))
        self.made.append(folder)
        if self.together:
            self.together -= 1
            if not self.together:
                self._all_in.set()
            await self._all_in.wait()  # both loads looked for a live session before either registers

        async def aclose() -> None:
            await anyio.to_thread.run_sync(partial(shutil.rmtree, folder, ignore_errors=True))  # (idempotent)
            self.removed.append(folder)
            self._changed.set()
            self._changed = anyio.Event()

        return SessionSetup(system="test", aclose=aclose)

    def left(self) -> list[Path]:
        return [f for f in self.made if f.exists()]

    async def removed_at_least(self, count: int) -> None:
        while len(self.removed) < count:
            await self._changed.wait()


async def _a_replaced_session(client: AcpClient, factory: _Folders, path: Path) -> str:
    """A session two resumes opened at once: the newer is live, the older's close runs in the background."""
    sid = await client.new_session(str(path))
    await client.call("session/close", {"sessionId": sid})
    factory.together = 2
    params: dict[str, object] = {"sessionId": sid, "cwd": str(path), "mcpServers": []}
    first = await client.send_request("session/resume", params)
    second = await client.send_request("session/resume", params)
    assert "result" in await client.response(first)
    assert "result" in await client.response(second)
    return sid


async def test_a_replaced_sessions_close_held_when_shutdown_begins_still_removes_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replaced session's close waits for a turn that does not end (a checkpoint held) when the input
    ends: shutdown waits for it (bounded by the grace), and when it is then cancelled its final part (the
    last writes, the set-up's ``aclose``) still runs."""
    (tmp_path / "folders").mkdir()
    factory = _Folders(tmp_path / "folders")
    agents: list[AcpAgent] = []
    held = anyio.Event()
    idle = Session.wait_idle

    async def wait_idle(self: Session) -> None:
        live = agents[0].sessions.get(self.id)
        if live is not None and live is not self:  # the replaced one, while its replacement is live
            held.set()
            await anyio.sleep_forever()
        await idle(self)

    monkeypatch.setattr(Session, "wait_idle", wait_idle)
    with anyio.fail_after(LIMIT_S):
        async with running_agent(tmp_path, factory=factory, shutdown_grace=0.3) as (client, agent, _tg):
            agents.append(agent)
            await client.initialize()
            await _a_replaced_session(client, factory, tmp_path)
            await held.wait()
            assert len(factory.left()) == 2  # both loads' (the replaced one's close is held)
    assert factory.left() == []


async def test_a_load_whose_close_of_the_live_session_ends_last_never_orphans_the_newer_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two loads of a live session at once both close it; the one whose close ends last must not take the
    other's newly opened session out of the table (it would never be closed, its folder left behind)."""
    (tmp_path / "folders").mkdir()
    factory = _Folders(tmp_path / "folders")
    release, held = anyio.Event(), anyio.Event()
    idle = Session.wait_idle

    async def wait_idle(self: Session) -> None:
        if not held.is_set():  # the first close of the live session ends last
            held.set()
            await release.wait()
        await idle(self)

    monkeypatch.setattr(Session, "wait_idle", wait_idle)
    with anyio.fail_after(LIMIT_S):
        async with running_agent(tmp_path, factory=factory) as (client, agent, _tg):
            await client.initialize()
            sid = await client.new_session(str(tmp_path))
            params: dict[str, object] = {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
            ids = [await client.send_request("session/load", params) for _ in range(2)]
            await held.wait()
            first = await client.wait_for(lambda m: as_object(m).get("id") in ids)  # the other load's
            assert "result" in first
            release.set()
            for i in ids:
                assert "result" in await client.response(i)
            assert len(factory.left()) >= 1  # the live one's (and one being closed, maybe)
        assert sid not in agent.sessions
    assert factory.left() == []


async def test_shutdown_waits_for_the_close_of_a_session_a_second_load_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The replaced session's close (begun in the background before the input ended) is one shutdown
    owns: the agent's ``aclose`` returns only once it has finished, not merely once the live sessions
    have closed."""
    (tmp_path / "folders").mkdir()
    factory = _Folders(tmp_path / "folders")
    agents: list[AcpAgent] = []
    held, release = anyio.Event(), anyio.Event()
    idle = Session.wait_idle

    async def wait_idle(self: Session) -> None:
        live = agents[0].sessions.get(self.id)
        if live is not None and live is not self:
            held.set()
            await release.wait()
        await idle(self)

    monkeypatch.setattr(Session, "wait_idle", wait_idle)
    returned: list[bool] = []
    with anyio.fail_after(LIMIT_S):
        async with running_agent(tmp_path, factory=factory, shutdown_grace=LIMIT_S) as (client, agent, _tg):
            agents.append(agent)
            aclose = agent.aclose

            async def recorded() -> None:
                await aclose()
                returned.append(True)

            monkeypatch.setattr(agent, "aclose", recorded)
            await client.initialize()
            await _a_replaced_session(client, factory, tmp_path)
            await held.wait()
            # (Its index's close is a thread hop that would blur when aclose returns: nothing to close.)
            agent._store = None  # pyright: ignore[reportPrivateUsage]
            await client.close_output()
            await factory.removed_at_least(2)  # session/new's (closed), then the live one's at shutdown
            await anyio.wait_all_tasks_blocked()
            assert returned == []  # still waiting for the replaced session's close
            release.set()
    assert returned == [True]
    assert factory.left() == []


class _Closing:
    def __init__(self, session_id: str) -> None:
        self.id = session_id
        self.release = anyio.Event()
        self.closed = False

    async def close(self) -> None:
        await self.release.wait()
        self.closed = True


async def test_waiting_for_the_closes_waits_for_one_begun_before_its_task_has_started() -> None:
    closes = Closes()
    session = _Closing("a")
    run = closes.begin(cast(Session, session))  # (a background task that has not run yet)
    waited: list[bool] = []

    async def wait_all() -> None:
        await closes.wait()
        waited.append(session.closed)

    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait_all)
            await anyio.wait_all_tasks_blocked()
            assert waited == []
            tg.start_soon(run)
            await anyio.wait_all_tasks_blocked()
            assert waited == []
            session.release.set()
    assert waited == [True]


async def test_waiting_for_one_sessions_closes_waits_for_each_of_them_and_no_other() -> None:
    closes = Closes()
    older, newer, other = _Closing("a"), _Closing("a"), _Closing("b")
    waited: list[str] = []

    async def wait_for(session_id: str) -> None:
        await closes.wait(session_id)
        waited.append(session_id)

    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as tg:
            for s in (older, newer, other):
                tg.start_soon(closes.close, cast(Session, s))
            await checkpoint()
            tg.start_soon(wait_for, "a")
            tg.start_soon(wait_for, "b")
            other.release.set()
            await anyio.wait_all_tasks_blocked()
            assert waited == ["b"]
            older.release.set()
            await anyio.wait_all_tasks_blocked()
            assert waited == ["b"]
            newer.release.set()
    assert waited == ["b", "a"]
