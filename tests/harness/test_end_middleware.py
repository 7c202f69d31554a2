"""EndMiddleware: a reply that would end the turn is put to it; its message makes the turn go on."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from harness import Delivery, EndReason, ErrorKind, HarnessUsageError, Message, Run, Tools
from harness.events import Interjected, StepEnded, TurnEnded
from harness.middleware import TurnEnding
from harness.testing import FakeModel, Reply
from tests.harness.run_support import LIMIT_S, drive, ended, of

pytestmark = pytest.mark.anyio


class GoOn:
    """Keeps the turn going ``times`` times, recording what it was asked."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.asked: list[TurnEnding] = []

    async def before_end(self, ending: TurnEnding) -> Message | None:
        self.asked.append(ending)
        if ending.continued >= self.times:
            return None
        return Message.user(f"go on #{ending.continued + 1}")


async def test_an_end_middleware_that_answers_none_lets_the_first_reply_without_calls_end_the_turn() -> None:
    run = Run(FakeModel([Reply(text="done")]), Tools(), middleware=[GoOn(0)])
    await drive(run, Message.user("hi"))
    assert ended(run).reason is EndReason.DONE
    assert [m.text for m in run.messages()] == ["hi", "done"]


async def test_the_middlewares_message_makes_the_turn_go_on_once_then_it_ends_done() -> None:
    model = FakeModel([Reply(text="first"), Reply(text="second")])
    mw = GoOn(1)
    run = Run(model, Tools(), middleware=[mw])
    events = await drive(run, Message.user("hi"))
    assert [m.text for m in run.messages()] == ["hi", "first", "go on #1", "second"]
    assert model.prompts[1].messages[-1].text == "go on #1"
    assert [(a.message.text, a.continued, a.step) for a in mw.asked] == [("first", 0, 1), ("second", 1, 2)]
    [landed] = of(events, Interjected)
    assert landed.delivery is Delivery.CONTINUE and landed.message.text == "go on #1"
    # The reply is a complete step (persisted) before the middleware is asked.
    assert events.index(of(events, StepEnded)[0]) < events.index(landed)
    assert ended(run).reason is EndReason.DONE
    assert [m.text for m in ended(run).appended] == ["hi", "first", "go on #1", "second"]


async def test_the_turn_goes_on_twice_and_the_count_starts_again_with_the_next_turn() -> None:
    model = FakeModel([Reply(text=t) for t in "abcdef"])
    mw = GoOn(2)
    run = Run(model, Tools(), middleware=[mw])
    await drive(run, Message.user("one"))
    assert [m.text for m in run.messages()] == ["one", "a", "go on #1", "b", "go on #2", "c"]
    assert ended(run).reason is EndReason.DONE
    await drive(run, Message.user("two"))
    assert [m.text for m in run.messages()][-3:] == ["e", "go on #2", "f"]
    assert [a.continued for a in mw.asked] == [0, 1, 2, 0, 1, 2], "each turn counts from zero"
    assert ended(run).reason is EndReason.DONE


async def test_the_runs_step_limit_still_ends_a_turn_that_a_middleware_keeps_going() -> None:
    from harness import Options, max_steps

    model = FakeModel([Reply(text=f"r{i}") for i in range(5)])
    run = Run(model, Tools(), middleware=[GoOn(100)], options=Options(stop=(max_steps(3),)))
    await drive(run, Message.user("hi"))
    assert ended(run).reason is EndReason.STOPPED
    assert model.calls == 3


async def test_the_first_middleware_that_answers_wins_and_the_later_ones_are_asked_only_when_it_does_not() -> (
    None
):
    first, second = GoOn(1), GoOn(2)
    run = Run(FakeModel([Reply(text=t) for t in "abc"]), Tools(), middleware=[first, second])
    await drive(run, Message.user("hi"))
    assert [m.text for m in run.messages()] == ["hi", "a", "go on #1", "b", "go on #2", "c"]
    assert [a.continued for a in first.asked] == [0, 1, 2]
    assert [a.continued for a in second.asked] == [1, 2]
    assert ended(run).reason is EndReason.DONE


class Waits:
    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = False

    async def before_end(self, ending: TurnEnding) -> Message | None:
        self.started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        return None


async def test_cancel_while_the_middleware_runs_ends_the_turn_cancelled_at_once_keeping_the_reply() -> None:
    mw = Waits()
    run = Run(FakeModel([Reply(text="the reply")]), Tools(), middleware=[mw])
    events: list[Any] = []
    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as tg:

            async def cancel_when_asked() -> None:
                await mw.started.wait()
                run.cancel()

            tg.start_soon(cancel_when_asked)
            async with run.turn(Message.user("hi")) as stream:
                async for event in stream:
                    events.append(event)
    assert mw.cancelled
    assert ended(run).reason is EndReason.CANCELLED
    assert of(events, TurnEnded)[0].reason is EndReason.CANCELLED
    assert [m.text for m in run.messages()] == ["hi", "the reply"], "the complete step stays"


async def test_cancel_while_the_continuation_streams_ends_cancelled_and_drops_only_that_step() -> None:
    model = FakeModel([Reply(text="first"), Reply(text="second, cut", hang=True)])
    run = Run(model, Tools(), middleware=[GoOn(1)])

    def on_event(event: Any) -> None:
        if getattr(event, "text", None) == "second, cut":
            run.cancel()

    await drive(run, Message.user("hi"), on_event)
    assert ended(run).reason is EndReason.CANCELLED
    assert [m.text for m in run.messages()] == ["hi", "first", "go on #1"]


class Broken:
    def __init__(self, answer: Message | None = None) -> None:
        self.answer = answer

    async def before_end(self, ending: TurnEnding) -> Message | None:
        if self.answer is None:
            raise RuntimeError("the middleware broke")
        return self.answer


async def test_a_middleware_that_raises_fails_the_turn_and_the_reply_is_kept() -> None:
    run = Run(FakeModel([Reply(text="kept")]), Tools(), middleware=[Broken()])
    await drive(run, Message.user("hi"))
    assert ended(run).reason is EndReason.FAILED
    assert ended(run).error_kind is ErrorKind.MIDDLEWARE_ERROR
    assert [m.text for m in run.messages()] == ["hi", "kept"]


async def test_a_middleware_that_answers_with_an_assistant_message_is_a_usage_error() -> None:
    wrong = Message.assistant("not a user message")
    run = Run(FakeModel([Reply(text="kept")]), Tools(), middleware=[Broken(wrong)])
    with pytest.raises(HarnessUsageError):
        await drive(run, Message.user("hi"))
    assert ended(run).reason is EndReason.FAILED
