"""``Run.cancel_call``: one running call (a sub-agent's run with it) cancelled alone while the turn goes on."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from harness import Approval, Call, EndReason, Message, Result, Run, ToolCall, Tools, tool
from harness.agents import AgentTool
from harness.events import Event, ToolEnded, TurnEnded
from harness.middleware import NextTool
from harness.testing import FakeModel, Reply

pytestmark = pytest.mark.anyio

REASON = "Cancelled by the user: the sub-agent was stopped before it finished."


class Stalling:
    """A tool that runs until it is cancelled, and says so."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = False

    def tool(self) -> Any:
        @tool(read_only=True)
        async def stall(path: str) -> str:
            """Read slowly."""
            self.started.set()
            try:
                await anyio.Event().wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled = True
                raise
            return "never"

        return stall


async def run_cancelling(run: Run, when: anyio.Event, call_id: str, seen: list[bool]) -> list[Event]:
    """The turn of "go" on ``run``, ``call_id`` cancelled alone once ``when`` is set."""
    out: list[Event] = []

    async def cancel() -> None:
        await when.wait()
        seen.append(run.cancel_call(call_id, REASON))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel)
            async with run.turn(Message.user("go")) as events:
                async for event in events:
                    out.append(event)
    return out


def _ended(events: list[Event], call_id: str, parent: str | None = None) -> ToolEnded:
    (ended,) = [e for e in events if isinstance(e, ToolEnded) and e.id == call_id and e.parent == parent]
    return ended


async def test_a_sub_agent_cancelled_alone_has_its_tools_killed_and_the_parent_turn_goes_on() -> None:
    slow = Stalling()
    child = Run(FakeModel([Reply(tool_calls=[("stall", {"path": "a"}, "c1")])]), Tools(slow.tool()))
    parent_model = FakeModel(
        [Reply(tool_calls=[("explore", {"prompt": "look"}, "p1")]), Reply(text="It was cancelled.")]
    )
    parent = Run(parent_model, Tools(AgentTool(child, "explore", "Reads")))
    seen: list[bool] = []
    events = await run_cancelling(parent, slow.started, "p1", seen)

    assert seen == [True] and slow.cancelled
    outcome = _ended(events, "p1").outcome
    assert isinstance(outcome, Result) and outcome.error and outcome.meta == {"cancelled": True}
    assert isinstance(events[-1], TurnEnded) and events[-1].reason is EndReason.DONE
    result = parent_model.prompts[1].messages[-1].tool_results[0]
    assert result.text == REASON and result.error
    assert parent.pending() == [] and parent.messages()[-1].text == "It was cancelled."


async def test_a_nested_call_cancelled_by_its_path_ends_alone_and_the_sub_agent_goes_on() -> None:
    slow = Stalling()
    child_model = FakeModel([Reply(tool_calls=[("stall", {"path": "a"}, "c1")]), Reply(text="Child done.")])
    child = Run(child_model, Tools(slow.tool()))
    parent_model = FakeModel([Reply(tool_calls=[("explore", {"prompt": "look"}, "p1")]), Reply(text="Done.")])
    parent = Run(parent_model, Tools(AgentTool(child, "explore", "Reads")))
    seen: list[bool] = []
    events = await run_cancelling(parent, slow.started, "p1/c1", seen)

    assert seen == [True] and slow.cancelled
    nested = _ended(events, "c1", parent="p1").outcome
    assert isinstance(nested, Result) and nested.meta == {"cancelled": True}
    assert child_model.prompts[1].messages[-1].tool_results[0].text == REASON
    assert parent_model.prompts[1].messages[-1].tool_results[0].text == "Child done."


class AskTheUser:
    """Outer tool middleware answering pauses inline, as a host asks its user: here the user never answers."""

    def __init__(self) -> None:
        self.asking = anyio.Event()

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        result = await next(call, context)
        if context.pending() is not None:
            self.asking.set()
            await anyio.Event().wait()  # the user thinks it over
        return result


class AskForEverything:
    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        if not context.answers():
            return context.needs_input([Approval(f"{call.name} reads")])
        return await next(call, context)


async def test_a_call_cancelled_while_it_waits_on_the_user_leaves_nothing_pending() -> None:
    slow = Stalling()
    child = Run(
        FakeModel([Reply(tool_calls=[("stall", {"path": "a"}, "c1")])]),
        Tools(slow.tool()),
        middleware=[AskForEverything()],
    )
    asker = AskTheUser()
    parent_model = FakeModel([Reply(tool_calls=[("explore", {"prompt": "look"}, "p1")]), Reply(text="Done.")])
    parent = Run(parent_model, Tools(AgentTool(child, "explore", "Reads")), middleware=[asker])
    seen: list[bool] = []
    events = await run_cancelling(parent, asker.asking, "p1", seen)

    assert seen == [True] and not slow.started.is_set()
    assert isinstance(events[-1], TurnEnded) and events[-1].reason is EndReason.DONE
    assert parent.pending() == []
    assert parent_model.prompts[1].messages[-1].tool_results[0].text == REASON


async def test_cancelling_a_call_that_is_not_running_changes_nothing() -> None:
    slow = Stalling()
    run = Run(
        FakeModel([Reply(tool_calls=[("stall", {"path": "a"}, "c1")]), Reply(text="Done.")]),
        Tools(slow.tool()),
    )
    assert run.cancel_call("c1") is False  # no turn runs
    seen: list[bool] = []
    out: list[Event] = []

    async def cancel() -> None:
        await slow.started.wait()
        seen.append(run.cancel_call("nope"))
        seen.append(run.cancel_call("c1/deeper"))  # c1 runs no nested run
        seen.append(run.cancel_call("c1"))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(cancel)
            async with run.turn(Message.user("go")) as events:
                out.extend([event async for event in events])
    assert seen == [False, False, True]
    outcome = _ended(out, "c1").outcome
    assert (
        isinstance(outcome, Result)
        and outcome.as_text() == "Cancelled: this call was stopped before it finished; the turn goes on"
    )
    assert run.cancel_call("c1") is False  # the turn ended
