"""The shape of a turn: event order, ids, turn numbers, prompts, usage, messages(), fork(), misuse."""

from __future__ import annotations

import re
from typing import Any

import anyio
import pytest

from harness import (
    EndReason,
    HarnessUsageError,
    Message,
    Options,
    Role,
    Run,
    ToolCall,
    Tools,
    Usage,
    tool,
)
from harness.events import (
    MessageEnded,
    MessageStarted,
    ReasoningDelta,
    StepEnded,
    StepStarted,
    TextDelta,
    ToolCallReady,
    ToolCallStarted,
    ToolEnded,
    ToolInputDelta,
    TurnEnded,
)
from harness.testing import FakeModel, Reply
from tests.harness.run_support import LIMIT_S, assert_paired, drive, ended, of, types

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def clock(tz: str = "UTC") -> str:
    return f"12:00 {tz}"


async def test_a_tool_step_then_a_text_step_emit_events_in_the_designs_order() -> None:
    model = FakeModel(
        [Reply(text="Let me look.", tool_calls=[("clock", {"tz": "CET"}, "c1")]), Reply(text="Noon.")]
    )
    run = Run(model, Tools(clock))
    events = await drive(run, Message.user("time?"))
    assert types(events) == [
        "turn_started",
        "step_started",
        "message_started",
        "text_delta",
        "tool_call_started",
        "tool_input_delta",
        "tool_call_ready",
        "message_ended",
        "tool_ended",
        "step_ended",
        "step_started",
        "message_started",
        "text_delta",
        "message_ended",
        "step_ended",
        "turn_ended",
    ]
    assert [e.n for e in of(events, StepStarted)] == [1, 2]
    assert [e.n for e in of(events, StepEnded)] == [1, 2]
    assert all(e.turn == 1 and e.parent is None for e in events)


async def test_deltas_carry_the_message_id_and_tool_events_the_call_id() -> None:
    model = FakeModel(
        [
            Reply(reasoning="hmm", text="ok", tool_calls=[("clock", {"tz": "CET"}, "c1")], chunks=2),
            Reply(text="x"),
        ]
    )
    run = Run(model, Tools(clock))
    events = await drive(run, Message.user("time?"))
    first = of(events, MessageStarted)[0].id
    assert re.fullmatch(r"msg_[0-9a-f]+", first)
    assert of(events, MessageStarted)[1].id != first
    assert "".join(e.text for e in of(events, ReasoningDelta)) == "hmm"
    assert all(e.id == first for e in of(events, ReasoningDelta))
    first_end = events.index(of(events, MessageEnded)[0])
    assert all(e.id == first for e in of(events[:first_end], TextDelta))
    assert [(e.id, e.name) for e in of(events, ToolCallStarted)] == [("c1", "clock")]
    assert "".join(e.json for e in of(events, ToolInputDelta) if e.id == "c1") == '{"tz": "CET"}'
    ready = of(events, ToolCallReady)[0]
    assert (ready.id, ready.name, ready.input) == ("c1", "clock", {"tz": "CET"})
    ended_event = of(events, ToolEnded)[0]
    assert ended_event.id == "c1"


async def test_message_ended_carries_the_assistant_message_as_appended() -> None:
    usage = Usage(100, 20, 5, 1)
    model = FakeModel([Reply(reasoning="r", text="Hello", usage=usage)])
    run = Run(model, Tools())
    events = await drive(run, Message.user("hi"))
    me = of(events, MessageEnded)[0]
    assert me.id == of(events, MessageStarted)[0].id
    assert me.usage == usage
    assert me.message.role is Role.ASSISTANT
    assert me.message.text == "Hello"
    assert me.message.reasoning == "r"
    assert me.message.id == me.id
    assert run.messages()[-1] == me.message


async def test_the_prompt_holds_system_messages_tools_and_options() -> None:
    options = Options(max_output_tokens=200, temperature=0.2)
    model = FakeModel([Reply(tool_calls=[("clock", {}, "c1")]), Reply(text="Noon.")])
    history = [Message.user("earlier"), Message.assistant("before")]
    run = Run(model, Tools(clock), system="Be brief.", options=options, messages=history)
    await drive(run, Message.user("time?"))
    first, second = model.prompts
    assert first.system == "Be brief."
    assert first.options == options
    assert [t.name for t in first.tools] == ["clock"]
    assert list(first.messages) == [*history, Message.user("time?")]
    assert first.continue_ is False
    assert second.messages[-2].tool_calls == [ToolCall("c1", "clock", {})]
    assert [(r.call_id, r.text) for r in second.messages[-1].tool_results] == [("c1", "12:00 UTC")]


async def test_each_step_appends_the_assistant_message_and_one_results_message() -> None:
    model = FakeModel(
        [
            Reply(tool_calls=[("clock", {"tz": "A"}, "c1"), ("clock", {"tz": "B"}, "c2")]),
            Reply(tool_calls=[("clock", {}, "c3")]),
            Reply(text="done"),
        ]
    )
    run = Run(model, Tools(clock))
    await drive(run, Message.user("go"))
    messages = run.messages()
    assert [m.role for m in messages] == [
        Role.USER,
        Role.ASSISTANT,
        Role.USER,
        Role.ASSISTANT,
        Role.USER,
        Role.ASSISTANT,
    ]
    assert [r.text for r in messages[2].tool_results] == ["12:00 A", "12:00 B"]
    assert_paired(messages)
    assert list(ended(run).appended) == messages


async def test_the_turn_number_counts_turns_of_this_run() -> None:
    model = FakeModel([Reply(text="1"), Reply(text="2"), Reply(text="3")])
    run = Run(model, Tools())
    for n in (1, 2, 3):
        events = await drive(run, Message.user(str(n)))
        assert {e.turn for e in events} == {n}


async def test_ended_usage_sums_the_turns_assistant_messages() -> None:
    model = FakeModel(
        [
            Reply(tool_calls=[("clock", {})], usage=Usage(10, 5, 1, 0)),
            Reply(text="done", usage=Usage(20, 7, 3, 2)),
        ]
    )
    run = Run(model, Tools(clock))
    events = await drive(run, Message.user("go"))
    assert ended(run).usage == Usage(30, 12, 4, 2)
    assert isinstance(events[-1], TurnEnded)
    assert events[-1].usage == Usage(30, 12, 4, 2)


async def test_messages_returns_a_copy() -> None:
    run = Run(FakeModel([Reply(text="hi")]), Tools())
    await drive(run, Message.user("x"))
    copy = run.messages()
    copy.clear()
    assert len(run.messages()) == 2


async def test_fork_copies_the_conversation_and_starts_its_turns_at_one() -> None:
    model = FakeModel([Reply(text="first"), Reply(text="forked"), Reply(text="original")])
    run = Run(model, Tools(clock), system="sys")
    await drive(run, Message.user("a"))
    fork = run.fork()
    assert fork.messages() == run.messages()
    assert fork.ended() is None
    events = await drive(fork, Message.user("to the fork"))
    assert {e.turn for e in events} == {1}
    assert fork.messages()[-1].text == "forked"
    assert len(run.messages()) == 2
    assert model.prompts[1].system == "sys"
    await drive(run, Message.user("to the original"))
    assert run.messages()[-1].text == "original"
    assert "to the fork" not in [m.text for m in run.messages()]


async def test_a_second_turn_while_one_runs_is_a_usage_error() -> None:
    model = FakeModel([Reply(text="abc", chunks=3), Reply(text="x")])
    run = Run(model, Tools())
    errors: list[BaseException] = []
    with anyio.fail_after(LIMIT_S):
        async with run.turn(Message.user("one")) as stream:
            async for event in stream:
                if isinstance(event, TextDelta) and not errors:
                    try:
                        run.turn(Message.user("two"))
                    except HarnessUsageError as e:
                        errors.append(e)
    assert len(errors) == 1
    assert ended(run).reason is EndReason.DONE


async def test_a_turn_accepts_a_user_message_only_as_its_input() -> None:
    run = Run(FakeModel([Reply(text="x")]), Tools())
    with pytest.raises(HarnessUsageError):
        run.turn(Message.assistant("not a user message"))


async def test_an_empty_tools_list_offers_no_tools() -> None:
    model = FakeModel([Reply(text="hi")])
    run = Run(model, Tools())
    events: list[Any] = await drive(run, Message.user("x"))
    assert list(model.prompts[0].tools) == []
    assert isinstance(events[-1], TurnEnded)
