"""cancel() and leaving the block early: the model stream and running tools are cancelled, nothing partial kept."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from harness import Call, EndReason, Message, Result, Run, Tools, tool
from harness.events import MessageEnded, TextDelta, ToolCallReady, ToolEnded, TurnEnded
from harness.model import TextChunk
from harness.testing import FakeModel, Reply
from tests.harness.run_support import LIMIT_S, ScriptModel, drive, ended, of

pytestmark = pytest.mark.anyio


async def test_cancel_on_a_text_delta_while_the_model_streams_ends_the_turn_cancelled() -> None:
    model = FakeModel([Reply(text="Hel", hang=True)])
    run = Run(model, Tools())

    def on_event(event: Any) -> None:
        if isinstance(event, TextDelta):
            run.cancel()

    events = await drive(run, Message.user("hi"), on_event)
    assert isinstance(events[-1], TurnEnded)
    assert events[-1].reason is EndReason.CANCELLED
    assert of(events, MessageEnded) == []
    e = ended(run)
    assert e.reason is EndReason.CANCELLED
    assert e.finish is None
    assert e.partial is None
    # The partial reply is not kept: only the user message that started the turn.
    assert run.messages() == [Message.user("hi")]
    assert all(m.text != "Hel" for m in e.appended)
    assert model.prompts[0].cancel.is_set()


async def test_cancel_from_another_task_stops_a_model_that_waits_forever() -> None:
    model = ScriptModel([[TextChunk("Hel")]], hang=True)
    run = Run(model, Tools())
    streaming = anyio.Event()
    events: list[Any] = []

    async def consume() -> None:
        async with run.turn(Message.user("hi")) as stream:
            async for event in stream:
                events.append(event)
                if isinstance(event, TextDelta):
                    streaming.set()

    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await streaming.wait()
            assert run.is_running()
            run.cancel()
    assert isinstance(events[-1], TurnEnded)
    assert events[-1].reason is EndReason.CANCELLED
    assert ended(run).reason is EndReason.CANCELLED
    assert not run.is_running()


async def test_running_tools_see_is_cancelled_and_their_task_is_cancelled() -> None:
    started = anyio.Event()
    seen: dict[str, Any] = {}
    called: list[str] = []

    @tool
    async def block(call: Call) -> Result:
        called.append("block")
        started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            seen["is_cancelled"] = call.is_cancelled()
            seen["task_cancelled"] = True
            raise
        return Result.text("never")

    @tool
    async def after() -> str:
        called.append("after")
        return "never"

    model = FakeModel([Reply(tool_calls=[("block", {}, "c1"), ("after", {}, "c2")])])
    run = Run(model, Tools(block, after))
    events: list[Any] = []

    async def consume() -> None:
        events.extend(await drive(run, Message.user("go")))

    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await started.wait()
            run.cancel()

    assert seen == {"is_cancelled": True, "task_cancelled": True}
    assert called == ["block"]
    assert isinstance(events[-1], TurnEnded)
    assert events[-1].reason is EndReason.CANCELLED
    ended_ids = [e.id for e in of(events, ToolEnded)]
    assert "c1" in ended_ids
    assert ended(run).reason is EndReason.CANCELLED
    assert run.messages() == [Message.user("go")]


async def test_calls_not_yet_started_when_cancelled_get_the_cancelled_result() -> None:
    started = anyio.Event()

    @tool
    async def block() -> str:
        started.set()
        await anyio.sleep_forever()
        return "never"

    @tool
    async def after() -> str:
        return "never"

    model = FakeModel([Reply(tool_calls=[("block", {}, "c1"), ("after", {}, "c2")])])
    run = Run(model, Tools(block, after))
    events: list[Any] = []

    async def consume() -> None:
        events.extend(await drive(run, Message.user("go")))

    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await started.wait()
            run.cancel()

    unstarted = [e for e in of(events, ToolEnded) if e.id == "c2"]
    assert len(unstarted) == 1
    outcome = unstarted[0].outcome
    assert isinstance(outcome, Result)
    assert outcome.error is True
    assert outcome.as_text() == "Cancelled"
    assert isinstance(events[-1], TurnEnded)


async def test_cancel_while_concurrent_read_only_tools_run_cancels_them_all() -> None:
    ready = {"a": anyio.Event(), "b": anyio.Event()}
    saw_cancel: list[str] = []

    def make(name: str) -> Any:
        @tool(name=name, read_only=True)
        async def waiting(call: Call) -> str:
            ready[name].set()
            try:
                await anyio.sleep_forever()
            finally:
                if call.is_cancelled():
                    saw_cancel.append(name)
            return "never"

        return waiting

    model = FakeModel([Reply(tool_calls=[("a", {}), ("b", {})])])
    run = Run(model, Tools(make("a"), make("b")))

    async def consume() -> None:
        await drive(run, Message.user("go"))

    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await ready["a"].wait()
            await ready["b"].wait()
            run.cancel()
    assert sorted(saw_cancel) == ["a", "b"]
    assert ended(run).reason is EndReason.CANCELLED


async def test_leaving_the_block_with_break_cancels_and_stops_the_events() -> None:
    model = ScriptModel([[TextChunk("a"), TextChunk("b")]], hang=True)
    run = Run(model, Tools())
    events: list[Any] = []
    with anyio.fail_after(LIMIT_S):
        async with run.turn(Message.user("hi")) as stream:
            async for event in stream:
                events.append(event)
                if isinstance(event, TextDelta):
                    break
    assert isinstance(events[-1], TextDelta)
    assert ended(run).reason is EndReason.CANCELLED
    assert not run.is_running()
    assert run.messages() == [Message.user("hi")]


async def test_an_exception_in_the_block_cancels_the_turn_and_propagates() -> None:
    model = FakeModel([Reply(text="Hel", hang=True)])
    run = Run(model, Tools())
    with anyio.fail_after(LIMIT_S), pytest.raises(KeyError):
        async with run.turn(Message.user("hi")) as stream:
            async for event in stream:
                if isinstance(event, TextDelta):
                    raise KeyError("consumer bug")
    assert ended(run).reason is EndReason.CANCELLED
    assert not run.is_running()


async def test_leaving_the_block_while_a_tool_runs_cancels_the_tool() -> None:
    cancelled: list[bool] = []

    @tool
    async def block(call: Call) -> str:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.append(call.is_cancelled())
        return "never"

    model = FakeModel([Reply(tool_calls=[("block", {})])])
    run = Run(model, Tools(block))
    with anyio.fail_after(LIMIT_S):
        async with run.turn(Message.user("go")) as stream:
            async for event in stream:
                if isinstance(event, ToolCallReady):
                    break
    assert ended(run).reason is EndReason.CANCELLED
    # The tool either never started or was cancelled; it never finished normally.
    assert cancelled in ([], [True])


async def test_leaving_the_block_before_iterating_does_not_run_the_turn() -> None:
    model = FakeModel([Reply(text="never")])
    run = Run(model, Tools())
    with anyio.fail_after(LIMIT_S):
        async with run.turn(Message.user("hi")):
            assert not run.is_running()
    assert model.calls == 0
    assert not run.is_running()


async def test_cancel_with_no_turn_running_does_nothing() -> None:
    model = FakeModel([Reply(text="one"), Reply(text="two")])
    run = Run(model, Tools())
    run.cancel()
    await drive(run, Message.user("a"))
    assert ended(run).reason is EndReason.DONE
    run.cancel()
    assert ended(run).reason is EndReason.DONE
    await drive(run, Message.user("b"))
    assert ended(run).reason is EndReason.DONE
    assert run.messages()[-1].text == "two"


async def test_a_turn_after_a_cancelled_one_runs_normally() -> None:
    model = FakeModel([Reply(text="Hel", hang=True), Reply(text="Hello again")])
    run = Run(model, Tools())

    def on_event(event: Any) -> None:
        if isinstance(event, TextDelta):
            run.cancel()

    await drive(run, Message.user("one"), on_event)
    assert ended(run).reason is EndReason.CANCELLED
    await drive(run, Message.user("two"))
    assert ended(run).reason is EndReason.DONE
    assert [m.text for m in run.messages()] == ["one", "two", "Hello again"]
