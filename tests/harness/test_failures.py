"""What a failed turn keeps: complete steps only, every ToolCall paired; misuse raised, runtime failures not."""

from __future__ import annotations

from typing import Any

import pytest

from harness import (
    EndReason,
    ErrorKind,
    HarnessUsageError,
    Message,
    ModelError,
    Options,
    Retry,
    Role,
    Run,
    ToolFailure,
    Tools,
    tool,
)
from harness.events import MessageEnded, ToolEnded, TurnEnded
from harness.testing import FakeModel, Reply
from tests.harness.run_support import all_results, assert_paired, drive, ended, of

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def lookup(key: str) -> str:
    return f"value of {key}"


@tool
def broken() -> str:
    raise ValueError("disk full")


@tool
def retry_me() -> str:
    raise Retry("try again")


@tool
def misused() -> str:
    raise HarnessUsageError("wrong use")


async def test_a_model_failure_discards_the_step_in_progress_and_keeps_complete_steps() -> None:
    model = FakeModel(
        [
            Reply(tool_calls=[("lookup", {"key": "a"}, "call_1")]),
            Reply(text="Half an ans", error=ModelError("gone", ErrorKind.TRANSPORT_ERROR)),
        ]
    )
    run = Run(model, Tools(lookup))
    await drive(run, Message.user("look up a"))
    e = ended(run)
    assert e.reason is EndReason.FAILED
    assert e.error_kind is ErrorKind.TRANSPORT_ERROR
    messages = run.messages()
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT, Role.USER]
    assert messages[0] == Message.user("look up a")
    assert [c.id for c in messages[1].tool_calls] == ["call_1"]
    assert messages[2].tool_results[0].text == "value of a"
    assert all("Half an ans" not in m.text for m in messages)
    assert_paired(messages)
    # appended holds the same complete steps, not the partial reply.
    assert all("Half an ans" not in m.text for m in e.appended)
    assert e.appended[-1] == messages[-1]
    assert_paired(list(e.appended))


async def test_a_failure_in_the_first_step_keeps_the_user_message_that_started_the_turn() -> None:
    run = Run(FakeModel([Reply(error=ErrorKind.RATE_LIMITED)]), Tools())
    await drive(run, Message.user("hello"))
    assert ended(run).reason is EndReason.FAILED
    assert run.messages() == [Message.user("hello")]


async def test_a_retry_after_a_failure_builds_a_run_on_the_messages_before_the_user_message() -> None:
    run = Run(FakeModel([Reply(error=ErrorKind.RATE_LIMITED)]), Tools())
    await drive(run, Message.user("hello"))
    saved = run.messages()
    retry_model = FakeModel([Reply(text="Hi!")])
    retry = Run(retry_model, Tools(), messages=saved[:-1])
    await drive(retry, saved[-1])
    assert ended(retry).reason is EndReason.DONE
    assert retry.messages()[0] == Message.user("hello")
    assert retry.messages()[-1].text == "Hi!"
    assert retry_model.prompts[0].messages[-1] == Message.user("hello")


async def test_a_failed_step_discards_the_results_of_its_finished_calls() -> None:
    # lookup finishes, then the unknown tool exceeds tool_retries=0: the whole step goes.
    model = FakeModel(
        [
            Reply(tool_calls=[("lookup", {"key": "k"}, "call_ok")]),
            Reply(tool_calls=[("lookup", {"key": "x"}, "call_2"), ("nope", {}, "call_3")]),
        ]
    )
    run = Run(model, Tools(lookup), options=Options(tool_retries=0))
    events = await drive(run, Message.user("go"))
    e = ended(run)
    assert e.reason is EndReason.FAILED
    assert e.error_kind is ErrorKind.TOOL_RETRIES_EXCEEDED
    messages = run.messages()
    assert len(messages) == 3
    assert set(all_results(messages)) == {"call_ok"}
    assert all(c.id != "call_2" for m in messages for c in m.tool_calls)
    assert_paired(messages)
    assert isinstance(events[-1], TurnEnded)


async def test_a_tool_exception_is_an_error_result_and_the_turn_goes_on() -> None:
    model = FakeModel([Reply(tool_calls=[("broken", {}, "call_b")]), Reply(text="Sorry")])
    run = Run(model, Tools(broken), options=Options(tool_retries=0))
    events = await drive(run, Message.user("go"))
    assert ended(run).reason is EndReason.DONE
    result = all_results(run.messages())["call_b"]
    assert result.error is True
    assert result.text == "ValueError: disk full"
    ended_events = [x for x in of(events, ToolEnded) if x.id == "call_b"]
    assert len(ended_events) == 1
    outcome = ended_events[0].outcome
    assert isinstance(outcome, ValueError)
    assert str(outcome) == "disk full"
    # The model saw the message of the exception.
    assert model.prompts[1].messages[-1].tool_results[0].text == "ValueError: disk full"


async def test_a_tool_exception_serialises_in_tool_ended_with_its_class() -> None:
    model = FakeModel([Reply(tool_calls=[("broken", {}, "call_b")]), Reply(text="ok")])
    run = Run(model, Tools(broken))
    events = await drive(run, Message.user("go"))
    data = of(events, ToolEnded)[0].to_dict()
    assert data["outcome"] == {"class": "ValueError", "message": "disk full"}
    from harness.events import from_dict

    rebuilt = from_dict(data)
    assert isinstance(rebuilt, ToolEnded)
    assert rebuilt.outcome == ToolFailure("ValueError", "disk full")


async def test_a_usage_error_from_a_tool_is_raised_only_after_turn_ended_was_delivered() -> None:
    model = FakeModel(
        [Reply(tool_calls=[("lookup", {"key": "a"}, "c1")]), Reply(tool_calls=[("misused", {}, "c2")])]
    )
    run = Run(model, Tools(lookup, misused))
    seen: list[Any] = []
    ended_in_handler: list[Any] = []

    def on_event(event: Any) -> None:
        seen.append(event)
        if isinstance(event, TurnEnded):
            ended_in_handler.append(run.ended())

    with pytest.raises(HarnessUsageError, match="wrong use") as raised:
        await drive(run, Message.user("go"), on_event)
    last = seen[-1]
    assert isinstance(last, TurnEnded)
    assert last.reason is EndReason.FAILED
    assert last.error is raised.value
    assert ended_in_handler[0] is not None
    e = ended(run)
    assert e.error is raised.value
    assert e.error_kind is ErrorKind.TOOL_ERROR
    # The failed step is discarded; the first complete step stays.
    messages = run.messages()
    assert set(all_results(messages)) == {"c1"}
    assert_paired(messages)


async def test_a_runtime_failure_is_not_raised_and_is_in_ended() -> None:
    boom = OSError("connection reset")
    run = Run(FakeModel([Reply(error=boom)]), Tools())
    events = await drive(run, Message.user("hi"))
    assert isinstance(events[-1], TurnEnded)
    assert events[-1].error is boom
    e = ended(run)
    assert e.reason is EndReason.FAILED
    assert e.error is boom
    assert not run.is_running()


async def test_a_failed_turn_emits_no_message_ended_for_the_discarded_reply() -> None:
    run = Run(FakeModel([Reply(text="abc", error=ErrorKind.MODEL_ERROR)]), Tools())
    events = await drive(run, Message.user("hi"))
    assert of(events, MessageEnded) == []


async def test_retries_exceeded_after_complete_steps_keeps_them_paired() -> None:
    model = FakeModel(
        [
            Reply(tool_calls=[("retry_me", {}, "r1"), ("lookup", {"key": "a"}, "l1")]),
            Reply(tool_calls=[("retry_me", {}, "r2")]),
        ]
    )
    run = Run(model, Tools(retry_me, lookup), options=Options(tool_retries=1))
    await drive(run, Message.user("go"))
    e = ended(run)
    assert e.error_kind is ErrorKind.TOOL_RETRIES_EXCEEDED
    messages = run.messages()
    assert set(all_results(messages)) == {"r1", "l1"}
    assert all_results(messages)["r1"].text == "try again"
    assert all_results(messages)["r1"].error is True
    assert_paired(messages)


async def test_a_new_turn_after_a_failed_one_runs_normally() -> None:
    model = FakeModel([Reply(error=ErrorKind.RATE_LIMITED), Reply(text="fine now")])
    run = Run(model, Tools())
    await drive(run, Message.user("one"))
    assert ended(run).reason is EndReason.FAILED
    events = await drive(run, Message.user("two"))
    assert ended(run).reason is EndReason.DONE
    assert events[0].turn == 2
    assert run.messages()[-1].text == "fine now"
