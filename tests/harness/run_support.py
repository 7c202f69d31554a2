"""Helpers shared by the harness contract tests: drive a turn, filter events, scripted models."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, TypeVar

import anyio

from harness import Ended, Message, Role, Run, ToolCall, ToolResult
from harness.events import Event
from harness.model import Delta, Prompt

E = TypeVar("E")

LIMIT_S = 5.0


async def drive(
    run: Run,
    input: Any,
    on_event: Callable[[Any], None] | None = None,
) -> list[Any]:
    """Run one turn to its end under a time limit; ``on_event`` is called synchronously for each event."""
    events: list[Any] = []
    with anyio.fail_after(LIMIT_S):
        async with run.turn(input) as stream:
            async for event in stream:
                events.append(event)
                if on_event is not None:
                    on_event(event)
    return events


def of(events: Sequence[Any], cls: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, cls)]


def types(events: Sequence[Event]) -> list[str]:
    return [e.type for e in events]


def ended(run: Run) -> Ended:
    result = run.ended()
    assert result is not None, "the run has no ended() after its turn"
    return result


def results_of(message: Message) -> list[tuple[str, str, bool]]:
    """(call id, text, error) of each tool result part, in order."""
    return [(r.call_id, r.text, r.error) for r in message.tool_results]


def all_results(messages: Sequence[Message]) -> dict[str, ToolResult]:
    return {r.call_id: r for m in messages for r in m.tool_results}


def assert_paired(messages: Sequence[Message]) -> None:
    """Every ToolCall of an assistant message is answered by the user message right after it, in order."""
    for i, m in enumerate(messages):
        if m.role is not Role.ASSISTANT or not m.tool_calls:
            continue
        assert i + 1 < len(messages), f"message {i} has tool calls and nothing after it"
        after = messages[i + 1]
        assert after.role is Role.USER
        assert [r.call_id for r in after.tool_results] == [c.id for c in m.tool_calls]
    for i, m in enumerate(messages):
        if m.tool_results:
            assert i > 0
            calls: list[ToolCall] = messages[i - 1].tool_calls
            assert [c.id for c in calls] == [r.call_id for r in m.tool_results]


class ScriptModel:
    """A model that streams the given deltas (one list per call), then optionally waits forever.

    ``log`` records ("pull", n) just before each delta is handed out, so a test can see when the run asked.
    """

    def __init__(
        self,
        scripts: Sequence[Sequence[Delta]],
        *,
        hang: bool = False,
        log: list[Any] | None = None,
    ) -> None:
        self.scripts = [list(s) for s in scripts]
        self.hang = hang
        self.log = log
        self.prompts: list[Prompt] = []
        self.cancelled = False

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        self.prompts.append(prompt)
        script = self.scripts[len(self.prompts) - 1]
        return self._run(script)

    async def _run(self, script: list[Delta]) -> AsyncIterator[Delta]:
        try:
            for n, delta in enumerate(script):
                if self.log is not None:
                    self.log.append(("pull", n))
                yield delta
            if self.hang:
                await anyio.sleep(math.inf)
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
