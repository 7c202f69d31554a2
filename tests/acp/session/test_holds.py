"""An open session is held against other processes: their loads and deletes (``_holds``). Two stores on one home stand
for two agent processes here: a ``flock`` taken through one descriptor conflicts with one taken through
another, in one process as in two."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.session import SessionInUse, SessionMeta, SessionStore, exclusively
from harness.testing import FakeModel, Reply
from tests.acp.session._support import running_agent

pytestmark = pytest.mark.anyio


def _store_with(home: Path, session_id: str = "sess_a") -> SessionStore:
    store = SessionStore(home / "sessions")
    store.create_sync(SessionMeta(session_id, str(home), "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"))
    return store


async def test_a_session_held_in_one_process_is_not_deleted_by_another_until_it_is_let_go(
    tmp_path: Path,
) -> None:
    here = _store_with(tmp_path)
    other = SessionStore(tmp_path / "sessions")
    assert here.hold_sync("sess_a")
    with anyio.fail_after(10), pytest.raises(SessionInUse, match="open in another agent process"):
        await other.delete("sess_a")
    assert (here.directory("sess_a") / "meta.json").is_file()
    here.release("sess_a")
    assert len(here.holds) == 0
    with anyio.fail_after(10):
        assert await other.delete("sess_a")
    assert not here.directory("sess_a").exists()


async def test_two_live_sessions_of_one_id_share_the_hold_and_the_last_close_lets_it_go(
    tmp_path: Path,
) -> None:
    here = _store_with(tmp_path)
    other = SessionStore(tmp_path / "sessions")
    assert here.hold_sync("sess_a") and here.hold_sync("sess_a")
    assert len(here.holds) == 1
    here.release("sess_a")
    with anyio.fail_after(10), pytest.raises(SessionInUse):
        await other.delete("sess_a")
    here.release("sess_a")
    with anyio.fail_after(10):
        assert await other.delete("sess_a")


async def test_a_process_deleting_a_session_lets_go_of_its_own_hold_first(tmp_path: Path) -> None:
    here = _store_with(tmp_path)
    assert here.hold_sync("sess_a")
    with anyio.fail_after(10):
        assert await here.delete("sess_a")
    assert len(here.holds) == 0 and not here.directory("sess_a").exists()


def test_a_session_being_deleted_elsewhere_cannot_be_opened_and_a_gone_one_neither(tmp_path: Path) -> None:
    here = _store_with(tmp_path)
    with exclusively(here.directory("sess_a"), "sess_a") as found:
        assert found
        with pytest.raises(SessionInUse):
            here.hold_sync("sess_a")
    assert not here.hold_sync("sess_gone")
    assert len(here.holds) == 0


def test_a_session_held_in_one_process_cannot_be_held_in_another_until_it_is_let_go(tmp_path: Path) -> None:
    here = _store_with(tmp_path)
    other = SessionStore(tmp_path / "sessions")
    assert here.hold_sync("sess_a") and here.hold_sync("sess_a")  # two live sessions here share it
    with pytest.raises(SessionInUse, match="open in another agent process"):
        other.hold_sync("sess_a")
    assert len(other.holds) == 0
    here.release("sess_a")
    with pytest.raises(SessionInUse):  # one live session here still has it
        other.hold_sync("sess_a")
    here.release("sess_a")
    assert other.hold_sync("sess_a")
    with pytest.raises(SessionInUse):  # and now the other way round
        here.hold_sync("sess_a")


@pytest.mark.process
def test_a_killed_agent_holds_nothing(tmp_path: Path) -> None:
    """The kernel drops the lock with the process: no stale lock to clean up after a ``kill -9``."""
    store = _store_with(tmp_path)
    folder = store.directory("sess_a")
    code = (
        "import fcntl, os, sys\n"
        f"fd = os.open({str(folder)!r}, os.O_RDONLY | os.O_DIRECTORY)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "print('held', flush=True)\n"
        "sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as child:
        try:
            assert child.stdout is not None and child.stdout.readline() == b"held\n"
            with pytest.raises(SessionInUse), exclusively(folder, "sess_a"):
                pass
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(30)
    with exclusively(folder, "sess_a") as found:
        assert found


async def test_session_delete_through_a_second_agent_is_refused_while_the_first_has_it_open(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path, FakeModel([Reply(text="one"), Reply(text="two")])) as (first, _a, _t):
        await first.initialize()
        sid = await first.new_session(str(tmp_path))
        await first.call("session/prompt", first.prompt_params(sid, "hello"))
        async with running_agent(tmp_path, FakeModel([])) as (second, _b, _u):
            await second.initialize()
            answer = await second.response(await second.send_request("session/delete", {"sessionId": sid}))
            error = answer["error"]
            assert error["code"] == -32603 and error["data"]["errorKind"] == "session_in_use", error
            assert "open in another agent process" in error["message"]
            await first.call("session/prompt", first.prompt_params(sid, "still here"))  # untouched
            await first.call("session/close", {"sessionId": sid})
            assert await second.call("session/delete", {"sessionId": sid}) == {}
        assert not (tmp_path / "sessions" / sid).exists()


def test_on_a_file_system_without_locks_sessions_open_and_are_deleted_unheld(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_locks(_fd: int, _op: int) -> None:
        raise OSError(errno.ENOLCK, "no locks available")

    here = _store_with(tmp_path)
    monkeypatch.setattr("acp_agent.session._holds.fcntl.flock", no_locks)
    assert here.hold_sync("sess_a") and len(here.holds) == 0
    with exclusively(here.directory("sess_a"), "sess_a") as found:
        assert found


async def test_a_session_open_in_one_agent_is_not_loaded_or_resumed_by_a_second_until_it_is_closed(
    tmp_path: Path,
) -> None:
    """Two editor windows on one home: the second window's load or resume is refused, saying why, while the
    first has the session open (two processes would each write a conversation that never saw the other's
    turns into one transcript); the first goes on untouched, and once it closes the session the second
    opens it with everything the first wrote."""
    replies = [Reply(text="one"), Reply(text="two")]
    async with running_agent(tmp_path, FakeModel(replies)) as (first, _a, _t):
        await first.initialize()
        sid = await first.new_session(str(tmp_path))
        await first.call("session/prompt", first.prompt_params(sid, "hello"))
        async with running_agent(tmp_path, FakeModel([Reply(text="three")])) as (second, _b, _u):
            await second.initialize()
            opening: dict[str, Any] = {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
            for method in ("session/load", "session/resume"):
                answer = await second.response(await second.send_request(method, opening))
                error = answer["error"]
                assert error["code"] == -32603 and error["data"]["errorKind"] == "session_in_use", error
                assert error["data"]["sessionId"] == sid
                assert "open in another agent process" in error["message"], error
            refused = await second.response(
                await second.send_request("session/prompt", second.prompt_params(sid, "mine"))
            )
            assert refused["error"]["code"] == -32002, refused  # it did not become live there
            await first.call("session/prompt", first.prompt_params(sid, "still here"))
            await first.call("session/close", {"sessionId": sid})
            assert await second.call("session/load", opening) is not None
            await second.call("session/prompt", second.prompt_params(sid, "now mine"))
    lines = (tmp_path / "sessions" / sid / "messages.jsonl").read_text(encoding="utf-8").splitlines()
    texts = [json.dumps(json.loads(line)) for line in lines]
    said = ("hello", "one", "still here", "two", "now mine", "three")
    where = [next((i for i, x in enumerate(texts) if f'"{t}"' in x), -1) for t in said]
    assert -1 not in where and where == sorted(where), lines  # every turn, in order, none lost
    assert len(texts) == len(said), lines  # and nothing else: the refused requests wrote nothing
