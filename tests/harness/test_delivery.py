"""Synchronous delivery: the turn goes on only when the consumer asks for the next event."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from harness import Call, Delivery, EndReason, Message, Run, Tools, tool
from harness.events import MessageEnded, TextDelta, ToolEnded, ToolProgress, TurnEnded, TurnStarted
from harness.model import Finish, FinishReason, TextChunk
from harness.testing import FakeModel, Reply
from tests.harness.run_support import LIMIT_S, ScriptModel, drive, ended

pytestmark = pytest.mark.anyio


async def test_a_consumer_side_effect_happens_before_the_next_model_delta_is_pulled() -> None:
    log: list[Any] = []
    model = ScriptModel(
        [[TextChunk("a"), TextChunk("b"), TextChunk("c"), Finish(FinishReason.STOP)]], log=log
    )
    run = Run(model, Tools())

    def on_event(event: Any) -> None:
        if isinstance(event, TextDelta):
            log.append(("got", event.text))

    await drive(run, Message.user("x"), on_event)
    assert log[:6] == [("pull", 0), ("got", "a"), ("pull", 1), ("got", "b"), ("pull", 2), ("got", "c")]


async def test_the_next_delta_waits_while_the_consumer_awaits_something_else() -> None:
    log: list[Any] = []
    model = ScriptModel([[TextChunk("a"), TextChunk("b"), Finish(FinishReason.STOP)]], log=log)
    run = Run(model, Tools())
    with anyio.fail_after(LIMIT_S):
        async with run.turn(Message.user("x")) as stream:
            async for event in stream:
                if isinstance(event, TextDelta) and event.text == "a":
                    # The consumer yields to the scheduler; nothing may pull the next delta meanwhile.
                    for _ in range(10):
                        await anyio.lowlevel.checkpoint()
                    log.append("consumer done with a")
    assert log.index("consumer done with a") < log.index(("pull", 1))


async def test_a_tool_runs_only_after_the_consumer_handled_message_ended() -> None:
    log: list[str] = []

    @tool
    def act() -> str:
        log.append("tool ran")
        return "done"

    model = FakeModel([Reply(tool_calls=[("act", {})]), Reply(text="ok")])
    run = Run(model, Tools(act))

    def on_event(event: Any) -> None:
        if isinstance(event, MessageEnded):
            log.append(f"handled message_ended {len(log)}")
        if isinstance(event, ToolEnded):
            log.append("handled tool_ended")

    await drive(run, Message.user("x"), on_event)
    assert log[:3] == ["handled message_ended 0", "tool ran", "handled tool_ended"]


async def test_progress_returns_to_the_tool_only_after_the_consumer_took_it() -> None:
    log: list[str] = []

    @tool
    async def work(call: Call) -> str:
        await call.progress(1)
        log.append("tool after progress 1")
        await call.progress(2)
        log.append("tool after progress 2")
        return "done"

    model = FakeModel([Reply(tool_calls=[("work", {})]), Reply(text="ok")])
    run = Run(model, Tools(work))

    def on_event(event: Any) -> None:
        if isinstance(event, ToolProgress):
            log.append(f"consumer got {event.value}")

    await drive(run, Message.user("x"), on_event)
    assert log == ["consumer got 1", "tool after progress 1", "consumer got 2", "tool after progress 2"]


async def test_is_running_from_the_first_event_until_turn_ended_and_ended_works_in_its_handler() -> None:
    model = FakeModel([Reply(text="hi")])
    run = Run(model, Tools())
    assert not run.is_running()
    assert run.ended() is None
    observed: list[Any] = []
    with anyio.fail_after(LIMIT_S):
        turn = run.turn(Message.user("x"))
        assert model.calls == 0
        async with turn as stream:
            assert model.calls == 0
            async for event in stream:
                if isinstance(event, TurnStarted):
                    observed.append(("running at start", run.is_running()))
                if isinstance(event, TurnEnded):
                    e = run.ended()
                    observed.append(("ended in handler", e.reason if e is not None else None))
    assert observed == [("running at start", True), ("ended in handler", EndReason.DONE)]
    assert not run.is_running()


async def test_a_turn_without_io_can_be_steered_from_its_first_event() -> None:
    later = Message.user("and then?")
    model = FakeModel([Reply(text="one"), Reply(text="two")])
    run = Run(model, Tools())

    def on_event(event: Any) -> None:
        if isinstance(event, TurnStarted):
            run.interject(later, Delivery.QUEUE)

    await drive(run, Message.user("go"), on_event)
    assert ended(run).reason is EndReason.DONE
    assert [m.text for m in run.messages()] == ["go", "one", "and then?", "two"]
