"""The first line is answered before the agent's imports (acp_agent._early): what follows it in the same
write, a line split across writes, and a first line that is not `initialize` all behave as before."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.reliability._reliability_support import agent_env, agent_process

pytestmark = pytest.mark.anyio

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}


def _line(message: object) -> bytes:
    return (json.dumps(message) + "\n").encode()


async def test_requests_written_together_with_initialize_are_all_answered_in_order(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with agent_process(home, agent_env(home)) as agent:
        for request_id in (1, 2, 3):
            agent.expect(request_id)
        new = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(tmp_path), "mcpServers": []},
        }
        listing = {"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {}}
        await agent.send_raw(_line(INIT) + _line(new) + _line(listing))
        with anyio.fail_after(30):
            answers = [await agent.response(i) for i in (1, 2, 3)]
        assert answers[0]["result"]["protocolVersion"] == 1
        assert answers[1]["result"]["sessionId"]
        # Requests run concurrently, so the list may or may not see the new session yet: it just answers.
        assert isinstance(answers[2]["result"]["sessions"], list)
        assert agent.violations == []


async def test_an_initialize_split_across_writes_is_answered(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with agent_process(home, agent_env(home)) as agent:
        agent.expect(1)
        data = _line(INIT)
        await agent.send_raw(data[:20])
        await agent.send_raw(data[20:])
        with anyio.fail_after(30):
            answer = await agent.response(1)
        assert answer["result"]["agentInfo"]["name"] == "acp-agent"


async def test_a_first_line_that_is_not_initialize_is_answered_by_the_connection(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with agent_process(home, agent_env(home)) as agent:
        agent.expect(7)
        agent.expect(1)
        bad = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": "one"}}
        await agent.send_raw(_line(bad) + _line(INIT))
        with anyio.fail_after(30):
            rejected = await agent.response(7)
            accepted = await agent.response(1)
        assert rejected["error"]["code"] == -32602 and "protocolVersion" in rejected["error"]["message"]
        assert accepted["result"]["protocolVersion"] == 1
        assert agent.violations == []
