"""SIGTERM and SIGHUP end the real agent process as the end of its input does, and a session that
``session/new`` announced survives: acpx creates a session and ends the agent at once, and the session must
load in the next process. Both the session answered at start-up (``acp_agent._early``) and one answered by
the connection are covered, as are a signal before any session and one during a turn."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.reliability._reliability_support import INIT_PARAMS, agent_env, agent_process

pytestmark = pytest.mark.anyio

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS}
SIGNALS = [signal.SIGTERM, signal.SIGHUP]


def _line(message: object) -> bytes:
    return (json.dumps(message) + "\n").encode()


def _env(home: Path, tmp_path: Path) -> dict[str, str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"text": "Hello.", "chunks": 40, "delay_ms": 250}]), encoding="utf-8")
    return agent_env(home, script, ACP_AGENT_LOG_LEVEL="info")


async def _loads(home: Path, env: dict[str, str], session: str, project: Path) -> dict[str, Any]:
    async with agent_process(home, env, stderr_name="again.txt") as again:
        with anyio.fail_after(30):
            await again.call("initialize", INIT_PARAMS)
            return await again.call(
                "session/load", {"sessionId": session, "cwd": str(project), "mcpServers": []}
            )


@pytest.mark.process
@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
async def test_a_session_answered_at_start_up_survives_a_signal_right_after_the_answer(
    tmp_path: Path, signum: signal.Signals
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = _env(home, tmp_path)
    async with agent_process(home, env) as agent:
        agent.expect(1)
        agent.expect(2)
        new: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(project), "mcpServers": []},
        }
        await agent.send_raw(_line(INIT) + _line(new))  # as an editor does: the early path answers both
        with anyio.fail_after(30):
            session = (await agent.response(2))["result"]["sessionId"]
            agent.process.send_signal(signum)  # at once, as acpx does
            code = await agent.process.wait()
        assert code == 0
    assert "(answered at start-up)" in agent.stderr_text()
    assert f"{signum.name}: ending as at the end of input" in agent.stderr_text()
    assert await _loads(home, env, session, project) is not None


@pytest.mark.process
@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
async def test_a_session_answered_by_the_connection_survives_a_signal_right_after_the_answer(
    tmp_path: Path, signum: signal.Signals
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = _env(home, tmp_path)
    async with agent_process(home, env) as agent:
        with anyio.fail_after(30):
            await agent.call("initialize", INIT_PARAMS)
            answer = await agent.call("session/new", {"cwd": str(project), "mcpServers": []})
            agent.process.send_signal(signum)
            code = await agent.process.wait()
        assert code == 0
    assert await _loads(home, env, answer["sessionId"], project) is not None


@pytest.mark.process
async def test_a_signal_after_initialize_before_any_session_ends_the_process_cleanly(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with agent_process(home, _env(home, tmp_path)) as agent:
        with anyio.fail_after(30):
            await agent.call("initialize", INIT_PARAMS)
            agent.process.send_signal(signal.SIGTERM)
            assert await agent.process.wait() == 0


@pytest.mark.process
async def test_a_signal_during_a_turn_answers_it_cancelled_and_keeps_the_session(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = _env(home, tmp_path)
    async with agent_process(home, env) as agent:
        with anyio.fail_after(30):
            await agent.call("initialize", INIT_PARAMS)
            session = (await agent.call("session/new", {"cwd": str(project), "mcpServers": []}))["sessionId"]
            text = [{"type": "text", "text": "hi"}]
            prompt = await agent.request("session/prompt", {"sessionId": session, "prompt": text})
            await agent.notification(
                lambda n: n.get("params", {}).get("update", {}).get("sessionUpdate") == "agent_message_chunk"
            )
            agent.process.send_signal(signal.SIGTERM)
            answer = await agent.response(prompt)
            code = await agent.process.wait()
        assert answer["result"]["stopReason"] == "cancelled"
        assert code == 0
    loaded = await _loads(home, env, session, project)
    assert loaded is not None


@pytest.mark.process
async def test_a_session_answered_at_start_up_is_on_disk_even_when_killed_9_right_after_the_answer(
    tmp_path: Path,
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = _env(home, tmp_path)
    async with agent_process(home, env) as agent:
        agent.expect(1)
        agent.expect(2)
        params: dict[str, Any] = {"cwd": str(project), "mcpServers": []}
        new: dict[str, Any] = {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": params}
        await agent.send_raw(_line(INIT) + _line(new))
        with anyio.fail_after(30):
            session = (await agent.response(2))["result"]["sessionId"]
            agent.process.kill()  # SIGKILL: nothing runs after it
            await agent.process.wait()
    assert await _loads(home, env, session, project) is not None
    async with agent_process(home, env, stderr_name="list.txt") as listing:
        with anyio.fail_after(30):
            await listing.call("initialize", INIT_PARAMS)
            listed = await listing.call("session/list", {})
    assert session in [s["sessionId"] for s in listed["sessions"]]


def test_the_record_written_at_the_early_answer_is_the_stores_own_format(tmp_path: Path) -> None:
    from acp_agent._early import record_session
    from acp_agent.session._store import SessionStore

    project = tmp_path / "project"
    project.mkdir()
    params = {"cwd": str(project) + "/", "mcpServers": [], "additionalDirectories": [str(tmp_path) + "/."]}
    assert record_session(tmp_path / "sessions", "sess_abc", params)
    written = json.loads((tmp_path / "sessions" / "sess_abc" / "meta.json").read_text())
    meta = anyio.run(SessionStore(tmp_path / "sessions").load_meta, "sess_abc")
    assert meta is not None and meta.to_dict() == written
    assert meta.cwd == str(project) and meta.additional_directories == (str(tmp_path),)
    assert not record_session(tmp_path / "sessions", "sess_abc", params)  # never over another's file
