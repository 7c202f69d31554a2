"""AgentTool: a sub-agent as a tool — forwarding, results, hints, nested pauses across processes."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from harness import (
    Answer,
    Approval,
    Call,
    Decision,
    EndReason,
    Message,
    Pending,
    Result,
    Run,
    ToolCall,
    Tools,
    tool,
)
from harness.agents import AgentTool
from harness.events import Event, InputRequested, TextDelta, ToolEnded, TurnEnded
from harness.middleware import NextTool
from harness.testing import FakeModel, Reply

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def peek(path: str) -> str:
    """Read a note."""
    return f"contents of {path}"


written: list[str] = []


@tool
def write_note(text: str) -> str:
    """Write a note."""
    written.append(text)
    return "saved"


class AskForWrites:
    """Tool middleware: anything not read-only asks, unless answered."""

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        if not context.answers() and context.spec is not None and not context.spec.hints.read_only:
            return context.needs_input([Approval(f"{call.name} changes files")])
        return await next(call, context)


async def collect(run: Run, input: Any) -> list[Event]:
    out: list[Event] = []
    with anyio.fail_after(5):
        async with run.turn(input) as events:
            async for e in events:
                out.append(e)
    return out


async def test_the_parent_model_gets_the_childs_final_text_and_child_events_carry_the_parent_id() -> None:
    child_model = FakeModel([Reply(tool_calls=[("peek", {"path": "a"})]), Reply(text="A holds contents.")])
    child = Run(child_model, Tools(peek), system="Explore.")
    parent_model = FakeModel(
        [Reply(tool_calls=[("explore", {"prompt": "what is in a?"}, "p1")]), Reply(text="Done.")]
    )
    parent = Run(parent_model, Tools(AgentTool(child, "explore", "Reads the project")))
    events = await collect(parent, Message.user("look"))
    nested = [e for e in events if e.parent == "p1"]
    assert any(isinstance(e, TextDelta) and e.text == "A holds contents." for e in nested)
    assert any(isinstance(e, TurnEnded) for e in nested)
    result = parent_model.prompts[1].messages[-1].tool_results[0]
    assert result.text == "A holds contents."
    assert child.messages() == [], "fresh=True runs a fork; the template keeps its empty context"


async def test_a_child_with_no_text_and_a_cut_off_reply_are_told_to_the_parent_model() -> None:
    child = Run(FakeModel([Reply(text="", finish="stop"), Reply(text="partial", finish="length")]), Tools())
    parent_model = FakeModel(
        [
            Reply(tool_calls=[("sub", {"prompt": "x"}, "a"), ("sub", {"prompt": "y"}, "b")]),
            Reply(text="ok"),
        ]
    )
    parent = Run(parent_model, Tools(AgentTool(child, "sub", "A sub-agent")))
    await collect(parent, Message.user("go"))
    # The two forks share one FakeModel and run concurrently, so either may get either reply.
    texts = sorted(r.text for r in parent_model.prompts[1].messages[-1].tool_results)
    assert texts[0] == "(the agent gave no text)"
    assert texts[1].startswith("partial\n") and "cut off" in texts[1]


async def test_hints_are_derived_from_the_childs_tools_at_each_spec() -> None:
    reader = AgentTool(Run(FakeModel([]), Tools(peek)), "reader", "reads")
    writer = AgentTool(Run(FakeModel([]), Tools(peek, write_note)), "writer", "writes")
    assert reader.spec().hints.read_only
    assert not writer.spec().hints.read_only


async def test_a_paused_child_pauses_the_parent_with_prefixed_needs_and_resumes_in_a_fresh_process() -> None:
    written.clear()
    child_replies = [Reply(tool_calls=[("write_note", {"text": "green"}, "w1")]), Reply(text="Saved it.")]
    child = Run(FakeModel(child_replies), Tools(write_note), middleware=[AskForWrites()])
    parent_replies = [Reply(tool_calls=[("writer", {"prompt": "save green"}, "p1")]), Reply(text="All done.")]
    parent = Run(FakeModel(parent_replies), Tools(AgentTool(child, "writer", "Writes notes")))

    events = await collect(parent, Message.user("remember green"))
    ended = parent.ended()
    assert ended is not None and ended.reason is EndReason.AWAITING_INPUT
    top = [e for e in events if isinstance(e, InputRequested) and e.parent is None]
    assert [n.id for n in top[0].pending[0].needs] == ["w1/approval"]
    assert written == []

    # Another process: everything through JSON.
    stored = json.loads(
        json.dumps(
            {
                "messages": [m.to_dict() for m in parent.messages()],
                "pending": [p.to_dict() for p in ended.pending],
            }
        )
    )
    child2 = Run(FakeModel(child_replies[1:]), Tools(write_note), middleware=[AskForWrites()])
    parent2 = Run(
        FakeModel(parent_replies[1:]),
        Tools(AgentTool(child2, "writer", "Writes notes")),
        messages=[Message.from_dict(m) for m in stored["messages"]],
        pending=[Pending.from_dict(p) for p in stored["pending"]],
    )
    events2 = await collect(parent2, [Answer("p1", {"w1/approval": Decision.allow()})])
    assert written == ["green"]
    assert parent2.ended() is not None and parent2.ended().reason is EndReason.DONE  # type: ignore[union-attr]
    ends = [e for e in events2 if isinstance(e, ToolEnded) and e.parent is None]
    assert isinstance(ends[0].outcome, Result) and ends[0].outcome.as_text() == "Saved it."


async def test_a_denial_reaches_the_child_whose_model_sees_denied() -> None:
    written.clear()
    child_model = FakeModel(
        [Reply(tool_calls=[("write_note", {"text": "x"}, "w1")]), Reply(text="I could not save.")]
    )
    child = Run(
        child_model,
        Tools(write_note),
        middleware=[AskForWrites()],
    )
    parent = Run(
        FakeModel([Reply(tool_calls=[("writer", {"prompt": "save"}, "p1")]), Reply(text="ok")]),
        Tools(AgentTool(child, "writer", "Writes notes", fresh=False)),
    )
    await collect(parent, Message.user("go"))
    await collect(parent, [Answer("p1", {"w1/approval": Decision.deny("not now")})])
    assert written == []
    denied = child_model.prompts[1].messages[-1].tool_results[0]
    assert denied.error and denied.text == "Denied: not now"


async def test_cancelling_the_parent_cancels_the_child() -> None:
    child = Run(FakeModel([Reply(text="thinking", hang=True)]), Tools())
    parent = Run(
        FakeModel([Reply(tool_calls=[("sub", {"prompt": "x"}, "p1")])]), Tools(AgentTool(child, "sub", "s"))
    )
    with anyio.fail_after(5):
        async with parent.turn(Message.user("go")) as events:
            async for e in events:
                if isinstance(e, TextDelta) and e.parent == "p1":
                    parent.cancel()
    assert parent.ended() is not None and parent.ended().reason is EndReason.CANCELLED  # type: ignore[union-attr]
