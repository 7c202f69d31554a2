"""interrupt() keeps the partial reply; Resume continues an edit with MessageResumed and a whole MessageEnded."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from harness import (
    Approval,
    Call,
    EndReason,
    FinishReason,
    HarnessUsageError,
    Message,
    Reasoning,
    Result,
    Resume,
    Role,
    Run,
    Text,
    ToolCall,
    Tools,
    tool,
)
from harness.events import (
    Event,
    MessageEnded,
    MessageResumed,
    MessageStarted,
    TextDelta,
    ToolInputDelta,
    TurnEnded,
)
from harness.model import Finish, ReasoningChunk, TextChunk, ToolInput, ToolReady, ToolStart
from harness.testing import FakeModel, Reply
from tests.harness.run_support import ScriptModel, drive, ended, of, types

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def clock() -> str:
    return "12:00"


def interrupt_on(run: Run, predicate: Callable[[Event], bool]) -> Callable[[Any], None]:
    def on_event(event: Any) -> None:
        if predicate(event):
            run.interrupt()

    return on_event


async def test_interrupt_keeps_the_text_as_delivered_in_the_partial_only() -> None:
    model = FakeModel([Reply(text="One. Two.", chunks=2, hang=True)])
    run = Run(model, Tools())
    deltas: list[str] = []

    def on_event(event: Any) -> None:
        if isinstance(event, TextDelta):
            deltas.append(event.text)
            if "".join(deltas) == "One. Two.":
                run.interrupt()

    events = await drive(run, Message.user("count"), on_event)
    e = ended(run)
    assert e.reason is EndReason.INTERRUPTED
    assert isinstance(events[-1], TurnEnded)
    assert events[-1].reason is EndReason.INTERRUPTED
    assert events[-1].finish is None
    assert e.finish is None
    assert e.partial is not None
    assert e.partial.role is Role.ASSISTANT
    assert e.partial.text == "One. Two."
    assert run.messages() == [Message.user("count")]
    assert all(m.role is not Role.ASSISTANT for m in e.appended)
    assert of(events, MessageEnded) == []


async def test_the_partial_holds_reasoning_text_and_complete_tool_calls_only() -> None:
    model = ScriptModel(
        [
            [
                ReasoningChunk("let me think"),
                TextChunk("Checking."),
                ToolStart("c1", "clock"),
                ToolInput("c1", "{}"),
                ToolReady("c1"),
                ToolStart("c2", "clock"),
                ToolInput("c2", '{"tz": '),
            ]
        ],
        hang=True,
    )
    run = Run(model, Tools(clock))
    on_event = interrupt_on(run, lambda e: isinstance(e, ToolInputDelta) and e.id == "c2")
    await drive(run, Message.user("time?"), on_event)
    e = ended(run)
    assert e.reason is EndReason.INTERRUPTED
    assert e.partial is not None
    assert e.partial.reasoning == "let me think"
    assert e.partial.text == "Checking."
    assert e.partial.tool_calls == [ToolCall("c1", "clock", {})]
    assert run.messages() == [Message.user("time?")]


async def test_interrupt_sets_the_prompts_cancel_signal() -> None:
    model = FakeModel([Reply(text="abc", hang=True)])
    run = Run(model, Tools())
    await drive(run, Message.user("x"), interrupt_on(run, lambda e: isinstance(e, TextDelta)))
    assert ended(run).reason is EndReason.INTERRUPTED
    assert model.prompts[0].cancel.is_set()


async def test_resume_continues_the_edit_with_message_resumed_and_a_whole_message_ended() -> None:
    model = FakeModel([Reply(text="One. Two.", hang=True), Reply(text=" Five.")])
    run = Run(model, Tools())
    await drive(run, Message.user("count"), interrupt_on(run, lambda e: isinstance(e, TextDelta)))
    assert ended(run).reason is EndReason.INTERRUPTED

    edited = Message.assistant([Text("One. Four.")])
    events = await drive(run, Resume(edited))
    assert of(events, MessageStarted) == []
    resumed = of(events, MessageResumed)
    assert len(resumed) == 1
    assert [d.text for d in of(events, TextDelta)] == [" Five."]
    assert all(d.id == resumed[0].id for d in of(events, TextDelta))
    message_ended = of(events, MessageEnded)
    assert len(message_ended) == 1
    assert message_ended[0].id == resumed[0].id
    assert message_ended[0].message.text == "One. Four. Five."
    assert message_ended[0].finish is FinishReason.STOP
    # The prompt asked the model to continue the edit.
    prompt = model.prompts[1]
    assert prompt.continue_ is True
    assert prompt.messages[-1].role is Role.ASSISTANT
    assert prompt.messages[-1].text == "One. Four."
    assert model.prompts[0].continue_ is False
    # The whole message replaces the edit in the conversation.
    messages = run.messages()
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT]
    assert messages[-1].text == "One. Four. Five."
    assert messages[-1] == message_ended[0].message
    e = ended(run)
    assert e.reason is EndReason.DONE
    assert e.appended[-1].text == "One. Four. Five."
    assert events[0].turn == 2


async def test_resume_event_order_is_message_resumed_then_deltas_then_message_ended() -> None:
    model = FakeModel([Reply(text="Hi", hang=True), Reply(text=" there")])
    run = Run(model, Tools())
    await drive(run, Message.user("x"), interrupt_on(run, lambda e: isinstance(e, TextDelta)))
    events = await drive(run, Resume(Message.assistant("Hi")))
    assert types(events) == [
        "turn_started",
        "step_started",
        "message_resumed",
        "text_delta",
        "message_ended",
        "step_ended",
        "turn_ended",
    ]


async def test_a_resumed_message_keeps_the_edits_reasoning_and_runs_its_tool_calls() -> None:
    model = FakeModel(
        [
            Reply(reasoning="hmm", text="Let me", hang=True),
            Reply(text=" check.", tool_calls=[("clock", {}, "c1")]),
            Reply(text="Noon."),
        ]
    )
    run = Run(model, Tools(clock))
    await drive(run, Message.user("time?"), interrupt_on(run, lambda e: isinstance(e, TextDelta)))
    partial = ended(run).partial
    assert partial is not None
    assert partial.reasoning == "hmm"
    edited = Message(Role.ASSISTANT, (Reasoning("hmm"), Text("Let me")))
    events = await drive(run, Resume(edited))
    whole = of(events, MessageEnded)[0].message
    assert whole.reasoning == "hmm"
    assert whole.text == "Let me check."
    assert [c.id for c in whole.tool_calls] == ["c1"]
    assert ended(run).reason is EndReason.DONE
    messages = run.messages()
    assert messages[1] == whole
    assert messages[2].tool_results[0].text == "12:00"
    assert messages[-1].text == "Noon."


async def test_resume_when_the_last_message_is_not_a_users_is_a_usage_error() -> None:
    run = Run(FakeModel([Reply(text="done")]), Tools())
    await drive(run, Message.user("x"))
    with pytest.raises(HarnessUsageError):
        run.turn(Resume(Message.assistant("edit")))


async def test_resume_while_calls_are_pending_is_a_usage_error() -> None:
    @tool
    def ask(call: Call) -> Result:
        return call.needs_input([Approval("ok?")])

    run = Run(FakeModel([Reply(tool_calls=[("ask", {})])]), Tools(ask))
    await drive(run, Message.user("x"))
    assert ended(run).reason is EndReason.AWAITING_INPUT
    with pytest.raises(HarnessUsageError):
        run.turn(Resume(Message.assistant("edit")))


async def test_a_fresh_run_on_saved_messages_resumes_an_edit() -> None:
    model = FakeModel([Reply(text=" world")])
    run = Run(model, Tools(), messages=[Message.user("say hello world")])
    events = await drive(run, Resume(Message.assistant("hello")))
    assert len(of(events, MessageResumed)) == 1
    assert run.messages()[-1].text == "hello world"
    assert model.prompts[0].continue_ is True


async def test_resume_end_has_finish_of_the_continued_message() -> None:
    deltas = [TextChunk(" more"), Finish(FinishReason.LENGTH)]
    model = ScriptModel([deltas])
    run = Run(model, Tools(), messages=[Message.user("go")])
    events = await drive(run, Resume(Message.assistant("some")))
    assert ended(run).finish is FinishReason.LENGTH
    assert isinstance(events[-1], TurnEnded)
    assert events[-1].finish is FinishReason.LENGTH
