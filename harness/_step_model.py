"""A step's model request: build the prompt, stream the reply through the model middleware, fold its deltas.

The consumer pulls each delta itself (no task per event): every ``__anext__`` on the model sits in a short
stop that ``cancel()``/``interrupt()`` trigger (on asyncio a native task cancel, ``_task_stop``; on trio
an anyio cancel scope). ``ModelRequest.events()`` yields the reply's events;
afterwards ``message`` is the complete assistant message and ``problems`` names the calls whose input did
not parse (they get an error result instead of running).
"""

from __future__ import annotations

import json
import logging
import os
from asyncio import CancelledError
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import anyio
from anyio import CancelScope

from ._errors import HarnessUsageError, ModelError
from ._kinds import EndReason, ErrorKind, FinishReason, Role
from ._messages import Message, Part, Reasoning, Text, ToolCall
from ._model_call import ModelCall, raised_by_model
from ._repair import repair_arguments, resolve_name
from ._state import Fatal, Stop, TurnState
from ._task_stop import TaskStop
from ._task_stop import available as task_stop_works
from ._tools import Tool
from ._usage import Usage
from .events import (
    Event,
    MessageEnded,
    MessageResumed,
    MessageStarted,
    ReasoningDelta,
    TextDelta,
    ToolCallReady,
    ToolCallStarted,
    ToolInputDelta,
)
from .middleware import ModelMiddleware, NextModel
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
    close_stream,
)

__all__ = ["CUT_CALL", "Accumulator", "ModelRequest"]

log = logging.getLogger("harness.run")

_ASYNCIO_SCOPES = "anyio._backends._asyncio"
_END = Finish(FinishReason.STOP)  # the stream's end, from _scoped_wait (never folded: compared by identity)

CUT_CALL = (
    "{name}: not run: your reply reached its output limit (max_tokens) while writing this call, so its "
    "arguments may be cut short. Send smaller pieces: split a large file into a write_file of its start "
    "and edits or patches that add the rest, one call per reply."
)


@dataclass(slots=True)
class _Builder:
    kind: Literal["text", "reasoning", "call"]
    chunks: list[str]
    signature: str | None = None
    redacted: str | None = None
    call_id: str | None = None


@dataclass(slots=True)
class _PendingCall:
    name: str
    json: list[str]
    input: dict[str, Any] | None = None
    ready: bool = False
    problem: str | None = None


class Accumulator:
    """Folds deltas into the assistant message; tracks what a partial may hold."""

    __slots__ = ("builders", "calls", "finish", "id", "usage_fields")

    def __init__(self, msg_id: str, prefix: Sequence[Part] = ()) -> None:
        self.id = msg_id
        self.builders: list[_Builder] = []
        self.calls: dict[str, _PendingCall] = {}
        self.finish: FinishReason | None = None
        self.usage_fields: dict[str, int] = {}
        for p in prefix:
            if isinstance(p, Text):
                self.builders.append(_Builder("text", [p.text]))
            elif isinstance(p, Reasoning):
                self.builders.append(_Builder("reasoning", [p.text], p.signature, p.redacted))
            elif isinstance(p, ToolCall):
                self.calls[p.id] = _PendingCall(p.name, [], dict(p.input), True)
                self.builders.append(_Builder("call", [], call_id=p.id))

    def text(self, text: str) -> None:
        b = self.builders[-1] if self.builders else None
        if b is not None and b.kind == "text":
            b.chunks.append(text)
        else:
            self.builders.append(_Builder("text", [text]))

    def reasoning(self, d: ReasoningChunk) -> None:
        if d.redacted is not None:
            self.builders.append(_Builder("reasoning", [d.text], d.signature, d.redacted))
            return
        b = self.builders[-1] if self.builders else None
        if b is not None and b.kind == "reasoning" and b.signature is None and b.redacted is None:
            if d.text:
                b.chunks.append(d.text)
            if d.signature is not None:
                b.signature = d.signature
        else:
            self.builders.append(_Builder("reasoning", [d.text], d.signature))

    def start_call(self, d: ToolStart) -> None:
        self.calls[d.id] = _PendingCall(d.name, [])
        self.builders.append(_Builder("call", [], call_id=d.id))

    def usage(self, d: UsageChunk) -> None:
        for name in ("input", "output", "cache_read", "cache_write", "reasoning"):
            v = getattr(d, name)
            if v is not None:
                self.usage_fields[name] = v

    def current_usage(self) -> Usage:
        return Usage(**self.usage_fields)

    def message(self, *, complete: bool) -> Message:
        parts: list[Part] = []
        for b in self.builders:
            if b.kind == "text":
                text = "".join(b.chunks)
                if text:
                    parts.append(Text(text))
            elif b.kind == "reasoning":
                text = "".join(b.chunks)
                if text or b.signature is not None or b.redacted is not None:
                    parts.append(Reasoning(text, b.signature, b.redacted))
            else:
                assert b.call_id is not None
                c = self.calls[b.call_id]
                if not c.ready:
                    if not complete:
                        continue  # a partial holds complete calls only
                    self.ready(b.call_id, None)
                parts.append(ToolCall(b.call_id, c.name, c.input or {}))
        if complete:
            finish = self.finish or (FinishReason.TOOL_CALLS if self.calls else FinishReason.STOP)
            return Message(
                Role.ASSISTANT, tuple(parts), id=self.id, usage=self.current_usage(), finish=finish
            )
        return Message(Role.ASSISTANT, tuple(parts), id=self.id)

    def ready(self, call_id: str, given: dict[str, Any] | None) -> _PendingCall:
        c = self.calls[call_id]
        c.ready = True
        if given is not None:
            c.input = dict(given)
            return c
        raw = "".join(c.json).strip()
        if not raw:
            c.input = {}
            return c
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as e:
            value, problem = None, f"the arguments are not valid JSON ({e.msg} at {e.pos})"
        else:
            problem = None if isinstance(value, dict) else "the arguments must be a JSON object"
        if problem is not None:
            fixed = repair_arguments(raw)
            if fixed.value is None:
                c.input = {}
                c.problem = f"{c.name}: invalid input: {problem}"
                return c
            log.info("repaired the arguments of a %s call: %s", c.name, "; ".join(fixed.repairs))
            value = fixed.value
        c.input = cast(dict[str, Any], value)
        return c


class ModelRequest:
    """One model request of a step; ``resume`` is the edited message a Resume continues."""

    __slots__ = ("_from_model", "_inner", "acc", "message", "problems", "resume", "state")

    def __init__(self, state: TurnState, resume: Message | None) -> None:
        self.state = state
        self.resume = resume
        if resume is not None:
            self.acc = Accumulator(resume.id or _new_id(), resume.parts)
        else:
            self.acc = Accumulator(_new_id())
        self.message: Message | None = None
        self.problems: dict[str, str] = {}
        self._from_model: list[Any] = []  # the model's exceptions and stream frames (_model_call)
        self._inner: list[AsyncIterator[Delta]] = []  # the model streams the middleware chain opened

    async def events(self) -> AsyncGenerator[Event, None]:
        # The per-delta hot path: one loop with no helper calls per text delta (each costs ~0.1 µs).
        s = self.state
        n, parent = s.number, s.parent
        prompt, by_name = await self._prompt()
        acc = self.acc
        msg_id = acc.id
        yield (
            MessageResumed(n, parent, msg_id)
            if self.resume is not None
            else MessageStarted(n, parent, msg_id)
        )
        it: AsyncIterator[Delta] | None = None
        closed = False
        try:
            it = self._open_stream(prompt, by_name).__aiter__()
            anext = it.__anext__
            # The event loop's own scope class, made directly: ``CancelScope()`` looks the backend up
            # first (sniffio), about a fifth of a scope's cost, once per delta. On asyncio a native
            # cancel of the waiting task does the scope's work for a fraction of its cost (_task_stop).
            new_scope = type(CancelScope())
            stop = TaskStop() if new_scope.__module__ == _ASYNCIO_SCOPES and task_stop_works() else None
            while True:
                if s.stop_reason is not None:
                    raise Stop
                delta: Delta | None = None
                if stop is not None:
                    stop.arm()
                    s.scope = stop
                    try:
                        delta = await anext()
                    except StopAsyncIteration:
                        break
                    except CancelledError:
                        if not stop.caught():
                            raise
                    finally:
                        s.scope = None
                        stop.disarm()
                else:
                    delta = await _scoped_wait(s, new_scope, anext)
                    if delta is _END:
                        break
                # Text is the hot path: an identity check costs a third of a class pattern's (0.1 µs
                # less per delta); the other deltas go through the match in _fold.
                if type(delta) is TextChunk:
                    acc.text(delta.text)
                    yield TextDelta(n, parent, msg_id, delta.text)
                elif delta is None:
                    raise Stop  # our own cancel scope (or stop) caught the cancellation
                else:
                    event = self._fold(delta)
                    if event is not None:
                        yield event
            closed = True
        except Stop:
            if s.stop_reason is EndReason.INTERRUPTED:
                s.partial = acc.message(complete=False)
            s.usage = s.usage + acc.current_usage()
            raise
        except (anyio.get_cancelled_exc_class(), GeneratorExit):
            raise
        except Exception as e:
            s.usage = s.usage + acc.current_usage()
            raise self._classify_error(e) from e
        finally:
            await self._close(None if closed else it)
        for event in self._complete_calls():
            yield event
        s.usage = s.usage + acc.current_usage()
        message = self.message = acc.message(complete=True)
        yield MessageEnded(n, parent, msg_id, message, message.usage or Usage(), message.finish)

    async def _close(self, it: AsyncIterator[Delta] | None) -> None:
        """Close the stream the step read (unless it ended) and the model streams under the middleware."""
        if it is not None:
            await _close_stream(it)
        for inner in self._inner:
            await _close_stream(inner)
        self._inner.clear()

    async def _prompt(self) -> tuple[Prompt, dict[str, Tool]]:
        s = self.state
        run = s.run
        tools = await s.tools_now()
        specs = [t.spec() for t in tools]  # once per tool: a spec is built at each call
        by_name = {spec.name: t for spec, t in zip(specs, tools, strict=True)}
        messages: list[Message] = list(s.conversation.messages)
        if self.resume is not None:
            messages.append(self.resume)
        s.offered = by_name
        return Prompt(run.system, messages, specs, run.options, s.signal, self.resume is not None), by_name

    def _fold(self, delta: Delta) -> Event | None:
        """Fold one delta into the message; the event it makes, if any."""
        s, acc = self.state, self.acc
        match delta:
            case TextChunk(text=text):  # a subclass of TextChunk (events() takes TextChunk itself)
                acc.text(text)
                return TextDelta(s.number, s.parent, acc.id, text)
            case ReasoningChunk():
                acc.reasoning(delta)
                return ReasoningDelta(s.number, s.parent, acc.id, delta.text) if delta.text else None
            case ToolStart(id=call_id, name=name):
                acc.start_call(delta)
                return ToolCallStarted(s.number, s.parent, call_id, name)
            case ToolInput(id=call_id, json=fragment):
                c = acc.calls.get(call_id)
                if c is None:
                    raise ModelError(f"the model streamed input for an unknown tool call {call_id!r}")
                c.json.append(fragment)
                return ToolInputDelta(s.number, s.parent, call_id, fragment)
            case ToolReady(id=call_id, input=given):
                if call_id not in acc.calls:
                    raise ModelError(f"the model finished an unknown tool call {call_id!r}")
                return self._ready(call_id, given)
            case UsageChunk():
                acc.usage(delta)
            case Finish(reason=reason):
                acc.finish = reason
            case _:  # a model outside the Delta union
                raise HarnessUsageError(f"a model streamed {delta!r}, which is not a harness delta")
        return None

    def _ready(self, call_id: str, given: dict[str, Any] | None) -> ToolCallReady:
        c = self.acc.ready(call_id, given)
        offered = self.state.offered
        if c.name not in offered and (name := resolve_name(c.name, offered)) is not None:
            log.info("resolved the tool name %r to %r", c.name, name)
            c.name = name
        if c.problem is not None:
            self.problems[call_id] = c.problem
        return ToolCallReady(self.state.number, self.state.parent, call_id, c.name, c.input or {})

    def _complete_calls(self) -> Iterator[ToolCallReady]:
        """Calls never marked ready are complete at the end of the stream, unless the reply was cut at
        its output limit: then their input may be cut too, and they are not run."""
        cut = self.acc.finish is FinishReason.LENGTH
        for cid, c in self.acc.calls.items():
            if not c.ready:
                event = self._ready(cid, None)
                if cut:
                    self.problems[cid] = CUT_CALL.format(name=c.name)
                yield event

    def _open_stream(self, prompt: Prompt, by_name: dict[str, Tool]) -> AsyncIterator[Delta]:
        s = self.state
        model = s.run.model
        if not s.model_middleware:
            return model.stream(prompt)
        from_model = self._from_model

        def innermost(p: Prompt) -> AsyncIterator[Delta]:
            # Kept, so the step closes it even when a middleware raised without closing what it iterated.
            opened = ModelCall(s, model, p, by_name, from_model)
            self._inner.append(opened)
            return opened

        nxt: NextModel = innermost
        for mw in reversed(s.model_middleware):
            nxt = _bind_model(mw, nxt)
        return nxt(prompt)

    def _classify_error(self, e: Exception) -> Fatal:
        """A ModelError keeps its kind; other exceptions are the model's or, when a middleware raised
        them itself, the middleware's."""
        if isinstance(e, ModelError):
            return Fatal(e.kind, e)
        came_from_model = not self.state.model_middleware or raised_by_model(e, self._from_model)
        return Fatal(ErrorKind.MODEL_ERROR if came_from_model else ErrorKind.MIDDLEWARE_ERROR, e)


async def _scoped_wait(
    s: TurnState, new_scope: type[CancelScope], anext: Callable[[], Awaitable[Delta]]
) -> Delta | None:
    """The next delta awaited in an anyio scope ``cancel()`` cancels (trio): None when it did, ``_END``
    at the stream's end."""
    with new_scope() as scope:
        s.scope = scope
        try:
            return await anext()
        except StopAsyncIteration:
            return _END
        finally:
            s.scope = None
    return None


def _bind_model(mw: ModelMiddleware, nxt: NextModel) -> NextModel:
    def bound(p: Prompt) -> AsyncIterator[Delta]:
        return mw.stream(p, nxt)

    return bound


async def _close_stream(it: AsyncIterator[Delta]) -> None:
    with CancelScope(shield=True), anyio.move_on_after(2):
        try:
            await close_stream(it)
        except Exception:  # the model's cleanup failed; the turn already ends
            log.debug("closing the model stream failed", exc_info=True)


def _new_id() -> str:
    return "msg_" + os.urandom(8).hex()
