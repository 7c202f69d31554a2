"""Events, messages, parts, Pending, Answer, Decision and Result serialise to the design's JSON and back."""

from __future__ import annotations

import json
from typing import Any

import pytest

from harness import (
    Answer,
    Approval,
    Decision,
    Delivery,
    EndReason,
    FinishReason,
    HarnessUsageError,
    Image,
    Message,
    Pending,
    Question,
    Reasoning,
    Result,
    Role,
    Text,
    ToolCall,
    ToolFailure,
    ToolResult,
    Usage,
)
from harness import events as ev
from harness._messages import part_from_dict


def compact(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def through_json(data: Any) -> Any:
    return json.loads(json.dumps(data))


NOTE_CALL = ToolCall("call_2ce8", "remember", {"note": "Favourite colour: green"})
NOTE_PENDING = Pending(NOTE_CALL, (Approval("Save a note"),), None)
FULL_MESSAGE = Message(
    Role.ASSISTANT,
    (
        Reasoning("thinking", signature="sig"),
        Text("Hello"),
        ToolCall("call_1", "clock", {}),
    ),
    id="msg_0123abcd",
    usage=Usage(10, 5, 2, 1),
    finish=FinishReason.TOOL_CALLS,
)

ROUND_TRIP_EVENTS: list[ev.Event] = [
    ev.TurnStarted(1, None),
    ev.TurnEnded(2, "call_parent", EndReason.DONE, Usage(1, 2, 3, 4), None, FinishReason.LENGTH),
    ev.TurnEnded(1, None, EndReason.CANCELLED, Usage(), None, None),
    ev.StepStarted(1, None, 0),
    ev.StepEnded(1, None, 3),
    ev.MessageStarted(1, None, "msg_ad35d61424070fe4"),
    ev.MessageResumed(3, None, "msg_ad35d61424070fe4"),
    ev.Interjected(1, None, Message.user("stop"), Delivery.STEER),
    ev.Interjected(1, None, Message.user("later"), Delivery.QUEUE),
    ev.TextDelta(1, None, "msg_1", " green"),
    ev.ReasoningDelta(1, None, "msg_1", "hmm"),
    ev.ToolCallStarted(1, None, "call_1", "remember"),
    ev.ToolInputDelta(1, None, "call_1", '{"note":'),
    ev.ToolCallReady(1, None, "call_1", "remember", {"note": "x", "n": [1, 2]}),
    ev.ToolDecided(2, None, "call_1", "approval", Decision.allow()),
    ev.ToolDecided(2, None, "call_1", "env", Decision.deny("not now")),
    ev.ToolProgress(1, None, "call_1", {"done": 3, "of": 10}),
    ev.ToolEnded(1, None, "call_1", Result.text("Saved")),
    ev.ToolEnded(1, None, "call_1", Result.failure("no", value={"k": 1}, meta={"ms": 3})),
    ev.MessageEnded(1, None, "msg_0123abcd", FULL_MESSAGE, Usage(10, 5, 2, 1), FinishReason.TOOL_CALLS),
    ev.InputRequested(
        1, None, (NOTE_PENDING, Pending(ToolCall("c2", "deploy", {}), (Question("env", "Where?"),), {"b": 1}))
    ),
]


@pytest.mark.parametrize("event", ROUND_TRIP_EVENTS, ids=lambda e: type(e).__name__)
def test_every_event_type_round_trips_through_json(event: ev.Event) -> None:
    data = through_json(event.to_dict())
    assert data["type"] == event.type
    assert data["turn"] == event.turn
    assert data["parent"] == event.parent
    rebuilt = ev.from_dict(data)
    assert type(rebuilt) is type(event)
    assert rebuilt == event
    assert rebuilt.to_dict() == event.to_dict()


def test_the_round_trip_list_covers_every_event_class() -> None:
    covered = {type(e).__name__ for e in ROUND_TRIP_EVENTS}
    assert covered == {
        name for name in ev.__all__ if name not in {"EVENT_TYPES", "Event", "error_to_dict", "from_dict"}
    }


def test_event_type_names_are_the_designs() -> None:
    expected = {
        ev.TurnStarted: "turn_started",
        ev.TurnEnded: "turn_ended",
        ev.StepStarted: "step_started",
        ev.StepEnded: "step_ended",
        ev.MessageStarted: "message_started",
        ev.MessageResumed: "message_resumed",
        ev.Interjected: "interjected",
        ev.TextDelta: "text_delta",
        ev.ReasoningDelta: "reasoning_delta",
        ev.ToolCallStarted: "tool_call_started",
        ev.ToolInputDelta: "tool_input_delta",
        ev.ToolCallReady: "tool_call_ready",
        ev.ToolDecided: "tool_decided",
        ev.ToolProgress: "tool_progress",
        ev.ToolEnded: "tool_ended",
        ev.MessageEnded: "message_ended",
        ev.InputRequested: "input_requested",
    }
    for cls, name in expected.items():
        assert ev.EVENT_TYPES[name] is cls
    assert set(ev.EVENT_TYPES) == set(expected.values())


def test_the_type_is_a_field_that_is_not_in_the_constructor() -> None:
    event = ev.StepStarted(1, None, 2)
    assert event.type == "step_started"
    assert repr(event) == "StepStarted(turn=1, parent=None, n=2)"
    with pytest.raises(TypeError):
        ev.StepStarted(1, None, 2, "step_ended")  # type: ignore[call-arg]
    match event:
        case ev.StepStarted(turn, parent, n):
            assert (turn, parent, n) == (1, None, 2)


# The design's JSON lines (harness-readme.txt), with our Result meta serialised as {} (PHP writes []).
GOLDEN: list[tuple[ev.Event, str]] = [
    (
        ev.TextDelta(1, None, "msg_ad35d61424070fe4", " green"),
        '{"type":"text_delta","turn":1,"parent":null,"id":"msg_ad35d61424070fe4","text":" green"}',
    ),
    (
        ev.ToolCallReady(1, None, "call_2ce8", "remember", {"note": "Favourite colour: green"}),
        '{"type":"tool_call_ready","turn":1,"parent":null,"id":"call_2ce8","name":"remember",'
        '"input":{"note":"Favourite colour: green"}}',
    ),
    (
        ev.ToolEnded(1, None, "call_2ce8", Result.text("Saved")),
        '{"type":"tool_ended","turn":1,"parent":null,"id":"call_2ce8","outcome":{"content":'
        '[{"type":"text","text":"Saved"}],"value":null,"meta":{},"error":false}}',
    ),
    (
        ev.ToolEnded(1, None, "call_9f1a", RuntimeError("disk full")),
        '{"type":"tool_ended","turn":1,"parent":null,"id":"call_9f1a","outcome":'
        '{"class":"RuntimeError","message":"disk full"}}',
    ),
    (
        ev.InputRequested(1, None, (NOTE_PENDING,)),
        '{"type":"input_requested","turn":1,"parent":null,"pending":[{"call":{"type":"tool_call",'
        '"id":"call_2ce8","name":"remember","input":{"note":"Favourite colour: green"}},"needs":'
        '[{"type":"approval","id":"approval","reason":"Save a note"}],"state":null}]}',
    ),
    (
        ev.TurnEnded(1, None, EndReason.AWAITING_INPUT, Usage(396, 59), None, FinishReason.TOOL_CALLS),
        '{"type":"turn_ended","turn":1,"parent":null,"reason":"awaiting_input","usage":{"input":396,'
        '"output":59,"cacheRead":0,"cacheWrite":0},"error":null,"finish":"tool_calls"}',
    ),
    (
        ev.ToolDecided(2, None, "call_2ce8", "approval", Decision.allow()),
        '{"type":"tool_decided","turn":2,"parent":null,"id":"call_2ce8","needId":"approval",'
        '"decision":{"allowed":true,"reason":null}}',
    ),
]


@pytest.mark.parametrize(("event", "line"), GOLDEN, ids=lambda x: x.type if hasattr(x, "type") else "")
def test_events_serialise_to_the_designs_json_lines(event: ev.Event, line: str) -> None:
    assert compact(event.to_dict()) == line


def test_a_tool_exception_outcome_comes_back_as_a_tool_failure_with_its_class_and_message() -> None:
    original = ev.ToolEnded(1, None, "call_9f1a", RuntimeError("disk full"))
    rebuilt = ev.from_dict(through_json(original.to_dict()))
    assert isinstance(rebuilt, ev.ToolEnded)
    assert rebuilt.outcome == ToolFailure("RuntimeError", "disk full")
    assert rebuilt.to_dict() == original.to_dict()


def test_a_failed_turn_ended_keeps_its_error_class_and_message() -> None:
    original = ev.TurnEnded(1, None, EndReason.FAILED, Usage(1, 1), ValueError("bad input"), None)
    data = through_json(original.to_dict())
    assert data["error"] == {"class": "ValueError", "message": "bad input"}
    rebuilt = ev.from_dict(data)
    assert isinstance(rebuilt, ev.TurnEnded)
    assert rebuilt.error == ToolFailure("ValueError", "bad input")
    assert rebuilt.reason is EndReason.FAILED


def test_optional_fields_may_be_missing_from_a_line_and_read_as_their_defaults() -> None:
    ended = ev.from_dict({"type": "turn_ended", "turn": 1, "parent": None, "reason": "done"})
    assert ended == ev.TurnEnded(1, None, EndReason.DONE, Usage(), None, None)
    ready = ev.from_dict({"type": "tool_call_ready", "turn": 1, "id": "c1", "name": "clock"})
    assert ready == ev.ToolCallReady(1, None, "c1", "clock", {})
    asked = ev.from_dict({"type": "input_requested", "turn": 2, "parent": "p1"})
    assert asked == ev.InputRequested(2, "p1", ())


def test_a_line_without_a_required_field_is_refused() -> None:
    with pytest.raises(KeyError):
        ev.from_dict({"type": "text_delta", "turn": 1, "parent": None, "id": "m1"})


def test_an_unknown_event_type_is_a_usage_error() -> None:
    with pytest.raises(HarnessUsageError):
        ev.from_dict({"type": "no_such_event", "turn": 1, "parent": None})


@pytest.mark.parametrize(
    "part",
    [
        Text("hi"),
        Image(data="aGVsbG8=", media_type="image/jpeg"),
        Image(url="https://example.com/a.png"),
        Reasoning("why", signature="sig-1"),
        Reasoning("", redacted="opaque"),
        ToolCall("call_1", "read", {"path": "a.txt", "n": 2}),
        ToolResult("call_1", (Text("ok"), Image(data="aGk=")), error=True, name="read"),
    ],
    ids=lambda p: type(p).__name__,
)
def test_every_part_round_trips_through_json(part: Any) -> None:
    assert part_from_dict(through_json(part.to_dict())) == part


def test_parts_use_the_designs_field_names() -> None:
    assert ToolCall("call_1", "write_file", {"path": "a.txt"}).to_dict() == {
        "type": "tool_call",
        "id": "call_1",
        "name": "write_file",
        "input": {"path": "a.txt"},
    }
    assert ToolResult("call_1", (Text("Saved"),)).to_dict() == {
        "type": "tool_result",
        "callId": "call_1",
        "content": [{"type": "text", "text": "Saved"}],
        "error": False,
    }


def test_a_message_with_every_field_round_trips_through_json() -> None:
    message = Message(
        FULL_MESSAGE.role,
        FULL_MESSAGE.parts,
        FULL_MESSAGE.id,
        FULL_MESSAGE.usage,
        FULL_MESSAGE.finish,
        {"k": "v"},
    )
    rebuilt = Message.from_dict(through_json(message.to_dict()))
    assert rebuilt == message
    assert rebuilt.meta == {"k": "v"}
    assert rebuilt.text == "Hello"
    assert rebuilt.reasoning == "thinking"
    assert rebuilt.tool_calls == [ToolCall("call_1", "clock", {})]


def test_a_user_message_serialises_role_and_content_only() -> None:
    assert Message.user("hi").to_dict() == {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    assert Message.from_dict({"role": "user", "content": [{"type": "text", "text": "hi"}]}) == Message.user(
        "hi"
    )


def test_pending_serialises_as_in_the_design() -> None:
    approval = Pending(
        ToolCall("call_1", "write_file", {"path": "a.txt", "content": "..."}),
        (Approval("write_file changes files"),),
    )
    questions = Pending(
        ToolCall("call_2", "deploy", {}),
        (Question("env", "Where to?", ("staging", "prod")), Question("note", "Release note?")),
        {"build": 42},
    )
    assert compact(approval.to_dict()) == (
        '{"call":{"type":"tool_call","id":"call_1","name":"write_file","input":{"path":"a.txt","content":"..."}},'
        '"needs":[{"type":"approval","id":"approval","reason":"write_file changes files"}],"state":null}'
    )
    assert compact(questions.to_dict()) == (
        '{"call":{"type":"tool_call","id":"call_2","name":"deploy","input":{}},'
        '"needs":[{"type":"question","id":"env","text":"Where to?","choices":["staging","prod"]},'
        '{"type":"question","id":"note","text":"Release note?","choices":null}],"state":{"build":42}}'
    )
    for p in (approval, questions):
        assert Pending.from_dict(through_json(p.to_dict())) == p


def test_answer_keeps_decisions_and_values_apart_and_round_trips() -> None:
    w1 = Answer("w1", {"approval": Decision.allow()})
    p1 = Answer("p1", {"w1/approval": Decision.deny("not now"), "q1/colour": "green"})
    assert [w1.to_dict(), p1.to_dict()] == json.loads(
        '[{"callId": "w1", "decisions": {"approval": {"allowed": true, "reason": null}}, "values": {}},'
        ' {"callId": "p1", "decisions": {"w1/approval": {"allowed": false, "reason": "not now"}},'
        ' "values": {"q1/colour": "green"}}]'
    )
    for a in (w1, p1):
        rebuilt = Answer.from_dict(through_json(a.to_dict()))
        assert rebuilt.call_id == a.call_id
        assert dict(rebuilt.answers) == dict(a.answers)


def test_decision_round_trips_and_deny_keeps_its_reason() -> None:
    for d in (Decision.allow(), Decision.deny(), Decision.deny("no thanks")):
        assert Decision.from_dict(through_json(d.to_dict())) == d
    assert Decision.deny("no thanks").to_dict() == {"allowed": False, "reason": "no thanks"}
    assert Decision.allow().allowed is True


def test_result_round_trips_content_value_meta_and_error() -> None:
    result = Result((Text("a"), Image(url="https://example.com/x.png")), {"rows": [1, 2]}, {"ms": 4}, True)
    rebuilt = Result.from_dict(through_json(result.to_dict()))
    assert rebuilt == result


def test_a_result_value_that_is_not_json_is_written_as_its_repr() -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "<opaque>"

    data = Result.text("x", value=Opaque()).to_dict()
    assert data["value"] == "<opaque>"
    json.dumps(data)
