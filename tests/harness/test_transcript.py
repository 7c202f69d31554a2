"""JsonlTranscript and JsonlEvents: append-only JSON lines that survive a torn last line."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import (
    Approval,
    Decision,
    FinishReason,
    Message,
    Pending,
    Result,
    Text,
    ToolCall,
    ToolResult,
    Usage,
)
from harness._kinds import EndReason, Role
from harness.events import (
    InputRequested,
    MessageEnded,
    TextDelta,
    ToolDecided,
    ToolEnded,
    TurnEnded,
    TurnStarted,
)
from harness.transcript import JsonlEvents, JsonlTranscript, TranscriptError

pytestmark = pytest.mark.anyio


def conversation() -> list[Message]:
    call = ToolCall("call_1", "read_file", {"path": "a.txt"})
    assistant = Message(
        Role.ASSISTANT,
        (Text("Reading."), call),
        id="m1",
        usage=Usage(10, 5, 2, 0),
        finish=FinishReason.TOOL_CALLS,
    )
    return [
        Message.user("What is in a.txt?"),
        assistant,
        Message.user(ToolResult("call_1", (Text("hello"),), name="read_file")),
        Message.assistant("It says hello.", id="m2"),
    ]


def assert_every_line_is_json(path: Path) -> None:
    raw = path.read_bytes()
    assert raw.endswith(b"\n")
    for line in raw.split(b"\n")[:-1]:
        json.loads(line)


async def test_messages_round_trip_through_the_file(tmp_path: Path) -> None:
    t = JsonlTranscript(tmp_path / "s.jsonl")
    msgs = conversation()
    await t.append(msgs[:2])
    await t.append(msgs[2])
    await t.append(msgs[3:])
    assert await t.read() == msgs
    lines = (tmp_path / "s.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == [m.to_dict() for m in msgs]


async def test_a_missing_file_reads_as_empty(tmp_path: Path) -> None:
    assert await JsonlTranscript(tmp_path / "none.jsonl").read() == []


async def test_a_torn_last_line_is_ignored_then_truncated_by_the_next_append(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    t = JsonlTranscript(path)
    msgs = conversation()
    await t.append(msgs[:2])
    with path.open("ab") as f:  # what a kill -9 in the middle of a write leaves
        f.write(b'{"role": "user", "content": [{"type": "te')
    assert await t.read() == msgs[:2]

    await JsonlTranscript(path).append(msgs[2:])  # a new process appends
    assert await t.read() == msgs
    assert_every_line_is_json(path)


async def test_a_file_holding_only_a_torn_line_is_repaired(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"role": "us')
    t = JsonlTranscript(path)
    assert await t.read() == []
    await t.append(Message.user("hi"))
    assert await t.read() == [Message.user("hi")]
    assert_every_line_is_json(path)


async def test_a_damaged_complete_line_is_an_error_not_silently_dropped(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(Message.user("a").to_dict()) + "\nnot json\n")
    with pytest.raises(TranscriptError, match=":2:"):
        await JsonlTranscript(path).read()


async def test_concurrent_appends_land_as_whole_lines(tmp_path: Path) -> None:
    t = JsonlTranscript(tmp_path / "s.jsonl")

    async def writer(n: int) -> None:
        for i in range(10):
            await t.append([Message.user(f"{n}-{i}"), Message.assistant(f"re {n}-{i}")])

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for n in range(4):
                tg.start_soon(writer, n)
    got = await t.read()
    assert len(got) == 80
    # each append's pair stays together
    for user, reply in zip(got[::2], got[1::2], strict=True):
        assert reply.text == f"re {user.text}"


async def test_events_round_trip_typed(tmp_path: Path) -> None:
    call = ToolCall("c1", "write_file", {"path": "x"})
    msg = Message.assistant("hi", id="m1")
    events = [
        TurnStarted(1, None),
        TextDelta(1, None, "m1", "hi"),
        MessageEnded(1, None, "m1", msg, Usage(3, 1), FinishReason.STOP),
        ToolDecided(1, "p1", "c1", "approval", Decision.deny("no")),
        ToolEnded(1, None, "c1", Result.text("done", value={"n": 1})),
        InputRequested(1, None, (Pending(call, (Approval("writes"),), {"k": 1}),)),
        TurnEnded(1, None, EndReason.FAILED, Usage(3, 1), ValueError("boom"), None),
    ]
    log = JsonlEvents(tmp_path / "events.jsonl")
    await log.append(events[:3])
    await log.append(events[3])
    await log.append(events[4:])
    back = await log.read()
    assert [type(e) for e in back] == [type(e) for e in events]
    assert [e.to_dict() for e in back] == [e.to_dict() for e in events]
    assert back[:5] == events[:5]


async def test_events_survive_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = JsonlEvents(path)
    await log.append(TurnStarted(1, None))
    with path.open("ab") as f:
        f.write(b'{"type": "text_delta", "tu')
    assert await log.read() == [TurnStarted(1, None)]
    await log.append(TextDelta(1, None, "m1", "x"))
    assert await log.read() == [TurnStarted(1, None), TextDelta(1, None, "m1", "x")]
    assert_every_line_is_json(path)


async def test_a_transcript_is_read_and_decoded_in_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long session's messages are decoded off the event loop: some 4 us each, tens of milliseconds of
    every other session's stream for a long one."""
    transcript = JsonlTranscript(tmp_path / "t.jsonl")
    await transcript.append([Message.user("one"), Message.user("two")])
    on_loop: list[bool] = []
    decode = Message.from_dict

    def recording(data: dict[str, Any]) -> Message:
        on_loop.append(threading.current_thread() is threading.main_thread())
        return decode(data)

    monkeypatch.setattr(Message, "from_dict", staticmethod(recording))
    with anyio.fail_after(5):
        assert [m.text for m in await transcript.read()] == ["one", "two"]
    assert on_loop == [False, False]
