"""``plan_update``/``plan_removed`` (with the session's plan id) for a client that advertises ``plan``,
the stable ``plan`` for one that does not; both replayed on load. Through the real process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_conformance.fake_model import ToolCall, Turn
from tests.acp.frontier._frontier_support import check_wire, frontier_agent

pytestmark = [pytest.mark.anyio, pytest.mark.process]

STEPS = [{"content": "read the code", "status": "in_progress"}, {"content": "fix it"}]


def _plan(items: list[dict[str, Any]], call_id: str) -> Turn:
    return Turn(tool_calls=(ToolCall("plan_set", {"items": items}, call_id),))


def _plans(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [u for u in updates if u["sessionUpdate"] in ("plan", "plan_update", "plan_removed")]


async def _run(
    tmp_path: Path, capabilities: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    turns = [_plan(STEPS, "p1"), Turn(text="planned"), _plan([], "p2"), Turn(text="dropped")]
    async with frontier_agent(tmp_path, turns, capabilities) as agent:
        client = agent.client
        with anyio.fail_after(30):
            sid = (await agent.new_session())["sessionId"]
            await agent.prompt(sid, "make a plan")
            first = len(check_wire(client, sid))
            live_first = _plans(check_wire(client, sid))
            start = len(client.messages)
            await client.call("session/load", {"sessionId": sid, "cwd": str(agent.project), "mcpServers": []})
            replayed = _plans(check_wire(client, sid)[first:])
            assert len(client.messages) > start
            loaded = len(check_wire(client, sid))
            await agent.prompt(sid, "drop it")
        live = live_first + _plans(check_wire(client, sid)[loaded:])
        check_wire(client)
        return live, replayed


async def test_a_client_with_the_plan_capability_gets_plan_updates_by_id_and_a_removal(
    tmp_path: Path,
) -> None:
    live, replayed = await _run(tmp_path, {"plan": {}})
    assert [u["sessionUpdate"] for u in live] == ["plan_update", "plan_removed"]
    assert live[0]["plan"]["type"] == "items" and live[0]["plan"]["planId"] == live[1]["planId"]
    assert [e["content"] for e in live[0]["plan"]["entries"]] == ["read the code", "fix it"]
    assert [u["sessionUpdate"] for u in replayed] == ["plan_update"]
    assert replayed[0]["plan"] == live[0]["plan"]


async def test_a_client_without_it_gets_the_stable_plan_as_before(tmp_path: Path) -> None:
    live, replayed = await _run(tmp_path, {})
    assert [u["sessionUpdate"] for u in live] == ["plan", "plan"]
    assert [e["content"] for e in live[0]["entries"]] == ["read the code", "fix it"]
    assert live[1]["entries"] == []
    assert [u["sessionUpdate"] for u in replayed] == ["plan"]
