"""The helpers middleware share: ``Call.ask_or_deny`` (the approval dance) and ``close_stream``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from harness import Approval, Call, Decision, ToolCall
from harness.model import Delta, TextChunk, close_stream

pytestmark = pytest.mark.anyio


class _Host:
    async def emit_progress(self, call_id: str, value: Any) -> None:
        pass

    async def emit_event(self, event: Any) -> None:
        pass

    def is_cancelled(self) -> bool:
        return False


def call_with(decision: Decision | None) -> Call:
    answers = {} if decision is None else {"approval": decision}
    return Call(ToolCall("c1", "shell", {"command": "ls"}), host=_Host(), answers=answers)


def test_a_call_not_yet_decided_asks_the_question() -> None:
    call = call_with(None)
    result = call.ask_or_deny("Run `ls`?", {"policy": "declined"})
    pending = call.pending()
    assert result is not None and result.meta == {"pending": True}
    assert pending is not None and pending.needs == (Approval("Run `ls`?"),)


def test_an_allowed_call_goes_on() -> None:
    call = call_with(Decision.allow())
    assert call.ask_or_deny("Run `ls`?", {"policy": "declined"}) is None
    assert call.pending() is None


@pytest.mark.parametrize(
    ("reason", "text"),
    [("not now", "Denied: not now (outside)"), (None, "Denied: the user declined (outside)")],
)
def test_a_declined_call_is_denied_with_the_users_reason_and_the_meta_given(
    reason: str | None, text: str
) -> None:
    call = call_with(Decision.deny(reason))
    result = call.ask_or_deny("Run `ls`?", {"hook": "declined"}, " (outside)")
    assert result is not None and result.error
    assert (result.as_text(), result.meta) == (text, {"hook": "declined"})
    assert call.pending() is None


async def test_closing_a_stream_runs_its_cleanup_and_a_plain_iterator_needs_none() -> None:
    cleaned: list[str] = []

    async def generator() -> AsyncIterator[Delta]:
        try:
            yield TextChunk("a")
            yield TextChunk("b")
        finally:
            cleaned.append("done")

    stream = generator()
    assert await anext(stream) == TextChunk("a")
    await close_stream(stream)
    assert cleaned == ["done"]

    class Plain:
        def __aiter__(self) -> Plain:
            return self

        async def __anext__(self) -> Delta:
            raise StopAsyncIteration

    await close_stream(Plain())  # nothing to close, nothing raised
