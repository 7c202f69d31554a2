"""Compaction as ``compaction_update``s and advisory news as ``notice``s, through the real process, for a
client that advertises ``session.compaction`` and ``session.notices`` (as Zed does behind its beta flag);
and for one that does not, exactly what it saw before (agent messages, nothing unstable)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_conformance.fake_model import Turn
from tests.acp.frontier._frontier_support import ZED_BETA, check_wire, frontier_agent

pytestmark = [pytest.mark.anyio, pytest.mark.process]

NEAR_WINDOW = {"input": 195_000, "output": 10}
UNSTABLE = {"compaction_update", "compaction_summary_chunk", "notice", "plan_update", "plan_removed"}
# A model of a family with a known window (200k): compaction happens on its own near it.
WINDOWED = {"ACP_AGENT_MODEL": "claude-sonnet-4-5"}


def _kinds(updates: list[dict[str, Any]]) -> list[str]:
    return [u["sessionUpdate"] for u in updates]


def _agent_text(updates: list[dict[str, Any]]) -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")


def _compactions(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [u for u in updates if u["sessionUpdate"].startswith("compaction_")]


async def test_automatic_and_requested_compactions_are_compaction_updates_and_are_replayed(
    tmp_path: Path,
) -> None:
    turns = [
        Turn(text="r1", usage=NEAR_WINDOW),
        Turn(text="SUMMARY of the first exchange"),
        Turn(text="r2"),
        Turn(text="SUMMARY of everything"),
    ]
    async with frontier_agent(tmp_path, turns, ZED_BETA, environ=WINDOWED) as agent:
        client = agent.client
        with anyio.fail_after(30):
            sid = (await agent.new_session())["sessionId"]
            await agent.prompt(sid, "one")
            await agent.prompt(sid, "two")
            auto = _compactions(check_wire(client, sid))
            assert [(u["sessionUpdate"], u.get("status")) for u in auto] == [
                ("compaction_update", "in_progress"),
                ("compaction_summary_chunk", None),
                ("compaction_update", "completed"),
            ]
            assert len({u["compactionId"] for u in auto}) == 1
            assert auto[1]["content"] == {"type": "text", "text": "SUMMARY of the first exchange"}
            assert auto[2]["summary"] == [auto[1]["content"]]
            assert "compacted" not in _agent_text(check_wire(client, sid)).lower()

            before = len(check_wire(client, sid))
            assert (await agent.prompt(sid, "/compact"))["stopReason"] == "end_turn"
            requested = check_wire(client, sid)[before:]
            assert [u.get("status") for u in _compactions(requested)] == ["in_progress", None, "completed"]
            assert _agent_text(requested) == ""
            ids = [auto[0]["compactionId"], _compactions(requested)[0]["compactionId"]]
            assert ids[0] != ids[1]

            start = len(client.messages)
            await client.call("session/load", {"sessionId": sid, "cwd": str(agent.project), "mcpServers": []})
            replayed = [
                m["params"]["update"]
                for m in client.messages[start:]
                if m.get("method") == "session/update" and m["params"]["sessionId"] == sid
            ]
            shown = [
                u.get("compactionId") or u["content"]["text"]
                for u in replayed
                if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk", "compaction_update")
            ]
            assert shown == ["one", "r1", "two", ids[0], "r2", ids[1]]
            assert all(u["status"] == "completed" for u in _compactions(replayed))
        check_wire(client)


async def test_a_client_without_the_capability_is_told_in_agent_messages_as_before(tmp_path: Path) -> None:
    turns = [
        Turn(text="r1", usage=NEAR_WINDOW),
        Turn(text="SUMMARY of the first exchange"),
        Turn(text="r2"),
    ]
    async with frontier_agent(tmp_path, turns, {}, environ=WINDOWED) as agent:
        client = agent.client
        with anyio.fail_after(30):
            sid = (await agent.new_session())["sessionId"]
            await agent.prompt(sid, "one")
            await agent.prompt(sid, "two")
            await client.call("session/load", {"sessionId": sid, "cwd": str(agent.project), "mcpServers": []})
        updates = check_wire(client)
        assert not UNSTABLE & set(_kinds(updates))
        assert "Near the context window: compacted the conversation" in _agent_text(updates)


async def test_a_compaction_whose_summary_is_empty_ends_failed(tmp_path: Path) -> None:
    turns = [Turn(text="r1"), Turn(text="r2"), Turn(text="")]
    async with frontier_agent(tmp_path, turns, ZED_BETA) as agent:
        client = agent.client
        with anyio.fail_after(30):
            sid = (await agent.new_session())["sessionId"]
            await agent.prompt(sid, "one")
            await agent.prompt(sid, "two")
            assert (await agent.prompt(sid, "/compact"))["stopReason"] == "end_turn"
        updates = _compactions(check_wire(client, sid))
        assert [u["status"] for u in updates] == ["in_progress", "failed"]
        assert updates[1]["error"] == "the model gave an empty summary"


def _failing_server(tmp_path: Path) -> list[dict[str, Any]]:
    return [{"name": "broken", "command": str(tmp_path / "no-such-server"), "args": [], "env": []}]


async def test_an_mcp_server_that_fails_is_a_notice_for_a_client_that_takes_notices(tmp_path: Path) -> None:
    async with frontier_agent(tmp_path, [Turn(text="ok")], ZED_BETA) as agent:
        with anyio.fail_after(30):
            sid = (await agent.new_session(mcpServers=_failing_server(tmp_path)))["sessionId"]
            await agent.prompt(sid, "hi")
        updates = check_wire(agent.client, sid)
        (notice,) = [u for u in updates if u["sessionUpdate"] == "notice"]
        assert notice["severity"] == "warning"
        assert notice["title"].startswith("MCP server `broken`")
        assert "broken" not in _agent_text(updates)


async def test_without_notices_the_failed_server_is_told_in_the_agents_message(tmp_path: Path) -> None:
    async with frontier_agent(tmp_path, [Turn(text="ok")], {}) as agent:
        with anyio.fail_after(30):
            sid = (await agent.new_session(mcpServers=_failing_server(tmp_path)))["sessionId"]
            await agent.prompt(sid, "hi")
        updates = check_wire(agent.client, sid)
        assert "notice" not in _kinds(updates)
        assert _agent_text(updates).startswith("MCP server `broken`")
