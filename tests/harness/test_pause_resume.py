"""Pause and resume: approvals, questions, state, the denial rules, ToolDecided, fresh runs from dicts."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness import (
    Answer,
    Approval,
    Call,
    Decision,
    EndReason,
    HarnessUsageError,
    Message,
    Pending,
    Question,
    Result,
    Role,
    Run,
    ToolCall,
    Tools,
    tool,
)
from harness.events import InputRequested, StepStarted, ToolDecided, ToolEnded, TurnEnded
from harness.middleware import NextTool
from harness.testing import FakeModel, Reply
from tests.harness.run_support import all_results, assert_paired, drive, ended, of, results_of, types

pytestmark = pytest.mark.anyio


class Recorder:
    """Tools that ask the host, recording each time they are really called and what they saw."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def seen(self, call: Call) -> None:
        self.calls.append(
            {
                "id": call.id,
                "answers": dict(call.answers()),
                "decision": call.decision(),
                "state": call.state(),
            }
        )


def approval_tool(rec: Recorder, name: str = "remember") -> Any:
    @tool(name=name)
    def body(note: str, call: Call) -> Result:
        rec.seen(call)
        if call.decision() is None:
            return call.needs_input([Approval("Save a note")])
        return Result.text("Saved")

    return body


def stateful_tool(rec: Recorder) -> Any:
    @tool(name="deploy")
    def body(call: Call) -> Result:
        rec.seen(call)
        if not call.answers():
            return call.needs_input(
                [Approval("Deploy"), Question("env", "Where to?", ("staging", "prod"))], {"build": 42}
            )
        d = call.decision()
        if d is not None and not d.allowed:
            return Result.failure(f"deploy called off: {d.reason}")
        return Result.text(f"deployed build {call.state()['build']} to {call.answers()['env']}")

    return body


async def test_an_approval_pauses_the_turn_and_the_answer_runs_the_call_again() -> None:
    rec = Recorder()
    model = FakeModel(
        [Reply(tool_calls=[("remember", {"note": "green"}, "call_2ce8")]), Reply(text="Noted.")]
    )
    run = Run(model, Tools(approval_tool(rec)))
    events = await drive(run, Message.user("remember green"))

    assert types(events)[-2:] == ["input_requested", "turn_ended"]
    requested = of(events, InputRequested)[0]
    expected = Pending(ToolCall("call_2ce8", "remember", {"note": "green"}), (Approval("Save a note"),), None)
    assert requested.pending == (expected,)
    e = ended(run)
    assert e.reason is EndReason.AWAITING_INPUT
    assert e.pending == (expected,)
    # No call finished, so the conversation ends with the assistant message holding the call.
    assert run.messages()[-1].role is Role.ASSISTANT
    assert [c.id for c in run.messages()[-1].tool_calls] == ["call_2ce8"]

    events = await drive(run, [Answer("call_2ce8", {"approval": Decision.allow()})])
    assert all(ev.turn == 2 for ev in events)
    assert types(events)[:3] == ["turn_started", "step_started", "tool_decided"]
    assert of(events, StepStarted)[0].n == 0
    assert [s.n for s in of(events, StepStarted)] == [0, 1]
    decided = of(events, ToolDecided)
    assert [(d.id, d.need_id, d.decision) for d in decided] == [("call_2ce8", "approval", Decision.allow())]
    assert events.index(decided[0]) < events.index(of(events, ToolEnded)[0])
    assert rec.calls[-1]["decision"] == Decision.allow()
    assert ended(run).reason is EndReason.DONE
    assert ended(run).pending == ()
    # The model's next call saw the result right after its call.
    prompt = model.prompts[1]
    assert results_of(prompt.messages[-1]) == [("call_2ce8", "Saved", False)]
    assert prompt.messages[-2].tool_calls[0].id == "call_2ce8"
    assert_paired(run.messages())


async def test_a_question_is_answered_with_a_value_and_emits_no_tool_decided() -> None:
    seen: list[Any] = []

    @tool
    def pick(call: Call) -> Result:
        if "colour" not in call.answers():
            return call.needs_input([Question("colour", "Which colour?", ("red", "green"))])
        seen.append(call.answers()["colour"])
        return Result.text(f"picked {call.answers()['colour']}")

    model = FakeModel([Reply(tool_calls=[("pick", {}, "c1")]), Reply(text="ok")])
    run = Run(model, Tools(pick))
    await drive(run, Message.user("pick"))
    assert ended(run).pending[0].needs == (Question("colour", "Which colour?", ("red", "green")),)
    events = await drive(run, [Answer("c1", {"colour": "green"})])
    assert of(events, ToolDecided) == []
    assert seen == ["green"]
    assert all_results(run.messages())["c1"].text == "picked green"


async def test_state_is_given_back_to_the_call_on_resume() -> None:
    rec = Recorder()
    model = FakeModel([Reply(tool_calls=[("deploy", {}, "d1")]), Reply(text="ok")])
    run = Run(model, Tools(stateful_tool(rec)))
    await drive(run, Message.user("deploy"))
    assert ended(run).pending[0].state == {"build": 42}
    await drive(run, [Answer("d1", {"approval": Decision.allow(), "env": "prod"})])
    assert rec.calls[-1]["state"] == {"build": 42}
    assert all_results(run.messages())["d1"].text == "deployed build 42 to prod"


@pytest.mark.parametrize(
    ("reason", "text"), [("not now", "Denied: not now"), (None, "Denied: the user said no")]
)
async def test_a_denied_approval_without_state_is_not_called_again(reason: str | None, text: str) -> None:
    rec = Recorder()
    model = FakeModel([Reply(tool_calls=[("remember", {"note": "x"}, "c1")]), Reply(text="ok")])
    run = Run(model, Tools(approval_tool(rec)))
    await drive(run, Message.user("go"))
    assert len(rec.calls) == 1
    events = await drive(run, [Answer("c1", {"approval": Decision.deny(reason)})])
    assert len(rec.calls) == 1
    assert [(d.id, d.need_id, d.decision) for d in of(events, ToolDecided)] == [
        ("c1", "approval", Decision.deny(reason))
    ]
    result = all_results(run.messages())["c1"]
    assert (result.text, result.error) == (text, True)
    assert model.prompts[1].messages[-1].tool_results[0].text == text
    assert ended(run).reason is EndReason.DONE


async def test_a_denied_approval_with_state_is_called_again_and_handles_the_denial() -> None:
    rec = Recorder()
    model = FakeModel([Reply(tool_calls=[("deploy", {}, "d1")]), Reply(text="ok")])
    run = Run(model, Tools(stateful_tool(rec)))
    await drive(run, Message.user("deploy"))
    events = await drive(run, [Answer("d1", {"approval": Decision.deny("freeze"), "env": "prod"})])
    assert len(rec.calls) == 2
    assert rec.calls[-1]["decision"] == Decision.deny("freeze")
    assert rec.calls[-1]["state"] == {"build": 42}
    assert all_results(run.messages())["d1"].text == "deploy called off: freeze"
    assert [d.need_id for d in of(events, ToolDecided)] == ["approval"]


async def test_a_declined_question_reaches_the_tool_and_emits_tool_decided() -> None:
    seen: list[Any] = []

    @tool
    def pick(call: Call) -> Result:
        if not call.answers():
            return call.needs_input([Question("colour", "Which colour?")])
        seen.append(call.answers()["colour"])
        return Result.text("no colour then")

    model = FakeModel([Reply(tool_calls=[("pick", {}, "c1")]), Reply(text="ok")])
    run = Run(model, Tools(pick))
    await drive(run, Message.user("pick"))
    events = await drive(run, [Answer("c1", {"colour": Decision.deny("skip")})])
    assert seen == [Decision.deny("skip")]
    assert [(d.need_id, d.decision) for d in of(events, ToolDecided)] == [("colour", Decision.deny("skip"))]
    assert all_results(run.messages())["c1"].text == "no colour then"


async def test_a_declined_question_with_a_denied_approval_without_state_does_not_reach_the_tool() -> None:
    calls: list[str] = []

    @tool
    def both(call: Call) -> Result:
        calls.append(call.id)
        if not call.answers():
            return call.needs_input([Approval("go?"), Question("q", "why?")])
        return Result.text("ran")

    model = FakeModel([Reply(tool_calls=[("both", {}, "c1")]), Reply(text="ok")])
    run = Run(model, Tools(both))
    await drive(run, Message.user("x"))
    events = await drive(run, [Answer("c1", {"approval": Decision.deny("no"), "q": Decision.deny()})])
    assert calls == ["c1"]
    assert all_results(run.messages())["c1"].text == "Denied: no"
    assert sorted(d.need_id for d in of(events, ToolDecided)) == ["approval", "q"]


async def test_two_pending_calls_are_answered_in_one_resume_and_results_merge_in_model_order() -> None:
    rec = Recorder()

    @tool(read_only=True)
    def lookup() -> str:
        return "looked up"

    model = FakeModel(
        [
            Reply(
                tool_calls=[
                    ("remember", {"note": "a"}, "c1"),
                    ("lookup", {}, "c2"),
                    ("remember", {"note": "b"}, "c3"),
                ]
            ),
            Reply(text="ok"),
        ]
    )
    run = Run(model, Tools(approval_tool(rec), lookup))
    events = await drive(run, Message.user("go"))
    e = ended(run)
    assert e.reason is EndReason.AWAITING_INPUT
    assert [p.call.id for p in e.pending] == ["c1", "c3"]
    assert [p.call.id for p in of(events, InputRequested)[0].pending] == ["c1", "c3"]
    # The call that finished has its result in a trailing user message already.
    messages = run.messages()
    assert messages[-2].role is Role.ASSISTANT
    assert results_of(messages[-1]) == [("c2", "looked up", False)]

    events = await drive(
        run,
        [Answer("c3", {"approval": Decision.deny("not b")}), Answer("c1", {"approval": Decision.allow()})],
    )
    assert sorted((d.id, d.decision.allowed) for d in of(events, ToolDecided)) == [
        ("c1", True),
        ("c3", False),
    ]
    assert ended(run).reason is EndReason.DONE
    trailing = model.prompts[1].messages[-1]
    assert results_of(trailing) == [
        ("c1", "Saved", False),
        ("c2", "looked up", False),
        ("c3", "Denied: not b", True),
    ]
    assert_paired(run.messages())
    assert len([m for m in run.messages() if m.tool_results]) == 1


async def test_a_fresh_run_resumes_from_messages_and_pending_through_json() -> None:
    rec = Recorder()
    first = Run(
        FakeModel([Reply(tool_calls=[("remember", {"note": "green"}, "call_1")])]), Tools(approval_tool(rec))
    )
    await drive(first, Message.user("remember green"))
    store = json.dumps(
        {
            "messages": [m.to_dict() for m in first.messages()],
            "pending": [p.to_dict() for p in ended(first).pending],
        }
    )
    answers_wire = json.dumps([Answer("call_1", {"approval": Decision.allow()}).to_dict()])

    loaded = json.loads(store)
    model = FakeModel([Reply(text="Saved it.")])
    second = Run(
        model,
        Tools(approval_tool(rec)),
        messages=[Message.from_dict(d) for d in loaded["messages"]],
        pending=[Pending.from_dict(d) for d in loaded["pending"]],
    )
    assert second.messages() == first.messages()
    events = await drive(second, [Answer.from_dict(d) for d in json.loads(answers_wire)])
    assert events[0].turn == 1
    assert [d.decision for d in of(events, ToolDecided)] == [Decision.allow()]
    assert rec.calls[-1]["decision"] == Decision.allow()
    assert ended(second).reason is EndReason.DONE
    assert results_of(model.prompts[0].messages[-1]) == [("call_1", "Saved", False)]
    assert second.messages()[-1].text == "Saved it."
    assert_paired(second.messages())


async def test_the_turn_ended_and_input_requested_of_a_pause_serialise() -> None:
    rec = Recorder()
    run = Run(
        FakeModel([Reply(tool_calls=[("remember", {"note": "g"}, "call_1")])]), Tools(approval_tool(rec))
    )
    events = await drive(run, Message.user("x"))
    data = [e.to_dict() for e in events[-2:]]
    assert data[0]["type"] == "input_requested"
    assert data[0]["pending"][0]["needs"] == [{"type": "approval", "id": "approval", "reason": "Save a note"}]
    assert data[1]["type"] == "turn_ended"
    assert data[1]["reason"] == "awaiting_input"
    assert data[1]["finish"] == "tool_calls"
    json.dumps(data)


class ApproveWrites:
    """The design's policy: anything not read-only needs approval unless answered already."""

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        if not context.answers() and context.spec is not None and not context.spec.hints.read_only:
            return context.needs_input([Approval(f"{call.name} changes files")])
        return await next(call, context)


class Terminal:
    """Answers inline: calls next, and while the call is pending answers it in place and calls next again."""

    def __init__(self, allow: bool) -> None:
        self.allow = allow
        self.asked: list[str] = []

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        result = await next(call, context)
        while (pending := context.pending()) is not None:
            answers: dict[str, Any] = {}
            denied = False
            for need in pending.needs:
                self.asked.append(need.id)
                if isinstance(need, Approval):
                    answers[need.id] = Decision.allow() if self.allow else Decision.deny("the user said no")
                    denied = denied or not self.allow
            context.answer(answers)
            if denied and pending.state is None:
                return Result.failure("Denied: the user said no")
            result = await next(call, context)
        return result


@tool
def write_file(path: str) -> str:
    return f"wrote {path}"


async def test_a_tool_middleware_can_ask_for_approval() -> None:
    model = FakeModel([Reply(tool_calls=[("write_file", {"path": "a.txt"}, "w1")]), Reply(text="ok")])
    run = Run(model, Tools(write_file), middleware=[ApproveWrites()])
    await drive(run, Message.user("write"))
    assert ended(run).pending[0].needs == (Approval("write_file changes files"),)
    events = await drive(run, [Answer("w1", {"approval": Decision.allow()})])
    assert len(of(events, ToolDecided)) == 1
    assert all_results(run.messages())["w1"].text == "wrote a.txt"


@pytest.mark.parametrize("allow", [True, False])
async def test_inline_answering_middleware_never_pauses_and_emits_no_tool_decided(allow: bool) -> None:
    terminal = Terminal(allow)
    model = FakeModel([Reply(tool_calls=[("write_file", {"path": "a.txt"}, "w1")]), Reply(text="ok")])
    run = Run(model, Tools(write_file), middleware=[terminal, ApproveWrites()])
    events = await drive(run, Message.user("write"))
    assert terminal.asked == ["approval"]
    assert of(events, ToolDecided) == []
    assert of(events, InputRequested) == []
    assert isinstance(events[-1], TurnEnded)
    assert ended(run).reason is EndReason.DONE
    assert ended(run).pending == ()
    result = all_results(run.messages())["w1"]
    if allow:
        assert (result.text, result.error) == ("wrote a.txt", False)
    else:
        assert (result.text, result.error) == ("Denied: the user said no", True)


async def test_answers_when_nothing_is_pending_are_a_usage_error() -> None:
    run = Run(FakeModel([Reply(text="hi")]), Tools())
    with pytest.raises(HarnessUsageError):
        run.turn([Answer("c1", {"approval": Decision.allow()})])
    await drive(run, Message.user("x"))
    with pytest.raises(HarnessUsageError):
        run.turn([Answer("c1", {"approval": Decision.allow()})])


async def test_answers_must_name_every_pending_call_and_no_other() -> None:
    rec = Recorder()
    model = FakeModel(
        [Reply(tool_calls=[("remember", {"note": "a"}, "c1"), ("remember", {"note": "b"}, "c2")])]
    )
    run = Run(model, Tools(approval_tool(rec)))
    await drive(run, Message.user("go"))
    assert [p.call.id for p in ended(run).pending] == ["c1", "c2"]
    with pytest.raises(HarnessUsageError):
        run.turn([Answer("c1", {"approval": Decision.allow()})])
    with pytest.raises(HarnessUsageError):
        run.turn(
            [
                Answer("c1", {"approval": Decision.allow()}),
                Answer("c2", {"approval": Decision.allow()}),
                Answer("zz", {"approval": Decision.allow()}),
            ]
        )


async def test_a_user_message_while_calls_are_pending_is_a_usage_error() -> None:
    rec = Recorder()
    run = Run(FakeModel([Reply(tool_calls=[("remember", {"note": "a"}, "c1")])]), Tools(approval_tool(rec)))
    await drive(run, Message.user("go"))
    with pytest.raises(HarnessUsageError):
        run.turn(Message.user("never mind"))
    # Still pending: the answers are accepted afterwards.
    assert [p.call.id for p in ended(run).pending] == ["c1"]
