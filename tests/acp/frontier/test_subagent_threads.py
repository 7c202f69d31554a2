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
from tests.acp_client import RpcFailure

pytestmark = [pytest.mark.anyio, pytest.mark.process]

PROMPT = "Where is foo defined?"
CHILD_USE = ({"input": 11, "output": 2}, {"input": 13, "output": 5})
"""What the sub-agent's two model requests used (the parent's use the fake model's default)."""
CHILD_USAGE = {
    "totalTokens": 31,
    "inputTokens": 24,
    "outputTokens": 7,
    "cachedReadTokens": 0,
    "cachedWriteTokens": 0,
}
"""The child's ``idle`` usage: its own two requests, not the parent's."""
FIRST_USAGE = {**CHILD_USAGE, "totalTokens": 13, "inputTokens": 11, "outputTokens": 2}
"""The usage of a child cancelled after its first request."""
TURNS = [
    Turn(tool_calls=(ToolCall("explore", {"prompt": PROMPT}, "call_explore"),)),
    # the sub-agent's
    Turn(tool_calls=(ToolCall("read_file", {"path": "a.py"}, "call_read"),), usage=CHILD_USE[0]),
    Turn(text="foo is defined in a.py.", usage=CHILD_USE[1]),
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
            "state": {"state": "idle", "stopReason": "end_turn", "usage": CHILD_USAGE},
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


# --- the child's state while it waits on the user, and the child cancelled alone ------------------------

CHILD_TURNS = [
    Turn(tool_calls=(ToolCall("explore", {"prompt": PROMPT}, "call_explore"),)),
    # the sub-agent's
    Turn(tool_calls=(ToolCall("read_file", {"path": "a.py"}, "call_read"),), usage=CHILD_USE[0]),
    Turn(text="foo is defined in a.py.", usage=CHILD_USE[1]),  # the sub-agent's (unless it was cancelled)
    Turn(text="It is in a.py."),
]
CANCELLED_TURNS = [CHILD_TURNS[0], CHILD_TURNS[1], Turn(text="The exploration was cancelled.")]
SELECTED = {"outcome": {"outcome": "selected", "optionId": "allow_once"}}


def _ask_before_reading(tmp_path: Path) -> None:
    rules = tmp_path / "xdg" / "acp-agent" / "permissions.jsonl"
    rules.parent.mkdir(parents=True)
    rules.write_text(json.dumps({"verdict": "ask", "kind": "tool", "tool": "read_file"}) + "\n")


def _states(updates: list[dict[str, Any]], child: str) -> list[dict[str, Any]]:
    return [
        u["state"] for u in updates if u["sessionUpdate"] == "subagent_update" and u["sessionId"] == child
    ]


def _requests(client: Any, method: str) -> list[dict[str, Any]]:
    return [m for m in map(as_object, client.messages) if m.get("method") == method and "id" in m]


def _cancel_requests(client: Any, request_id: Any) -> list[dict[str, Any]]:
    return [
        m
        for m in map(as_object, client.messages)
        if m.get("method") == "$/cancel_request" and m["params"]["requestId"] == request_id
    ]


def _tool_results(agent: Any, index: int) -> list[str]:
    return [m["content"] for m in agent.model.model_requests[index].json["messages"] if m["role"] == "tool"]


async def test_a_sub_agent_waiting_on_the_user_requires_action_in_its_own_session_then_runs_again(
    tmp_path: Path,
) -> None:
    _ask_before_reading(tmp_path)
    asked: list[dict[str, Any]] = []

    async def answer(method: str, params: Any) -> Any:
        assert method == "session/request_permission"
        asked.append(params)
        return SELECTED

    async with frontier_agent(tmp_path, CHILD_TURNS, {"subagents": {}}, on_request=answer) as agent:
        client = agent.client
        (agent.project / "a.py").write_text("def foo(): pass\n")
        with anyio.fail_after(30):
            sid = (await agent.new_session())["sessionId"]
            assert (await agent.prompt(sid, "find foo"))["stopReason"] == "end_turn"
        parent = check_wire(client, sid)
        (announce,) = [u for u in parent if u["sessionUpdate"] == "subagent_update" and "title" in u]
        child = announce["sessionId"]
        assert announce["capabilities"] == {"cancel": {}}
        assert _states(parent, child) == [
            {"state": "running"},
            {"state": "requires_action"},
            {"state": "running"},
            {"state": "idle", "stopReason": "end_turn", "usage": CHILD_USAGE},
        ]
        # the request is the child's, about the child's own call, and comes after ``requires_action``
        (request,) = asked
        assert request["sessionId"] == child
        assert request["toolCall"]["toolCallId"] == "call_explore/call_read"
        assert request["toolCall"]["rawInput"] == {"path": "a.py"}
        waiting = next(
            i
            for i, m in enumerate(map(as_object, client.messages))
            if m.get("method") == "session/update"
            and m["params"]["update"].get("state") == {"state": "requires_action"}
        )
        (wire_request,) = _requests(client, "session/request_permission")
        assert waiting < client.messages.index(wire_request)
        assert "def foo" in _tool_results(agent, 2)[0]  # the child read the file once allowed
        assert _tool_results(agent, 3) == ["foo is defined in a.py."]
        assert client.schema_problems(unstable=True) == []


async def test_a_sub_agent_cancelled_while_it_waits_on_the_user_ends_alone_and_the_parent_goes_on(
    tmp_path: Path,
) -> None:
    _ask_before_reading(tmp_path)
    release = anyio.Event()

    async def answer(method: str, params: Any) -> Any:
        await release.wait()  # the client answers the cancelled request once the agent gave it up
        return {"outcome": {"outcome": "cancelled"}}

    async with frontier_agent(tmp_path, CANCELLED_TURNS, {"subagents": {}}, on_request=answer) as agent:
        client = agent.client
        (agent.project / "a.py").write_text("def foo(): pass\n")
        with anyio.fail_after(30):
            sid = (await agent.new_session())["sessionId"]
            prompt = await client.send_request("session/prompt", client.prompt_params(sid, "find foo"))
            request = await client.wait_for(
                lambda m: as_object(m).get("method") == "session/request_permission"
            )
            child = request["params"]["sessionId"]
            assert child.startswith(f"{sid}.sub-")
            await client.notify("session/cancel", {"sessionId": child})
            await client.wait_for(
                lambda m: (
                    as_object(m).get("method") == "$/cancel_request"
                    and m["params"]["requestId"] == request["id"]
                )
            )
            release.set()
            assert (await client.response(prompt))["result"]["stopReason"] == "end_turn"
        parent = check_wire(client, sid)
        assert _states(parent, child)[-2:] == [
            {"state": "requires_action"},
            # what the child used before it was cancelled: its one request
            {"state": "idle", "stopReason": "cancelled", "usage": FIRST_USAGE},  # what it used before
        ]
        assert len(_cancel_requests(client, request["id"])) == 1
        assert _of(parent, "call_explore")[-1]["status"] == "failed"
        (result,) = _tool_results(agent, 2)  # the parent's model reads why, and goes on
        assert result.startswith("Error: Cancelled by the user")  # as the provider sends an error result
        assert len(agent.model.model_requests) == 3  # the child asked the model nothing more
        assert client.schema_problems(unstable=True) == []


async def test_a_sub_agent_cancelled_mid_tool_has_its_tool_stopped_and_the_parent_goes_on(
    tmp_path: Path,
) -> None:
    reading = anyio.Event()
    release = anyio.Event()

    async def editor(method: str, params: Any) -> Any:
        assert method == "fs/read_text_file"
        path = anyio.Path(params["path"])
        if path.name != "a.py":
            return {"content": await path.read_text()}
        reading.set()
        await release.wait()  # a slow read: the agent gives it up first
        raise RpcFailure(-32800, "request cancelled")

    caps = {"subagents": {}, "fs": {"readTextFile": True, "writeTextFile": True}}
    async with frontier_agent(tmp_path, CANCELLED_TURNS, caps, on_request=editor) as agent:
        client = agent.client
        (agent.project / "a.py").write_text("def foo(): pass\n")
        with anyio.fail_after(30):
            sid = (await agent.new_session())["sessionId"]
            prompt = await client.send_request("session/prompt", client.prompt_params(sid, "find foo"))
            await reading.wait()
            (read,) = [
                r for r in _requests(client, "fs/read_text_file") if r["params"]["path"].endswith("a.py")
            ]
            parent = check_wire(client, sid)
            (announce,) = [u for u in parent if u["sessionUpdate"] == "subagent_update"]
            await client.notify("session/cancel", {"sessionId": announce["sessionId"]})
            await client.wait_for(
                lambda m: (
                    as_object(m).get("method") == "$/cancel_request"
                    and m["params"]["requestId"] == read["id"]
                )
            )
            release.set()
            assert (await client.response(prompt))["result"]["stopReason"] == "end_turn"
        parent = check_wire(client, sid)
        child = announce["sessionId"]
        assert [s["state"] for s in _states(parent, child)] == ["running", "idle"]
        assert _states(parent, child)[-1]["stopReason"] == "cancelled"
        thread = _threads(client, sid)[child]
        read_ended = _of(thread, "call_explore/call_read")[-1]  # the child's call ended, and says why
        assert read_ended["status"] == "failed" and read_ended["content"][0]["content"]["text"] == "Cancelled"
        (result,) = _tool_results(agent, 2)
        assert result.startswith("Error: Cancelled by the user")  # as the provider sends an error result
        assert client.schema_problems(unstable=True) == []


async def test_zed_keeps_its_meta_threads_and_cannot_cancel_a_thread_alone(tmp_path: Path) -> None:
    release = anyio.Event()

    async def editor(method: str, params: Any) -> Any:
        await release.wait()
        return {"content": await anyio.Path(params["path"]).read_text()}

    caps = {"fs": {"readTextFile": True, "writeTextFile": True}}
    async with frontier_agent(tmp_path, TURNS, caps, on_request=editor, client_info=ZED) as agent:
        client = agent.client
        (agent.project / "a.py").write_text("def foo(): pass\n")
        with anyio.fail_after(30):
            sid = (await agent.new_session())["sessionId"]
            prompt = await client.send_request("session/prompt", client.prompt_params(sid, "find foo"))
            await client.wait_for(lambda m: as_object(m).get("method") == "fs/read_text_file")
            explore = _of(check_wire(client, sid), "call_explore")
            child = explore[0]["_meta"]["subagent_session_info"]["session_id"]
            await client.notify("session/cancel", {"sessionId": child})  # not a cancellable child: ignored
            release.set()
            assert (await client.response(prompt))["result"]["stopReason"] == "end_turn"
        parent = check_wire(client, sid)
        assert not [u for u in parent if u["sessionUpdate"] == "subagent_update"]
        assert _of(parent, "call_explore")[-1]["status"] == "completed"
        assert _of(parent, "call_explore")[-1]["_meta"]["subagent_session_info"]["session_id"] == child
        assert not [m for m in map(as_object, client.messages) if m.get("method") == "$/cancel_request"]


async def test_a_childs_permission_request_answered_cancelled_ends_that_child_alone(tmp_path: Path) -> None:
    _ask_before_reading(tmp_path)

    async def answer(method: str, params: Any) -> Any:
        return {"outcome": {"outcome": "cancelled"}}  # the user dismissed the child's question

    async with frontier_agent(tmp_path, CANCELLED_TURNS, {"subagents": {}}, on_request=answer) as agent:
        client = agent.client
        (agent.project / "a.py").write_text("def foo(): pass\n")
        with anyio.fail_after(30):
            sid = (await agent.new_session())["sessionId"]
            assert (await agent.prompt(sid, "find foo"))["stopReason"] == "end_turn"
        parent = check_wire(client, sid)
        (request,) = _requests(client, "session/request_permission")
        child = request["params"]["sessionId"]
        assert _states(parent, child)[-1] == {
            "state": "idle",
            "stopReason": "cancelled",
            "usage": FIRST_USAGE,
        }
        (result,) = _tool_results(agent, 2)
        assert result.startswith("Error: Cancelled by the user")
        assert not [m for m in map(as_object, client.messages) if m.get("method") == "$/cancel_request"]
