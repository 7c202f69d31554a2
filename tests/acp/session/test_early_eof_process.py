"""The end of input right after a ``session/new`` answered at start-up (an editor closing a thread it just
opened): the real process ends at once, without waiting for the rest of the agent to import, and the
announced session loads in the next process, its MCP servers kept when it had some."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.reliability._reliability_support import INIT_PARAMS, agent_env, agent_process

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"]), pytest.mark.process]


def _line(message: object) -> bytes:
    return (json.dumps(message) + "\n").encode()


async def _new_then_eof(home: Path, env: dict[str, str], params: dict[str, Any]) -> str:
    async with agent_process(home, env) as agent:
        agent.expect(1)
        agent.expect(2)
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS}
        new = {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": params}
        await agent.send_raw(_line(init) + _line(new))  # as an editor does: the early path answers both
        with anyio.fail_after(30):
            session = str((await agent.response(2))["result"]["sessionId"])
        assert agent.process.stdin is not None
        await agent.process.stdin.aclose()
        with anyio.fail_after(10):
            assert await agent.process.wait() == 0
    return session


async def _loaded(home: Path, env: dict[str, str], session: str, project: Path) -> dict[str, Any]:
    async with agent_process(home, env, stderr_name="again.txt") as again:
        with anyio.fail_after(30):
            await again.call("initialize", INIT_PARAMS)
            listed = await again.call("session/list", {})
            assert [s["sessionId"] for s in listed["sessions"]] == [session]
            return await again.call(
                "session/load", {"sessionId": session, "cwd": str(project), "mcpServers": []}
            )


async def test_end_of_input_right_after_the_early_answer_ends_the_process_and_the_session_loads(
    anyio_backend: str, tmp_path: Path
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = agent_env(home, ACP_AGENT_LOG_LEVEL="info")
    session = await _new_then_eof(home, env, {"cwd": str(project), "mcpServers": []})
    assert "sessionId" not in await _loaded(home, env, session, project)  # (load answers modes, not an id)


async def test_a_session_with_mcp_servers_is_stored_with_them_when_the_input_ends_at_once(
    anyio_backend: str, tmp_path: Path
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = agent_env(home, ACP_AGENT_LOG_LEVEL="info")
    server = {
        "name": "slow",
        "command": sys.executable,
        "args": ["-c", "import time; time.sleep(30)"],
        "env": [],
    }
    session = await _new_then_eof(home, env, {"cwd": str(project), "mcpServers": [server]})
    meta = json.loads((home / "sessions" / session / "meta.json").read_text(encoding="utf-8"))
    assert [s["name"] for s in meta["mcpServers"]] == ["slow"]
    await _loaded(home, env, session, project)
