"""Messages while the agent works: a ``session/prompt`` during a turn waits for it and runs next (its own
answer); ``_session/steering`` slips a message into the running turn at its next step boundary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.session import SessionEnvironment, SessionSetup
from harness import Tools, tool
from harness.testing import FakeModel, Reply
from tests.acp.session._support import running_agent
from tests.acp_client import AcpClient

pytestmark = pytest.mark.anyio


class Gate:
    """A tool call that runs until the test opens the gate: a turn that is running, at a known place."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.open = anyio.Event()

    def factory(self) -> Any:
        gate = self

        @tool
        async def wait() -> str:
            """Wait for the gate."""
            gate.entered.set()
            await gate.open.wait()
            return "opened"

        async def factory(env: SessionEnvironment) -> SessionSetup:
            return SessionSetup(tools=Tools(wait))

        return factory


def _texts(client: AcpClient, sid: str) -> str:
    return "".join(
        u["content"]["text"] for u in client.updates(sid) if u["sessionUpdate"] == "agent_message_chunk"
    )


def _user_texts(model: FakeModel, index: int) -> list[str]:
    return [m.text for m in model.prompts[index].messages if m.role.value == "user" and m.text]


async def test_a_prompt_during_a_turn_waits_and_runs_next_with_its_own_answer(tmp_path: Path) -> None:
    gate = Gate()
    model = FakeModel([Reply(tool_calls=[("wait", {})]), Reply(text="one"), Reply(text="two")])
    async with running_agent(tmp_path, model, factory=gate.factory()) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        first = await client.send_request("session/prompt", client.prompt_params(sid, "first"))
        with anyio.fail_after(10):
            await gate.entered.wait()
        second = await client.send_request("session/prompt", client.prompt_params(sid, "second"))
        with anyio.move_on_after(0.2):
            await client.response(second)
            pytest.fail("the queued prompt was answered while the first turn ran")
        gate.open.set()
        assert (await client.response(first))["result"] == {"stopReason": "end_turn"}
        assert (await client.response(second))["result"] == {"stopReason": "end_turn"}
        assert client.index_of(first) < client.index_of(second)
        assert _texts(client, sid) == "onetwo"
        assert _user_texts(model, 2)[-1] == "second" and "first" in _user_texts(model, 2)
        assert client.schema_problems() == []


async def test_a_cancel_ends_the_running_turn_and_leaves_the_queue(tmp_path: Path) -> None:
    gate = Gate()
    model = FakeModel([Reply(tool_calls=[("wait", {})]), Reply(text="two")])
    async with running_agent(tmp_path, model, factory=gate.factory()) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        first = await client.send_request("session/prompt", client.prompt_params(sid, "first"))
        with anyio.fail_after(10):
            await gate.entered.wait()
        second = await client.send_request("session/prompt", client.prompt_params(sid, "second"))
        await client.notify("session/cancel", {"sessionId": sid})
        assert (await client.response(first))["result"] == {"stopReason": "cancelled"}
        assert (await client.response(second))["result"] == {"stopReason": "end_turn"}
        assert _texts(client, sid) == "two"


async def test_a_cancelled_queued_prompt_leaves_the_queue_without_running(tmp_path: Path) -> None:
    gate = Gate()
    model = FakeModel([Reply(tool_calls=[("wait", {})]), Reply(text="one"), Reply(text="three")])
    async with running_agent(tmp_path, model, factory=gate.factory()) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        first = await client.send_request("session/prompt", client.prompt_params(sid, "first"))
        with anyio.fail_after(10):
            await gate.entered.wait()
        second = await client.send_request("session/prompt", client.prompt_params(sid, "second"))
        third = await client.send_request("session/prompt", client.prompt_params(sid, "third"))
        await client.notify("$/cancel_request", {"requestId": second})
        assert (await client.response(second))["result"] == {"stopReason": "cancelled"}
        gate.open.set()
        assert (await client.response(first))["result"] == {"stopReason": "end_turn"}
        assert (await client.response(third))["result"] == {"stopReason": "end_turn"}
        assert model.calls == 3  # the second prompt never reached the model
        assert "second" not in _user_texts(model, 2)


async def test_steering_lands_in_the_running_turn_at_its_next_step(tmp_path: Path) -> None:
    gate = Gate()
    model = FakeModel([Reply(tool_calls=[("wait", {})]), Reply(text="steered")])
    async with running_agent(tmp_path, model, factory=gate.factory()) as (client, _agent, _tg):
        init = await client.initialize()
        assert init["_meta"]["steering"] == {"supported": True}
        sid = await client.new_session(str(tmp_path))
        first = await client.send_request("session/prompt", client.prompt_params(sid, "first"))
        with anyio.fail_after(10):
            await gate.entered.wait()
        answer = await client.call(
            "_session/steering", {"sessionId": sid, "prompt": [{"type": "text", "text": "also do this"}]}
        )
        assert answer == {"outcome": "injected"}
        gate.open.set()
        assert (await client.response(first))["result"] == {"stopReason": "end_turn"}
        assert model.calls == 2
        assert _user_texts(model, 1)[-1] == "also do this"  # after the tool's result, before the reply
        before = len(client.updates(sid))
        await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        users = [u for u in client.updates(sid)[before:] if u["sessionUpdate"] == "user_message_chunk"]
        assert [u["content"]["text"] for u in users] == ["first", "also do this"]
        assert users[0]["messageId"] != users[1]["messageId"]


async def test_steering_an_idle_session_starts_a_turn_or_asks_for_a_prompt(tmp_path: Path) -> None:
    model = FakeModel([Reply(text="started")])
    async with running_agent(tmp_path, model) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        params: dict[str, Any] = {"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}
        required = {**params, "_meta": {"steering": {"idleBehavior": "promptRequired"}}}
        assert await client.call("_session/steering", required) == {"outcome": "promptRequired"}
        assert model.calls == 0
        assert await client.call("_session/steering", params) == {"outcome": "startedNewTurn"}
        await client.wait_for(
            lambda m: (
                m.get("method") == "session/update"
                and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            )
        )
        # a prompt sent now waits for the started turn: the session runs one turn at a time
        model.replies.append(Reply(text=" and next"))
        assert await client.call("session/prompt", client.prompt_params(sid, "next")) == {
            "stopReason": "end_turn"
        }
        assert _texts(client, sid) == "started and next"
        assert client.schema_problems() == []


async def test_steering_an_unknown_session_is_not_found(tmp_path: Path) -> None:
    async with running_agent(tmp_path, FakeModel([])) as (client, _agent, _tg):
        await client.initialize()
        params = {"sessionId": "sess_nope", "prompt": [{"type": "text", "text": "hi"}]}
        answer = await client.response(await client.send_request("_session/steering", params))
        assert answer["error"]["code"] == -32002
        answer = await client.response(await client.send_request("_session/steering", {"sessionId": "x"}))
        assert answer["error"]["code"] == -32602
