"""Races between requests on the same session, found by the interleaving fuzzer and pinned here."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.reliability._reliability_support import (
    AgentProcess,
    agent_env,
    agent_process,
    initialized,
    update_of,
    write_script,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120), pytest.mark.process]

ROUNDS = 30


def _is_chunk(message: dict[str, Any]) -> bool:
    return update_of(message).get("sessionUpdate") == "agent_message_chunk"


async def _at_once(agent: AgentProcess, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Write the requests in one write (the agent reads them together); their ids, expected."""
    ids = [agent.new_id() for _ in calls]
    for i in ids:
        agent.expect(i)
    lines = [
        {"jsonrpc": "2.0", "id": i, "method": m, "params": p} for i, (m, p) in zip(ids, calls, strict=True)
    ]
    await agent.send_raw(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    return ids


async def test_close_then_delete_during_a_turn_answers_the_prompt_cancelled(
    home: Path, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "script.json", [{"text": "w " * 50, "chunks": 50, "delay_ms": 5}] * ROUNDS
    )
    answers: list[Any] = []
    async with agent_process(home, agent_env(home, script)) as agent:
        with anyio.fail_after(90):
            await initialized(agent)
            for _ in range(ROUNDS):
                session = (await agent.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))[
                    "sessionId"
                ]
                start = len(agent.notifications)
                prompt = await agent.request(
                    "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
                )
                await agent.notification(_is_chunk, start)
                close, delete = await _at_once(
                    agent,
                    [("session/close", {"sessionId": session}), ("session/delete", {"sessionId": session})],
                )
                answers.append(
                    (
                        (await agent.response(prompt)).get("result")
                        or (await agent.response(prompt)).get("error"),
                        (await agent.response(close)).get("result"),
                        (await agent.response(delete)).get("result"),
                    )
                )
            assert not agent.violations, agent.violations
    assert answers == [({"stopReason": "cancelled"}, {}, {})] * ROUNDS


async def test_two_loads_of_one_session_at_once_leave_one_live_session_and_nothing_behind(
    home: Path, tmp_path: Path
) -> None:
    """Both loads open the session; the older live one is closed (its private sandbox folder, named
    after the agent's pid, is gone once the agent exits), and a delete racing a resume answers cleanly."""
    script = write_script(tmp_path / "script.json", [{"text": "ok"}] * 4)
    temp = Path(tempfile.gettempdir())
    async with agent_process(home, agent_env(home, script, TMPDIR=str(temp))) as agent:
        pid = agent.process.pid
        with anyio.fail_after(60):
            await initialized(agent)
            for _ in range(3):
                sid = (await agent.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
                params: dict[str, Any] = {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
                ids = await _at_once(
                    agent, [("session/load", params), ("session/load", params), ("session/resume", params)]
                )
                answers = [await agent.response(i) for i in ids]
                assert all("result" in a for a in answers), answers
                delete, resume = await _at_once(
                    agent, [("session/delete", {"sessionId": sid}), ("session/resume", params)]
                )
                assert "result" in await agent.response(delete)
                answer = await agent.response(resume)
                assert "result" in answer or answer["error"]["code"] != -32603, (
                    answer
                )  # not an internal error
    assert agent.process.returncode == 0
    assert list(temp.glob(f"acp-agent-sandbox-{pid}-*")) == []  # noqa: ASYNC240 (a test)


async def test_a_session_open_in_one_agent_is_not_deleted_through_a_second_or_the_cli_until_closed(
    home: Path, tmp_path: Path
) -> None:
    """Two editors on one home: a delete through the second agent, or ``acp-harness-agent sessions delete``,
    is refused while the first has the session open, which goes on untouched; once the first closes it, the
    delete goes through."""
    script = write_script(tmp_path / "script.json", [{"text": "ok"}] * 4)
    folder: list[Path] = []
    env = agent_env(home, script)
    async with agent_process(home, env) as first:
        with anyio.fail_after(60):
            await initialized(first)
            sid = (await first.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
            await first.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]})
            folder.append(home / "sessions" / sid)
            cli = [sys.executable, "-m", "acp_agent", "sessions", "delete", sid]
            refused = await anyio.run_process(cli, env=env, check=False)
            assert refused.returncode == 1 and b"open in another agent process" in refused.stderr
            async with agent_process(home, env) as second:
                await initialized(second)
                answer = await second.response(await second.request("session/delete", {"sessionId": sid}))
                assert answer["error"]["data"]["errorKind"] == "session_in_use", answer
                await first.call(
                    "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "still"}]}
                )
                await first.call("session/close", {"sessionId": sid})
                assert await second.call("session/delete", {"sessionId": sid}) == {}
        assert not first.violations, first.violations
    assert first.process.returncode == 0
    assert not folder[0].exists()


async def test_a_session_open_in_one_agent_is_loaded_by_a_second_only_once_the_first_lets_go(
    home: Path, tmp_path: Path
) -> None:
    """Two editor windows on one home, as real processes: the second window's load is refused while the
    first has the session open, then allowed once the first closes it, and again once a first that had it
    open again is killed (the kernel drops its hold with it)."""
    script = write_script(tmp_path / "script.json", [{"text": "ok"}] * 6)
    env = agent_env(home, script)
    async with agent_process(home, env) as first, agent_process(home, env) as second:
        with anyio.fail_after(60):
            await initialized(first)
            await initialized(second)
            sid = (await first.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
            await first.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]})
            opening: dict[str, Any] = {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
            answer = await second.response(await second.request("session/load", opening))
            assert answer["error"]["data"]["errorKind"] == "session_in_use", answer
            await first.call("session/close", {"sessionId": sid})
            await second.call("session/load", opening)
            await second.call(
                "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "two"}]}
            )
            await second.call("session/close", {"sessionId": sid})
            await first.call("session/load", opening)
            first.kill_hard()
            with anyio.fail_after(30):
                await first.process.wait()
            await second.call("session/load", opening)
        assert not second.violations, second.violations


async def test_a_session_removed_outside_any_agent_ends_not_found_and_stays_deleted(
    home: Path, tmp_path: Path
) -> None:
    """The folder removed by hand (or by an older version, which took no hold): the agent's next prompt
    answers "not found", saying why, and neither its close nor its exit writes the session back."""
    script = write_script(tmp_path / "script.json", [{"text": "ok"}] * 4)
    sessions = home / "sessions"
    async with agent_process(home, agent_env(home, script)) as first:
        with anyio.fail_after(60):
            await initialized(first)
            sid = (await first.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
            await first.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]})
            await anyio.to_thread.run_sync(shutil.rmtree, sessions / sid)
            prompt = await first.request(
                "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "again"}]}
            )
            error = (await first.response(prompt))["error"]
            assert error["code"] == -32002 and "removed outside this agent" in error["message"], error
        assert not first.violations, first.violations
    assert first.process.returncode == 0
    assert not (sessions / sid).exists()
