"""Plan, plan_set / plan_update, and the Reminder middleware."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from harness import Message, Prompt, Text, ToolCall, ToolResult
from harness.model import Delta
from harness.testing import FakeModel, Reply, call_tool
from harness.tools.plan import Plan, PlanItem, PlanSet, PlanUpdate, Reminder, turn_goal

pytestmark = pytest.mark.anyio


async def drain(stream: AsyncIterator[Delta]) -> list[Delta]:
    with anyio.fail_after(5):
        return [d async for d in stream]


async def test_plan_set_replaces_the_plan_and_notifies_with_acp_entries() -> None:
    seen: list[list[dict[str, str]]] = []

    async def on_change(plan: Plan) -> None:
        seen.append(plan.to_dicts())

    plan = Plan(on_change=on_change)
    out = await call_tool(
        PlanSet(plan),
        {
            "items": [
                {"content": "Read the code", "status": "in_progress", "priority": "high"},
                {"content": "Fix it"},
            ]
        },
    )
    assert not out.result.error
    assert plan.items == (PlanItem("Read the code", "in_progress", "high"), PlanItem("Fix it"))
    assert seen == [
        [
            {"content": "Read the code", "status": "in_progress", "priority": "high"},
            {"content": "Fix it", "status": "pending", "priority": "medium"},
        ]
    ]
    assert "1. [>] Read the code (high)" in out.result.as_text()
    assert "2. [ ] Fix it" in out.result.as_text()


async def test_plan_update_by_index_and_by_content() -> None:
    changes: list[tuple[str, ...]] = []
    plan = Plan([PlanItem("a"), PlanItem("b")])
    plan.subscribe(lambda p: changes.append(tuple(i.status for i in p.items)))
    out = await call_tool(PlanUpdate(plan), {"index": 1, "status": "completed"})
    assert not out.result.error
    out = await call_tool(PlanUpdate(plan), {"content": "  B ", "status": "in_progress", "priority": "low"})
    assert not out.result.error
    assert plan.items == (PlanItem("a", "completed"), PlanItem("b", "in_progress", "low"))
    assert changes == [("completed", "pending"), ("completed", "in_progress")]


@pytest.mark.parametrize(
    ("input", "says"),
    [
        ({"index": 3, "status": "completed"}, "no step 3"),
        ({"content": "zzz", "status": "completed"}, "no step reads"),
        ({"index": 1}, "give status"),
        ({"status": "completed"}, "by index or content"),
    ],
)
async def test_plan_update_mistakes_are_error_results_and_change_nothing(
    input: dict[str, object], says: str
) -> None:
    calls: list[Plan] = []
    plan = Plan([PlanItem("a"), PlanItem("b")], on_change=calls.append)
    out = await call_tool(PlanUpdate(plan), input)
    assert out.result.error
    assert says in out.result.as_text()
    assert plan.items == (PlanItem("a"), PlanItem("b"))
    assert calls == []


async def test_plan_tool_inputs_are_validated_against_acp_values() -> None:
    out = await call_tool(PlanSet(Plan()), {"items": [{"content": "x", "status": "done"}]})
    assert out.result.error


async def test_plan_tools_are_read_only_and_idempotent() -> None:
    for t in Plan().tools():
        hints = t.spec().hints
        assert hints.read_only and hints.idempotent and not hints.destructive and not hints.open_world


async def test_a_failing_listener_does_not_undo_the_change() -> None:
    def broken(plan: Plan) -> None:
        raise RuntimeError("editor gone")

    plan = Plan(on_change=broken)
    out = await call_tool(PlanSet(plan), {"items": [{"content": "x"}]})
    assert not out.result.error
    assert plan.items == (PlanItem("x"),)


def conversation() -> list[Message]:
    return [
        Message.user("Old question"),
        Message.assistant("Old answer."),
        Message.user("Refactor the parser"),
        Message.assistant(ToolCall("c1", "read_file", {"path": "p.py"})),
        Message.user(ToolResult("c1", (Text("code"),))),
    ]


async def test_reminder_appends_goal_and_open_plan_without_touching_the_messages() -> None:
    plan = Plan(
        [PlanItem("Read", "completed"), PlanItem("Refactor", "in_progress", "high"), PlanItem("Test")]
    )
    messages = conversation()
    before = list(messages)
    model = FakeModel([Reply(text="ok")])
    prompt = Prompt("system", messages, [])
    await drain(Reminder(plan).stream(prompt, model.stream))

    sent = model.prompts[0]
    assert list(sent.messages[:-1]) == before
    assert messages == before and list(prompt.messages) == before
    reminder = sent.messages[-1]
    assert reminder.role == "user"
    assert "Goal of this turn: Refactor the parser" in reminder.text
    assert "2. [>] Refactor (high)" in reminder.text
    assert "3. [ ] Test" in reminder.text
    assert "[x]" not in reminder.text
    assert sent.cancel is prompt.cancel


async def test_reminder_with_a_given_goal_and_no_plan() -> None:
    model = FakeModel([Reply(text="ok")])
    await drain(Reminder(goal="Ship it").stream(Prompt(None, [Message.user("hi")], []), model.stream))
    assert model.prompts[0].messages[-1].text == "<reminder>\nGoal of this turn: Ship it\n</reminder>"


async def test_reminder_says_when_every_step_is_done() -> None:
    model = FakeModel([Reply(text="ok")])
    plan = Plan([PlanItem("a", "completed")])
    await drain(Reminder(plan).stream(Prompt(None, [Message.user("go")], []), model.stream))
    assert "Every step of the plan (1) is completed." in model.prompts[0].messages[-1].text


async def test_reminder_leaves_a_continuation_prompt_alone() -> None:
    model = FakeModel([Reply(text="more")])
    prompt = Prompt(None, [Message.user("go"), Message.assistant("One.")], [], continue_=True)
    await drain(Reminder(Plan([PlanItem("a")])).stream(prompt, model.stream))
    assert model.prompts[0] is prompt


async def test_reminder_with_nothing_to_say_passes_the_prompt_as_is() -> None:
    model = FakeModel([Reply(text="ok")])
    prompt = Prompt(None, [Message.assistant("hello")], [])
    await drain(Reminder(Plan()).stream(prompt, model.stream))
    assert model.prompts[0] is prompt


def test_turn_goal_is_the_first_user_text_after_the_last_final_reply() -> None:
    msgs = [*conversation(), Message.user("also keep the API")]  # a steering message comes later
    assert turn_goal(msgs) == "Refactor the parser"
    assert turn_goal([Message.user(ToolResult("c", (Text("x"),)))]) is None
