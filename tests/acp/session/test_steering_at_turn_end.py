"""A steering message is never dropped: one that arrives as the turn ends (its run already ended, the
session still writing it) or that a cancelled turn did not land becomes the next turn, ahead of the
prompts queued meanwhile; only closing the session drops one (logged)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from acp_agent.session import SessionEnvironment, SessionSetup
from acp_agent.session._session import Session
from harness.testing import FakeModel, Reply
from tests.acp.session._support import HeldEnd, running_agent
from tests.acp.session.test_queue_and_steering import Gate
from tests.acp_client import AcpClient

pytestmark = pytest.mark.anyio

LIMIT_S = 20


def _steer(sid: str, text: str) -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}


def _user_texts(model: FakeModel, index: int) -> list[str]:
    return [m.text for m in model.prompts[index].messages if m.role.value == "user" and m.text]


_RUNNING, _IDLE = "<running>", "<idle end_turn>"


def _shown(client: AcpClient, sid: str) -> list[str]:
    """The agent's texts and turn markers (``_meta.turn`` of ``session_info_update``), in order."""
    shown: list[str] = []
    for u in client.updates(sid):
        if u["sessionUpdate"] == "agent_message_chunk":
            shown.append(u["content"]["text"])
        elif u["sessionUpdate"] == "session_info_update" and "turn" in (u.get("_meta") or {}):
            turn = u["_meta"]["turn"]
            assert set(u) == {"sessionUpdate", "_meta"}  # nothing else changes: no title, no time
            shown.append(" ".join(["<" + turn["state"], *filter(None, [turn.get("stopReason")])]) + ">")
    return shown


def _marker_index(client: AcpClient, state: str) -> int:
    """Where the first ``_meta.turn`` marker of ``state`` is among the messages the client read."""
    for i, m in enumerate(client.messages):
        if m.get("method") == "session/update":
            meta: dict[str, Any] = m["params"]["update"].get("_meta") or {}
            if "turn" in meta and meta["turn"]["state"] == state:
                return i
    raise AssertionError(f"no {state} marker")


def _first_text(client: AcpClient, text: str) -> int:
    return next(
        i
        for i, m in enumerate(client.messages)
        if m.get("method") == "session/update"
        and m["params"]["update"].get("content", {}).get("text") == text
    )


def _said(client: AcpClient, sid: str, text: str) -> bool:
    return any(
        u["sessionUpdate"] == "agent_message_chunk" and u["content"]["text"] == text
        for u in client.updates(sid)
    )


async def test_steering_that_arrives_as_the_turn_ends_is_the_next_turn_before_a_queued_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    end = HeldEnd(monkeypatch)
    model = FakeModel([Reply(text="one"), Reply(text="steered"), Reply(text="two")])
    with anyio.fail_after(LIMIT_S):
        async with running_agent(tmp_path, model) as (client, _agent, _tg):
            await client.initialize()
            sid = await client.new_session(str(tmp_path))
            first = await client.send_request("session/prompt", client.prompt_params(sid, "first"))
            await end.reached.wait()
            second = await client.send_request("session/prompt", client.prompt_params(sid, "second"))
            assert await client.call("_session/steering", _steer(sid, "also this")) == {"outcome": "injected"}
            end.release.set()
            assert (await client.response(first))["result"] == {"stopReason": "end_turn"}
            assert (await client.response(second))["result"] == {"stopReason": "end_turn"}
            assert model.calls == 3
            # The follow-up, which no answer ends, is bracketed by markers, the first one before the
            # answer of the turn it follows (the session is never idle in between); the queued prompt after.
            assert _shown(client, sid) == ["one", _RUNNING, "steered", _IDLE, "two"]
            assert _marker_index(client, "running") < client.index_of(first) < _first_text(client, "steered")
            assert _user_texts(model, 1)[-1] == "also this"  # its own turn, right after the first
            assert _user_texts(model, 2)[-2:] == ["also this", "second"]
            assert _said(client, sid, "steered")
            assert client.schema_problems() == []
            before = len(client.updates(sid))  # and a load replays it where it was read
            await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
            replayed = client.updates(sid)[before:]
            users = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
            assert users == ["first", "also this", "second"]


async def test_the_follow_up_turn_streams_only_after_the_answer_of_the_turn_it_follows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client ends a turn at its prompt's answer: updates before it would land in the ended turn. The
    answer is held back for up to a second: a follow-up started before it would reach the model then."""
    end = HeldEnd(monkeypatch)
    answer_prompt = Session.prompt

    async def late_answer(session: Session, blocks: Any, ctx: Any) -> str:
        response = await answer_prompt(session, blocks, ctx)
        with anyio.move_on_after(1):  # a follow-up started now would reach the model meanwhile
            while model.calls < 2:
                await anyio.lowlevel.checkpoint()
        return response

    monkeypatch.setattr(Session, "prompt", late_answer)
    model = FakeModel([Reply(text="one"), Reply(text="steered")])
    with anyio.fail_after(LIMIT_S):
        async with running_agent(tmp_path, model) as (client, _agent, _tg):
            await client.initialize()
            sid = await client.new_session(str(tmp_path))
            first = await client.send_request("session/prompt", client.prompt_params(sid, "first"))
            await end.reached.wait()
            assert await client.call("_session/steering", _steer(sid, "also this")) == {"outcome": "injected"}
            end.release.set()
            await client.wait_for(lambda _m: _said(client, sid, "steered"))
            answer = client.index_of(first)
            follow_up = [
                i
                for i, m in enumerate(client.messages)
                if m.get("method") == "session/update"
                and m["params"]["update"].get("content", {}).get("text") in ("also this", "steered")
            ]
            assert follow_up and min(follow_up) > answer


async def test_steering_a_turn_that_is_then_cancelled_runs_next(tmp_path: Path) -> None:
    """Steered into the running turn, which the cancel ends before its next step: the message runs next
    (as a queued prompt does after a cancel); a second cancel would end it."""
    gate = Gate()
    model = FakeModel([Reply(tool_calls=[("wait", {})]), Reply(text="steered")])
    with anyio.fail_after(LIMIT_S):
        async with running_agent(tmp_path, model, factory=gate.factory()) as (client, _agent, _tg):
            await client.initialize()
            sid = await client.new_session(str(tmp_path))
            first = await client.send_request("session/prompt", client.prompt_params(sid, "first"))
            await gate.entered.wait()
            assert await client.call("_session/steering", _steer(sid, "also this")) == {"outcome": "injected"}
            await client.notify("session/cancel", {"sessionId": sid})
            assert (await client.response(first))["result"] == {"stopReason": "cancelled"}
            await client.wait_for(lambda _m: _said(client, sid, "steered"))
            assert model.calls == 2
            assert _user_texts(model, 1)[-1] == "also this"


async def test_steering_a_turn_cancelled_while_it_is_prepared_runs_next(tmp_path: Path) -> None:
    """Before the turn's run started (its set-up still awaited) the message waits in the session; the
    cancel ends the turn before the run: the message is the next turn all the same."""
    preparing = anyio.Event()

    async def ready() -> None:
        if not preparing.is_set():  # the first prompt's wait: held until its cancel
            preparing.set()
            await anyio.sleep_forever()

    async def factory(env: SessionEnvironment) -> SessionSetup:
        return SessionSetup(ready=ready)

    model = FakeModel([Reply(text="steered")])
    with anyio.fail_after(LIMIT_S):
        async with running_agent(tmp_path, model, factory=factory) as (client, _agent, _tg):
            await client.initialize()
            sid = await client.new_session(str(tmp_path))
            first = await client.send_request("session/prompt", client.prompt_params(sid, "first"))
            await preparing.wait()
            assert await client.call("_session/steering", _steer(sid, "also this")) == {"outcome": "injected"}
            await client.notify("session/cancel", {"sessionId": sid})
            assert (await client.response(first))["result"] == {"stopReason": "cancelled"}
            await client.wait_for(lambda _m: _said(client, sid, "steered"))
            assert model.calls == 1
            assert _user_texts(model, 0)[-1] == "also this"


async def test_closing_the_session_drops_the_steering_it_did_not_land_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    end = HeldEnd(monkeypatch)
    model = FakeModel([Reply(text="one"), Reply(text="never")])
    with anyio.fail_after(LIMIT_S):
        async with running_agent(tmp_path, model) as (client, _agent, _tg):
            await client.initialize()
            sid = await client.new_session(str(tmp_path))
            first = await client.send_request("session/prompt", client.prompt_params(sid, "first"))
            await end.reached.wait()
            assert await client.call("_session/steering", _steer(sid, "also this")) == {"outcome": "injected"}
            with caplog.at_level(logging.WARNING, logger="acp_agent.session._inbox"):
                closing = await client.send_request("session/close", {"sessionId": sid})
                end.release.set()
                assert "result" in await client.response(closing)
            assert (await client.response(first))["result"] == {"stopReason": "end_turn"}
    assert model.calls == 1
    assert "1 steering message(s) not delivered: the session closed" in caplog.text


async def test_cancelling_the_follow_up_turn_ends_it_with_an_idle_marker_that_says_cancelled(
    tmp_path: Path,
) -> None:
    """The follow-up a cancelled turn left runs next; a second cancel ends it: its idle marker carries
    ``cancelled``, which is how a client knows that turn is over."""
    gate = Gate()
    model = FakeModel([Reply(tool_calls=[("wait", {})]), Reply(tool_calls=[("wait", {})])])
    with anyio.fail_after(LIMIT_S):
        async with running_agent(tmp_path, model, factory=gate.factory()) as (client, _agent, _tg):
            await client.initialize()
            sid = await client.new_session(str(tmp_path))
            first = await client.send_request("session/prompt", client.prompt_params(sid, "first"))
            await gate.entered.wait()
            gate.entered = anyio.Event()
            assert await client.call("_session/steering", _steer(sid, "also this")) == {"outcome": "injected"}
            await client.notify("session/cancel", {"sessionId": sid})
            assert (await client.response(first))["result"] == {"stopReason": "cancelled"}
            assert _marker_index(client, "running") < client.index_of(first)
            await gate.entered.wait()  # the follow-up is in its tool call
            await client.notify("session/cancel", {"sessionId": sid})
            await client.wait_for(lambda _m: "<idle cancelled>" in _shown(client, sid))
            assert _shown(client, sid) == [_RUNNING, "<idle cancelled>"]
            assert client.schema_problems() == []


async def test_a_turn_started_by_steering_an_idle_session_is_bracketed_by_markers(tmp_path: Path) -> None:
    model = FakeModel([Reply(text="started")])
    with anyio.fail_after(LIMIT_S):
        async with running_agent(tmp_path, model) as (client, _agent, _tg):
            await client.initialize()
            sid = await client.new_session(str(tmp_path))
            assert await client.call("_session/steering", _steer(sid, "go")) == {"outcome": "startedNewTurn"}
            await client.wait_for(lambda _m: _IDLE in _shown(client, sid))
            assert _shown(client, sid) == [_RUNNING, "started", _IDLE]
            # a prompt's turn (its answer ends it) has no markers
            model.replies.append(Reply(text="next"))
            assert await client.call("session/prompt", client.prompt_params(sid, "p")) == {
                "stopReason": "end_turn"
            }
            assert _shown(client, sid) == [_RUNNING, "started", _IDLE, "next"]
            assert client.schema_problems() == []


async def test_a_started_turn_that_fails_ends_with_an_idle_marker_naming_the_error(tmp_path: Path) -> None:
    async def ready() -> None:
        raise RuntimeError("the set-up broke")

    async def factory(env: SessionEnvironment) -> SessionSetup:
        return SessionSetup(ready=ready)

    with anyio.fail_after(LIMIT_S):
        async with running_agent(tmp_path, FakeModel([]), factory=factory) as (client, _agent, _tg):
            await client.initialize()
            sid = await client.new_session(str(tmp_path))
            assert await client.call("_session/steering", _steer(sid, "go")) == {"outcome": "startedNewTurn"}
            await client.wait_for(lambda _m: len(_shown(client, sid)) == 2)
            assert _shown(client, sid) == [_RUNNING, "<idle error>"]
            marker = [u for u in client.updates(sid) if u["sessionUpdate"] == "session_info_update"][-1]
            assert marker["_meta"]["turn"]["message"]
