"""Every row of the end-reason table: Done, Stopped, AwaitingInput, Cancelled, Interrupted, Failed (each kind)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import anyio
import pytest

from harness import (
    Approval,
    Call,
    EndReason,
    ErrorKind,
    FinishReason,
    HarnessUsageError,
    Message,
    ModelError,
    Options,
    Result,
    Retry,
    Run,
    Tools,
    UnsupportedOptionError,
    max_steps,
    tool,
)
from harness._step_tools import ENDED_TEXT
from harness.events import MessageEnded, TextDelta, ToolEnded, TurnEnded
from harness.events import from_dict as events_from_dict
from harness.middleware import NextModel
from harness.model import Delta, Prompt
from harness.testing import FakeModel, Reply
from tests.harness.run_support import drive, ended, of, results_of

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def clock() -> str:
    return "12:00"


@tool
def ask(call: Call) -> Result:
    if call.decision() is None:
        return call.needs_input([Approval("May I?")])
    return Result.text("asked")


@tool
def retry_me() -> str:
    raise Retry("try again")


@tool
def misused() -> str:
    raise HarnessUsageError("this tool is used wrongly")


def turn_ended(events: list[Any]) -> TurnEnded:
    assert isinstance(events[-1], TurnEnded), f"last event is {events[-1]!r}"
    return events[-1]


async def test_a_reply_without_tool_calls_ends_the_turn_done_with_finish_stop() -> None:
    model = FakeModel([Reply(text="Hello")])
    run = Run(model, Tools(clock))
    events = await drive(run, Message.user("hi"))
    e = ended(run)
    assert e.reason is EndReason.DONE
    assert e.finish is FinishReason.STOP
    assert e.error is None and e.error_kind is None
    assert turn_ended(events).reason is EndReason.DONE
    assert turn_ended(events).finish is FinishReason.STOP
    assert run.messages()[-1].text == "Hello"
    assert e.appended[-1].text == "Hello"


async def test_a_tool_loop_ends_done_once_a_step_has_no_tool_calls() -> None:
    model = FakeModel([Reply(tool_calls=[("clock", {})]), Reply(text="It is noon")])
    run = Run(model, Tools(clock))
    await drive(run, Message.user("time?"))
    assert ended(run).reason is EndReason.DONE
    assert model.calls == 2
    assert run.messages()[-1].text == "It is noon"


@pytest.mark.parametrize("finish", [FinishReason.LENGTH, FinishReason.REFUSAL, FinishReason.CONTENT_FILTER])
async def test_a_reply_cut_or_refused_is_still_done_with_its_finish(finish: FinishReason) -> None:
    model = FakeModel([Reply(text="Partial answ", finish=finish)])
    run = Run(model, Tools())
    events = await drive(run, Message.user("hi"))
    e = ended(run)
    assert e.reason is EndReason.DONE
    assert e.finish is finish
    assert turn_ended(events).finish is finish
    assert of(events, MessageEnded)[-1].finish is finish


async def test_the_finish_is_the_last_assistant_messages() -> None:
    model = FakeModel([Reply(tool_calls=[("clock", {})]), Reply(text="cut", finish="length")])
    run = Run(model, Tools(clock))
    await drive(run, Message.user("hi"))
    assert ended(run).finish is FinishReason.LENGTH


async def test_a_stop_predicate_ends_the_turn_stopped() -> None:
    model = FakeModel([Reply(tool_calls=[("clock", {})]) for _ in range(5)])
    run = Run(model, Tools(clock), options=Options(stop=(max_steps(2),)))
    events = await drive(run, Message.user("loop"))
    e = ended(run)
    assert e.reason is EndReason.STOPPED
    assert turn_ended(events).reason is EndReason.STOPPED
    assert model.calls == 2
    # Both steps are complete: their calls have results.
    assert len([m for m in run.messages() if m.tool_results]) == 2


@tool
def halting() -> Result:
    return replace(Result.text("done, and that is all"), ends_turn=True)


@tool
def writes() -> str:
    WRITTEN.append("ran")
    return "written"


WRITTEN: list[str] = []


async def test_a_result_that_ends_the_turn_ends_it_done_after_its_step_which_is_kept() -> None:
    model = FakeModel([Reply(tool_calls=[("halting", {})]), Reply(text="never asked")])
    run = Run(model, Tools(halting))
    events = await drive(run, Message.user("go"))
    e = ended(run)
    assert e.reason is EndReason.DONE and turn_ended(events).reason is EndReason.DONE
    assert e.finish is FinishReason.TOOL_CALLS
    assert model.calls == 1, "no step after the one whose call ended the turn"
    assert results_of(run.messages()[-1]) == [
        (run.messages()[-2].tool_calls[0].id, "done, and that is all", False)
    ]
    (end,) = of(events, ToolEnded)
    again = events_from_dict(end.to_dict())
    assert isinstance(again, ToolEnded) and isinstance(again.outcome, Result) and again.outcome.ends_turn


async def test_calls_of_the_step_not_started_when_one_ends_the_turn_are_not_run_but_answered() -> None:
    WRITTEN.clear()
    model = FakeModel([Reply(tool_calls=[("halting", {}), ("writes", {})])])
    run = Run(model, Tools(halting, writes))
    await drive(run, Message.user("go"))
    assert ended(run).reason is EndReason.DONE and WRITTEN == []
    texts = [text for _, text, _ in results_of(run.messages()[-1])]
    assert texts == ["done, and that is all", ENDED_TEXT]  # every call of the step has its result


async def test_a_result_that_does_not_end_the_turn_keeps_its_shape() -> None:
    assert "ends_turn" not in Result.text("x").to_dict()
    assert Result.from_dict(Result.text("x").to_dict()) == Result.text("x")


async def test_the_default_stop_is_twenty_steps() -> None:
    model = FakeModel([Reply(tool_calls=[("clock", {})]) for _ in range(25)])
    run = Run(model, Tools(clock))
    await drive(run, Message.user("loop"))
    assert ended(run).reason is EndReason.STOPPED
    assert model.calls == 20


async def test_a_custom_stop_predicate_sees_the_steps_so_far() -> None:
    seen: list[int] = []

    def after_three(ctx: Any) -> bool:
        seen.append(ctx.steps)
        return ctx.steps >= 3

    model = FakeModel([Reply(tool_calls=[("clock", {})]) for _ in range(5)])
    run = Run(model, Tools(clock), options=Options(stop=(after_three,)))
    await drive(run, Message.user("loop"))
    assert ended(run).reason is EndReason.STOPPED
    assert seen == [1, 2, 3]


async def test_a_tool_asking_the_host_ends_the_turn_awaiting_input() -> None:
    model = FakeModel([Reply(tool_calls=[("ask", {}, "call_a")])])
    run = Run(model, Tools(ask))
    events = await drive(run, Message.user("go"))
    e = ended(run)
    assert e.reason is EndReason.AWAITING_INPUT
    assert [p.call.id for p in e.pending] == ["call_a"]
    assert e.pending[0].needs == (Approval("May I?"),)
    assert turn_ended(events).reason is EndReason.AWAITING_INPUT


async def test_cancel_ends_the_turn_cancelled() -> None:
    model = FakeModel([Reply(text="Hel", hang=True)])
    run = Run(model, Tools())

    def on_event(event: Any) -> None:
        if isinstance(event, TextDelta):
            run.cancel()

    events = await drive(run, Message.user("hi"), on_event)
    assert ended(run).reason is EndReason.CANCELLED
    assert turn_ended(events).reason is EndReason.CANCELLED


async def test_leaving_the_block_early_ends_the_turn_cancelled() -> None:
    model = FakeModel([Reply(text="Hel", hang=True)])
    run = Run(model, Tools())
    with anyio.fail_after(5):
        async with run.turn(Message.user("hi")) as events:
            async for event in events:
                if isinstance(event, TextDelta):
                    break
    assert ended(run).reason is EndReason.CANCELLED
    assert not run.is_running()


async def test_interrupt_ends_the_turn_interrupted_with_the_partial() -> None:
    model = FakeModel([Reply(text="One. Two.", hang=True)])
    run = Run(model, Tools())

    def on_event(event: Any) -> None:
        if isinstance(event, TextDelta):
            run.interrupt()

    events = await drive(run, Message.user("count"), on_event)
    e = ended(run)
    assert e.reason is EndReason.INTERRUPTED
    assert turn_ended(events).reason is EndReason.INTERRUPTED
    assert e.partial is not None
    assert e.partial.text == "One. Two."
    assert e.finish is None


@pytest.mark.parametrize(
    "kind",
    [ErrorKind.MODEL_ERROR, ErrorKind.CONTEXT_TOO_LONG, ErrorKind.RATE_LIMITED, ErrorKind.TRANSPORT_ERROR],
)
async def test_a_model_error_ends_the_turn_failed_with_its_kind(kind: ErrorKind) -> None:
    error = ModelError("scripted", kind, retry_after=1.5)
    model = FakeModel([Reply(error=error)])
    run = Run(model, Tools())
    events = await drive(run, Message.user("hi"))
    e = ended(run)
    assert e.reason is EndReason.FAILED
    assert e.error_kind is kind
    assert e.error is error
    assert turn_ended(events).reason is EndReason.FAILED
    assert turn_ended(events).error is error


async def test_any_other_model_exception_ends_the_turn_failed_as_model_error() -> None:
    boom = RuntimeError("socket closed")
    run = Run(FakeModel([Reply(text="par", error=boom)]), Tools())
    await drive(run, Message.user("hi"))
    e = ended(run)
    assert e.reason is EndReason.FAILED
    assert e.error_kind is ErrorKind.MODEL_ERROR
    assert e.error is boom


async def test_too_many_tool_retries_end_the_turn_failed_tool_retries_exceeded() -> None:
    model = FakeModel([Reply(tool_calls=[("retry_me", {})]) for _ in range(5)])
    run = Run(model, Tools(retry_me), options=Options(tool_retries=1))
    await drive(run, Message.user("go"))
    e = ended(run)
    assert e.reason is EndReason.FAILED
    assert e.error_kind is ErrorKind.TOOL_RETRIES_EXCEEDED
    assert model.calls == 2


class Broken:
    """A model middleware that fails by itself."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        raise self.error
        yield  # pragma: no cover - makes this an async generator


async def test_a_middleware_exception_ends_the_turn_failed_middleware_error() -> None:
    boom = RuntimeError("middleware bug")
    run = Run(FakeModel([Reply(text="never")]), Tools(), middleware=[Broken(boom)])
    await drive(run, Message.user("hi"))
    e = ended(run)
    assert e.reason is EndReason.FAILED
    assert e.error_kind is ErrorKind.MIDDLEWARE_ERROR
    assert e.error is boom


async def test_a_tool_misuse_ends_the_turn_failed_tool_error_and_is_raised_after_turn_ended() -> None:
    run = Run(FakeModel([Reply(tool_calls=[("misused", {})])]), Tools(misused))
    events: list[Any] = []
    with pytest.raises(HarnessUsageError, match="used wrongly"):
        await drive(run, Message.user("go"), events.append)
    assert isinstance(events[-1], TurnEnded)
    assert events[-1].reason is EndReason.FAILED
    e = ended(run)
    assert e.reason is EndReason.FAILED
    assert e.error_kind is ErrorKind.TOOL_ERROR
    assert isinstance(e.error, HarnessUsageError)


async def test_a_model_misuse_ends_the_turn_failed_model_error_and_is_raised() -> None:
    unsupported = UnsupportedOptionError("cannot continue; append the edit instead")
    run = Run(FakeModel([Reply(error=unsupported)]), Tools())
    events: list[Any] = []
    with pytest.raises(UnsupportedOptionError):
        await drive(run, Message.user("go"), events.append)
    assert isinstance(events[-1], TurnEnded)
    e = ended(run)
    assert e.reason is EndReason.FAILED
    assert e.error_kind is ErrorKind.MODEL_ERROR
    assert e.error is unsupported


async def test_a_middleware_misuse_ends_the_turn_failed_middleware_error_and_is_raised() -> None:
    misuse = HarnessUsageError("middleware misused")
    run = Run(FakeModel([Reply(text="never")]), Tools(), middleware=[Broken(misuse)])
    events: list[Any] = []
    with pytest.raises(HarnessUsageError, match="middleware misused"):
        await drive(run, Message.user("go"), events.append)
    assert isinstance(events[-1], TurnEnded)
    e = ended(run)
    assert e.reason is EndReason.FAILED
    assert e.error_kind is ErrorKind.MIDDLEWARE_ERROR
    assert e.error is misuse
