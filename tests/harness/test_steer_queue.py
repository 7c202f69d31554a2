"""interject(): a steer lands at the next step boundary and skips unstarted calls; a queue runs one step each."""

from __future__ import annotations

from typing import Any

import pytest

from harness import (
    Approval,
    Call,
    Delivery,
    EndReason,
    ErrorKind,
    HarnessUsageError,
    Message,
    Result,
    Run,
    Tools,
    tool,
)
from harness.events import Interjected, MessageStarted, TextDelta, ToolEnded, TurnEnded, TurnStarted
from harness.testing import FakeModel, Reply
from tests.harness.run_support import all_results, assert_paired, drive, ended, of

pytestmark = pytest.mark.anyio

SKIPPED = "Skipped: the user sent a message"


def test_interject_with_no_turn_running_is_a_usage_error() -> None:
    run = Run(FakeModel([]), Tools())
    with pytest.raises(HarnessUsageError):
        run.interject(Message.user("hello"))
    with pytest.raises(HarnessUsageError):
        run.interject(Message.user("hello"), Delivery.QUEUE)


async def test_a_steer_skips_the_calls_not_started_and_lands_before_the_next_model_call() -> None:
    steer = Message.user("Stop, do B instead")
    ran: list[str] = []
    holder: dict[str, Run] = {}

    @tool
    def first() -> str:
        ran.append("first")
        holder["run"].interject(steer)  # the default delivery is a steer
        return "first done"

    @tool
    def second() -> str:
        ran.append("second")
        return "second done"

    model = FakeModel(
        [
            Reply(tool_calls=[("first", {}, "c1"), ("second", {}, "c2"), ("second", {}, "c3")]),
            Reply(text="OK, B."),
        ]
    )
    run = Run(model, Tools(first, second))
    holder["run"] = run
    events = await drive(run, Message.user("do A"))

    assert ran == ["first"]
    results = all_results(run.messages())
    assert (results["c1"].text, results["c1"].error) == ("first done", False)
    for cid in ("c2", "c3"):
        assert (results[cid].text, results[cid].error) == (SKIPPED, True)
    assert_paired(run.messages())

    # The steer is the last message the model saw, after the step's results.
    prompt = model.prompts[1]
    assert prompt.messages[-1] == steer
    assert [r.call_id for r in prompt.messages[-2].tool_results] == ["c1", "c2", "c3"]

    interjected = of(events, Interjected)
    assert len(interjected) == 1
    assert interjected[0].message == steer
    assert interjected[0].delivery is Delivery.STEER
    at = events.index(interjected[0])
    last_tool_end = max(i for i, e in enumerate(events) if isinstance(e, ToolEnded))
    second_message = [i for i, e in enumerate(events) if isinstance(e, MessageStarted)][1]
    assert last_tool_end < at < second_message
    assert ended(run).reason is EndReason.DONE
    assert ended(run).queued == ()


async def test_a_steer_does_not_let_a_reply_without_tool_calls_end_the_turn() -> None:
    steer = Message.user("Also mention the weather")
    model = FakeModel([Reply(text="Hello"), Reply(text="It is sunny")])
    run = Run(model, Tools())
    sent: list[bool] = []

    def on_event(event: Any) -> None:
        if isinstance(event, TextDelta) and not sent:
            sent.append(True)
            run.interject(steer, Delivery.STEER)

    events = await drive(run, Message.user("hi"), on_event)
    assert model.calls == 2
    assert model.prompts[1].messages[-1] == steer
    assert model.prompts[1].messages[-2].text == "Hello"
    assert [e.delivery for e in of(events, Interjected)] == [Delivery.STEER]
    assert ended(run).reason is EndReason.DONE
    assert run.messages()[-1].text == "It is sunny"


async def test_a_queued_message_waits_until_the_turn_would_end_done_then_runs_one_step() -> None:
    later = Message.user("Then summarise")

    @tool(read_only=True)
    def clock() -> str:
        return "12:00"

    model = FakeModel([Reply(tool_calls=[("clock", {})]), Reply(text="Noon."), Reply(text="Summary: noon.")])
    run = Run(model, Tools(clock))
    sent: list[bool] = []

    def on_event(event: Any) -> None:
        if isinstance(event, TurnStarted):
            run.interject(later, Delivery.QUEUE)
            sent.append(True)

    events = await drive(run, Message.user("time?"), on_event)
    assert sent == [True]
    assert model.calls == 3
    assert later not in model.prompts[1].messages
    assert model.prompts[2].messages[-1] == later
    assert model.prompts[2].messages[-2].text == "Noon."
    interjected = of(events, Interjected)
    assert [(e.message, e.delivery) for e in interjected] == [(later, Delivery.QUEUE)]
    assert ended(run).reason is EndReason.DONE
    assert run.messages()[-1].text == "Summary: noon."


async def test_several_queued_messages_land_in_order_one_step_each() -> None:
    q1, q2 = Message.user("first follow-up"), Message.user("second follow-up")
    model = FakeModel([Reply(text="a"), Reply(text="b"), Reply(text="c")])
    run = Run(model, Tools())

    def on_event(event: Any) -> None:
        if isinstance(event, TurnStarted):
            run.interject(q1, Delivery.QUEUE)
            run.interject(q2, Delivery.QUEUE)

    events = await drive(run, Message.user("go"), on_event)
    assert model.calls == 3
    assert model.prompts[1].messages[-1] == q1
    assert q2 not in model.prompts[1].messages
    assert model.prompts[2].messages[-1] == q2
    assert [e.message for e in of(events, Interjected)] == [q1, q2]
    assert [m.text for m in run.messages()] == ["go", "a", "first follow-up", "b", "second follow-up", "c"]
    assert ended(run).queued == ()


async def test_messages_that_could_not_land_are_in_queued_steering_ones_first() -> None:
    s1, q1, q2 = Message.user("steer"), Message.user("queue 1"), Message.user("queue 2")
    model = FakeModel([Reply(text="par", error=ErrorKind.RATE_LIMITED)])
    run = Run(model, Tools())

    def on_event(event: Any) -> None:
        if isinstance(event, TextDelta):
            run.interject(q1, Delivery.QUEUE)
            run.interject(s1, Delivery.STEER)
            run.interject(q2, Delivery.QUEUE)

    events = await drive(run, Message.user("go"), on_event)
    e = ended(run)
    assert e.reason is EndReason.FAILED
    assert e.queued == (s1, q1, q2)
    assert of(events, Interjected) == []
    assert all(m not in run.messages() for m in (s1, q1, q2))


async def test_a_pause_leaves_interjected_messages_in_queued() -> None:
    s1, q1 = Message.user("steer"), Message.user("queue")
    holder: dict[str, Run] = {}

    @tool
    def ask(call: Call) -> Result:
        holder["run"].interject(q1, Delivery.QUEUE)
        holder["run"].interject(s1, Delivery.STEER)
        return call.needs_input([Approval("ok?")])

    run = Run(FakeModel([Reply(tool_calls=[("ask", {})])]), Tools(ask))
    holder["run"] = run
    await drive(run, Message.user("go"))
    e = ended(run)
    assert e.reason is EndReason.AWAITING_INPUT
    assert e.queued == (s1, q1)


async def test_a_cancelled_turn_leaves_interjected_messages_in_queued() -> None:
    steer = Message.user("steer")
    run = Run(FakeModel([Reply(text="abc", hang=True)]), Tools())

    def on_event(event: Any) -> None:
        if isinstance(event, TextDelta):
            run.interject(steer)
            run.cancel()

    events = await drive(run, Message.user("go"), on_event)
    assert isinstance(events[-1], TurnEnded)
    assert ended(run).reason is EndReason.CANCELLED
    assert ended(run).queued == (steer,)


async def test_a_steer_waiting_while_the_queue_waits_lands_first() -> None:
    steer, later = Message.user("steer"), Message.user("later")
    model = FakeModel([Reply(text="a"), Reply(text="b"), Reply(text="c")])
    run = Run(model, Tools())

    def on_event(event: Any) -> None:
        if isinstance(event, TurnStarted):
            run.interject(later, Delivery.QUEUE)
            run.interject(steer, Delivery.STEER)

    events = await drive(run, Message.user("go"), on_event)
    assert [(e.message, e.delivery) for e in of(events, Interjected)] == [
        (steer, Delivery.STEER),
        (later, Delivery.QUEUE),
    ]
    assert model.prompts[1].messages[-1] == steer
    assert model.prompts[2].messages[-1] == later
    assert ended(run).reason is EndReason.DONE


async def test_a_steer_that_landed_survives_a_failure_of_the_next_step() -> None:
    steer = Message.user("Stop, do B instead")
    holder: dict[str, Run] = {}

    @tool
    def first() -> str:
        holder["run"].interject(steer)
        return "first done"

    model = FakeModel(
        [Reply(tool_calls=[("first", {}, "c1")]), Reply(text="par", error=ErrorKind.RATE_LIMITED)]
    )
    run = Run(model, Tools(first))
    holder["run"] = run
    events = await drive(run, Message.user("do A"))

    assert ended(run).reason is EndReason.FAILED
    assert [e.message for e in of(events, Interjected)] == [steer]
    # The user saw it delivered, so it is part of the conversation, not lost with the failed step.
    assert run.messages()[-1] == steer
    assert ended(run).queued == ()
