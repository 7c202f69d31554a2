"""Test helpers, public API: ``FakeModel`` replays replies; ``call_tool`` calls a tool as the run would."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from ._call import Call
from ._errors import HarnessUsageError, ModelError
from ._kinds import ErrorKind, FinishReason
from ._messages import ToolCall
from ._pause import Pending
from ._tools import Result, Tool
from ._usage import Usage
from ._validate import input_error
from .model import (
    Delta,
    Finish,
    Prompt,
    ReasoningChunk,
    TextChunk,
    ToolInput,
    ToolReady,
    ToolStart,
    UsageChunk,
)
from .titles import TITLE_SYSTEM

__all__ = ["FakeModel", "Reply", "ToolOutcome", "call_tool"]

ToolCallSpec = tuple[str, Mapping[str, Any]] | tuple[str, Mapping[str, Any], str]


@dataclass(frozen=True)
class Reply:
    """One scripted model reply.

    ``text``/``reasoning`` are streamed in ``chunks`` pieces, then each tool call (``(name, input)`` or
    ``(name, input, id)``) with its input JSON in ``chunks`` pieces, then usage and finish. ``error`` (a
    ``ModelError``, an ``ErrorKind`` or any exception) is raised after the text and reasoning, so a reply
    with only an error fails before its first delta. ``delay_s`` sleeps before every delta; ``hang``
    waits forever after the text (for cancellation tests). ``deltas`` replaces all of this with raw deltas.
    ``finish`` defaults to ``tool_calls`` when there are tool calls, else ``stop``.
    """

    text: str | None = None
    reasoning: str | None = None
    tool_calls: Sequence[ToolCallSpec] = ()
    finish: str | FinishReason | None = None
    usage: Usage | None = None
    error: ModelError | ErrorKind | BaseException | None = None
    chunks: int = 1
    delay_s: float = 0.0
    hang: bool = False
    deltas: Sequence[Delta] | None = None
    signature: str | None = None


@dataclass
class FakeModel:
    """A ``Model`` that answers each call with the next ``Reply``; ``prompts`` records what it received.

    A title request (``harness.titles``: its system text is ``TITLE_SYSTEM``) is a side request: it takes
    no scripted reply and is not counted; it gets ``title`` (default: an empty answer, so no title) and is
    recorded in ``title_prompts``."""

    replies: list[Reply]
    prompts: list[Prompt] = field(default_factory=list[Prompt])
    title: Reply | None = None
    title_prompts: list[Prompt] = field(default_factory=list[Prompt])
    _calls: int = 0
    _ids: int = 0

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        if prompt.system == TITLE_SYSTEM:
            self.title_prompts.append(prompt)
            return self._deltas(self.title or Reply())
        self.prompts.append(prompt)
        if self._calls >= len(self.replies):
            raise HarnessUsageError(
                f"FakeModel has {len(self.replies)} replies and was called {self._calls + 1} times"
            )
        reply = self.replies[self._calls]
        self._calls += 1
        return self._deltas(reply)

    @property
    def calls(self) -> int:
        return self._calls

    async def _deltas(self, reply: Reply) -> AsyncIterator[Delta]:
        if reply.deltas is not None:
            for d in reply.deltas:
                await self._pause(reply)
                yield d
            return
        if reply.reasoning:
            for piece in _split(reply.reasoning, reply.chunks):
                await self._pause(reply)
                yield ReasoningChunk(piece)
            if reply.signature is not None:
                yield ReasoningChunk("", signature=reply.signature)
        if reply.text:
            for piece in _split(reply.text, reply.chunks):
                await self._pause(reply)
                yield TextChunk(piece)
        if reply.error is not None:
            await self._pause(reply)
            raise _as_exception(reply.error)
        if reply.hang:
            await anyio.sleep(math.inf)
        for spec in reply.tool_calls:
            name, tool_input = spec[0], spec[1]
            if len(spec) == 3:
                call_id = spec[2]
            else:
                self._ids += 1
                call_id = f"call_{self._ids}"
            await self._pause(reply)
            yield ToolStart(call_id, name)
            for piece in _split(json.dumps(dict(tool_input)), reply.chunks):
                await self._pause(reply)
                yield ToolInput(call_id, piece)
            yield ToolReady(call_id)
        if reply.usage is not None:
            u = reply.usage
            yield UsageChunk(u.input, u.output, u.cache_read, u.cache_write)
        finish = reply.finish or (FinishReason.TOOL_CALLS if reply.tool_calls else FinishReason.STOP)
        yield Finish(FinishReason(finish))

    @staticmethod
    async def _pause(reply: Reply) -> None:
        if reply.delay_s > 0:
            await anyio.sleep(reply.delay_s)


def _split(text: str, n: int) -> list[str]:
    if n <= 1 or len(text) <= 1:
        return [text]
    size = max(1, math.ceil(len(text) / n))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _as_exception(error: ModelError | ErrorKind | BaseException) -> BaseException:
    if isinstance(error, ErrorKind):
        return ModelError(f"scripted {error.value}", error)
    return error


@dataclass
class ToolOutcome:
    """What ``call_tool`` saw: the result, the progress values reported, and the needs if it paused."""

    result: Result
    progress: list[Any]
    pending: Pending | None
    events: list[Any] = field(default_factory=list[Any])


class _Host:
    def __init__(self, cancelled: bool) -> None:
        self.progress: list[Any] = []
        self.events: list[Any] = []
        self.cancelled = cancelled

    async def emit_progress(self, call_id: str, value: Any) -> None:
        self.progress.append(value)

    async def emit_event(self, event: Any) -> None:
        self.events.append(event)

    def is_cancelled(self) -> bool:
        return self.cancelled


async def call_tool(
    tool: Tool,
    input: Mapping[str, Any],
    *,
    call_id: str = "call_test",
    context: Any = None,
    answers: Mapping[str, Any] | None = None,
    state: Any = None,
    cancelled: bool = False,
    validate: bool = True,
) -> ToolOutcome:
    """Call ``tool`` as the run would: the input validated against its schema first (an invalid input
    gives the error result the model would see), then ``tool.call``. Exceptions propagate."""
    spec = tool.spec()
    data = dict(input)
    if validate:
        problem = input_error(spec.schema, data)
        if problem is not None:
            return ToolOutcome(Result.failure(f"{spec.name}: {problem}"), [], None)
    host = _Host(cancelled)
    call = Call(
        ToolCall(call_id, spec.name, data),
        host=host,
        context=context,
        spec=spec,
        answers=answers,
        state=state,
    )
    result = await tool.call(data, call)
    return ToolOutcome(result, host.progress, call.pending(), host.events)
