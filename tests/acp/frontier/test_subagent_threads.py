"""A sub-agent (``explore``) as a thread of its own, the way Zed reads it (``_meta.tool_name`` and
``_meta.subagent_session_info`` on the agent's call; its prompt, calls and text in the child session,
which ``session/load`` replays); every other client keeps the nested shape. The sub-agent's calls are
judged by the session's permission rules. Through the real process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.protocol.jsonvalue import as_object
from acp_conformance.fake_model import ToolCall, Turn
from tests.acp.frontier._frontier_support import check_wire, frontier_agent

pytestmark = [pytest.mark.anyio, pytest.mark.process]

PROMPT = "Where is foo defined?"
TURNS = [
    Turn(tool_calls=(ToolCall("explore", {"prompt": PROMPT}, "call_explore"),)),
    Turn(tool_calls=(ToolCall("read_file", {"path": "a.py"}, "call_read"),)),  # the sub-agent's
    Turn(text="foo is defined in a.py."),
    Turn(text="It is in a.py."),
]
ZED = {"name": "zed", "version": "0.220.0"}


def _of(updates: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    return [u for u in updates if u.get("toolCallId") == call_id]


def _threads(client: Any, parent: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for m in map(as_object, client.messages):
        if m.get("method") == "session/update" and m["params"]["sessionId"] != parent:
            out.setdefault(m["params"]["sessionId"], []).append(m["params"]["update"])
    return out


async def test_zed_sees_the_sub_agent_as_a_thread_of_its_own_and_loads_it(tmp_path: Path) -> None:
    async with frontier_agent(tmp_path, TURNS, {}, client_info=ZED) as agent:
        client = agent.client
        (agent.project / "a.py").write_text("def foo(): pass\n")
        with anyio.fail_after(30):
            sid = (await agent.new_session())["sessionId"]
            assert (await agent.prompt(sid, "find foo"))["stopReason"] == "end_turn"
            parent = check_wire(client, sid)
            explore = _of(parent, "call_explore")
            child = explore[0]["_meta"]["subagent_session_info"]["session_id"]
            assert child.startswith(f"{sid}.sub-")
            assert all(u["_meta"]["tool_name"] == "explore" for u in explore)
            assert all(u["_meta"]["subagent_session_info"]["session_id"] == child for u in explore)
            assert explore[0]["_meta"]["subagent_session_info"]["message_start_index"] == 0
            assert explore[-1]["status"] == "completed"
            assert explore[-1]["_meta"]["subagent_session_info"]["message_end_index"] == 2
            assert not [u for u in parent if str(u.get("toolCallId", "")).startswith("call_explore/")]

            (thread,) = _threads(client, sid).values()
            assert thread[0] == {
                "sessionUpdate": "user_message_chunk",
                "content": {"type": "text", "text": PROMPT},
                "messageId": thread[0]["messageId"],
            }
            assert thread[0]["messageId"].startswith("msg_")
            read = _of(thread, "call_explore/call_read")
            assert read[0]["sessionUpdate"] == "tool_call" and read[-1]["status"] == "completed"
            assert all("parentToolCallId" not in (u.get("_meta") or {}) for u in read)
            text = "".join(
                u["content"]["text"] for u in thread if u["sessionUpdate"] == "agent_message_chunk"
            )
            assert text == "foo is defined in a.py."

            before = len(client.messages)
            assert (
                await client.call(
                    "session/load", {"sessionId": child, "cwd": str(agent.project), "mcpServers": []}
                )
                == {}
            )
            replayed = [
                m["params"]["update"]
                for m in client.messages[before:]
                if m.get("method") == "session/update" and m["params"]["sessionId"] == child
            ]
            assert [u["sessionUpdate"] for u in replayed] == [
                "user_message_chunk",
                "tool_call",
                "agent_message_chunk",
            ]
            assert (
                replayed[1]["toolCallId"] == "call_explore/call_read" and replayed[1]["status"] == "completed"
            )
            assert replayed[2]["content"]["text"] == "foo is defined in a.py."

            before = len(client.messages)
            await client.call("session/load", {"sessionId": sid, "cwd": str(agent.project), "mcpServers": []})
            again = [
                m["params"]["update"]
                for m in client.messages[before:]
                if m.get("method") == "session/update" and m["params"]["sessionId"] == sid
            ]
            (call,) = [u for u in again if u["sessionUpdate"] == "tool_call"]
            assert call["toolCallId"] == "call_explore"
            assert call["_meta"]["subagent_session_info"]["session_id"] == child

            answer = await client.response(
                await client.send_request("session/prompt", client.prompt_params(child, "hello"))
            )
            assert answer["error"]["code"] == -32002
            listed = await client.call("session/list", {})
            assert [s["sessionId"] for s in listed["sessions"]] == [sid]
        check_wire(client)


async def test_a_client_that_does_not_take_threads_keeps_the_nested_calls(tmp_path: Path) -> None:
    async with frontier_agent(tmp_path, TURNS, {}) as agent:
        client = agent.client
        (agent.project / "a.py").write_text("def foo(): pass\n")
        with anyio.fail_after(30):
            sid = (await agent.new_session())["sessionId"]
            await agent.prompt(sid, "find foo")
        updates = check_wire(client, sid)
        assert _threads(client, sid) == {}
        nested = _of(updates, "call_explore/call_read")
        assert nested and all(u["_meta"]["parentToolCallId"] == "call_explore" for u in nested)
        assert all("subagent_session_info" not in (u.get("_meta") or {}) for u in updates)


async def test_the_sessions_rules_judge_the_sub_agents_calls(tmp_path: Path) -> None:
    rules = tmp_path / "xdg" / "acp-agent" / "permissions.jsonl"
    rules.parent.mkdir(parents=True)
    rules.write_text(json.dumps({"verdict": "deny", "kind": "tool", "tool": "read_file"}) + "\n")
    caps = {"_meta": {"subagentThreads": True}}
    async with frontier_agent(tmp_path, TURNS, caps) as agent:
        client = agent.client
        (agent.project / "a.py").write_text("def foo(): pass\n")
        with anyio.fail_after(30):
            sid = (await agent.new_session())["sessionId"]
            await agent.prompt(sid, "find foo")
        (thread,) = _threads(client, sid).values()
        read = _of(thread, "call_explore/call_read")
        assert read[-1]["status"] == "failed"
        child_request = agent.model.model_requests[2].json
        results = [m for m in child_request["messages"] if m["role"] == "tool"]
        assert "def foo" not in results[0]["content"]


async def test_a_client_advertising_subagents_gets_the_child_announced_with_its_state(tmp_path: Path) -> None:
    async with frontier_agent(tmp_path, TURNS, {"subagents": {}}) as agent:
        client = agent.client
        (agent.project / "a.py").write_text("def foo(): pass\n")
        with anyio.fail_after(30):
            sid = (await agent.new_session())["sessionId"]
            assert (await agent.prompt(sid, "find foo"))["stopReason"] == "end_turn"
        parent = check_wire(client, sid)  # every update validated against schema.unstable.json
        announced = [u for u in parent if u["sessionUpdate"] == "subagent_update"]
        child = announced[0]["sessionId"]
        assert announced[0]["state"] == {"state": "running"}
        assert announced[0]["title"] == "explore" and announced[0]["description"] == PROMPT
        assert announced[-1] == {
            "sessionUpdate": "subagent_update",
            "sessionId": child,
            "state": {"state": "idle", "stopReason": "end_turn"},
        }
        # announced before any of the child's traffic, which goes to the child's session
        order = [
            (m["params"]["sessionId"], m["params"]["update"]["sessionUpdate"])
            for m in map(as_object, client.messages)
            if m.get("method") == "session/update"
        ]
        first_child = next(i for i, (s, _) in enumerate(order) if s == child)
        assert order.index((sid, "subagent_update")) < first_child
        threads = _threads(client, sid)
        chunks = [u for u in threads[child] if u["sessionUpdate"].endswith("_chunk")]
        assert chunks and all(u.get("messageId") for u in chunks)
        assert client.schema_problems(unstable=True) == []
