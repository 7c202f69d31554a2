"""Run: the tool loop.

A turn is driven by its consumer: ``__anext__`` pulls the model's deltas itself, so a streamed reply costs
no task switch per event. Tools run in tasks of a task group that the ``async with run.turn(...)`` block
owns; their events reach the consumer through a memory stream, one at a time, in the consumer's pace.
Every await of the consumer on the model or on tools sits in a short cancel scope that ``cancel()`` and
``interrupt()`` cancel, so stopping is immediate without polling and without a scope across a ``yield``.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, TypeVar, cast

import anyio
from anyio import CancelScope
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ._call import Call
from ._errors import HarnessUsageError, ModelError, Retry
from ._kinds import Delivery, EndReason, ErrorKind, FinishReason, Role
from ._messages import Message, Part, Reasoning, Text, ToolCall, ToolResult
from ._options import Options, StopContext
from ._pause import Answer, Approval, Decision, Pending, Question
from ._tools import Result, Tool, ToolSource
from ._usage import Usage
from ._validate import input_error
from .events import (
    Event,
    InputRequested,
    Interjected,
    MessageEnded,
    MessageResumed,
    MessageStarted,
    ReasoningDelta,
    StepEnded,
    StepStarted,
    TextDelta,
    ToolCallReady,
    ToolCallStarted,
    ToolDecided,
    ToolEnded,
    ToolInputDelta,
    ToolProgress,
    TurnEnded,
    TurnStarted,
)
from .middleware import ModelMiddleware, NextModel, NextTool, ToolMiddleware
from .model import (
    CancelSignal,
    Delta,
    Finish,
    Model,
    Prompt,
    ReasoningChunk,
    TextChunk,
    ToolInput,
    ToolReady,
    ToolStart,
    UsageChunk,
)

__all__ = ["Ended", "Resume", "Run", "TurnStream"]

log = logging.getLogger("harness.run")

T = TypeVar("T")

CANCELLED_TEXT = "Cancelled"
SKIPPED_TEXT = "Skipped: the user sent a message"


@dataclass(frozen=True, slots=True)
class Resume:
    """Continue an interrupted reply from the host's edit of it: ``run.turn(Resume(edited))``."""

    message: Message


@dataclass(frozen=True, slots=True)
class Ended:
    """How the last turn ended. ``appended`` and ``run.messages()`` hold complete steps only."""

    reason: EndReason
    appended: tuple[Message, ...] = ()
    pending: tuple[Pending, ...] = ()
    usage: Usage = Usage()
    error: BaseException | None = None
    error_kind: ErrorKind | None = None
    finish: FinishReason | None = None
    partial: Message | None = None
    queued: tuple[Message, ...] = field(default_factory=tuple[Message, ...])


class Run:
    """A conversation with a model and tools; one turn at a time.

    ``Run(model, tools, *, system=None, options=None, middleware=(), messages=(), pending=(), context=None)``
    """

    def __init__(
        self,
        model: Model,
        tools: ToolSource,
        *,
        system: str | None = None,
        options: Options | None = None,
        middleware: Sequence[ModelMiddleware | ToolMiddleware] = (),
        messages: Sequence[Message] = (),
        pending: Sequence[Pending] = (),
        context: Any = None,
    ) -> None:
        if not isinstance(tools, ToolSource):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise HarnessUsageError(f"tools must be a ToolSource such as Tools(...), got {tools!r}")
        self.model = model
        self.tools = tools
        self.system = system
        self.options = options or Options()
        self.middleware: tuple[ModelMiddleware | ToolMiddleware, ...] = tuple(middleware)
        self.context = context
        self._model_mw = [m for m in self.middleware if isinstance(m, ModelMiddleware)]
        self._tool_mw = [m for m in self.middleware if isinstance(m, ToolMiddleware)]
        for m in self.middleware:
            if not isinstance(m, ModelMiddleware | ToolMiddleware):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise HarnessUsageError(f"not a ModelMiddleware or ToolMiddleware: {m!r}")
        self._messages: list[Message] = list(messages)
        self._pending: list[Pending] = list(pending)
        self._turns = 0
        self._ended: Ended | None = None
        self._active: _Turn | None = None

    # -- public API -------------------------------------------------------------------------------

    def turn(self, input: Message | Sequence[Answer] | Resume) -> TurnStream:
        """Start a turn: ``async with run.turn(message) as events: async for event in events: ...``."""
        if self._active is not None and not self._active.finished:
            raise HarnessUsageError("a turn is already running on this Run; one turn at a time")
        if isinstance(input, Message):
            if input.role is not Role.USER:
                raise HarnessUsageError("a turn starts from a user message")
            if self._pending:
                raise HarnessUsageError(
                    f"{len(self._pending)} call(s) await input: answer them with turn([Answer(...)]) first"
                )
        elif isinstance(input, Resume):
            if input.message.role is not Role.ASSISTANT:
                raise HarnessUsageError("Resume takes the edited assistant message")
            if self._pending:
                raise HarnessUsageError("cannot Resume while calls await input")
            if not self._messages or self._messages[-1].role is not Role.USER:
                raise HarnessUsageError("Resume is valid only when the run's last message is a user message")
        else:
            answers = list(input)
            if not self._pending:
                raise HarnessUsageError("no call awaits input: start a turn with a user message")
            for a in answers:
                if not isinstance(a, Answer):  # pyright: ignore[reportUnnecessaryIsInstance]
                    raise HarnessUsageError(
                        f"turn() takes a Message, a list of Answer or a Resume, not {a!r}"
                    )
            waiting = {p.call.id for p in self._pending}
            given = [a.call_id for a in answers]
            unknown = sorted(set(given) - waiting)
            if unknown:
                raise HarnessUsageError(f"no pending call with id {', '.join(unknown)}")
            if len(set(given)) != len(given):
                raise HarnessUsageError("one Answer per pending call")
            missing = sorted(waiting - set(given))
            if missing:
                raise HarnessUsageError(f"pending call(s) {', '.join(missing)} not answered")
            input = answers
        self._turns += 1
        turn = _Turn(self, self._turns, input)
        self._active = turn
        return TurnStream(turn)

    def cancel(self) -> None:
        """Cancel the running turn (no-op when none runs): it ends ``Cancelled``, the step discarded."""
        if self._active is not None and not self._active.finished:
            self._active.request_stop(EndReason.CANCELLED)

    def interrupt(self) -> None:
        """Stop the reply; the turn ends ``Interrupted`` with ``ended().partial`` to edit and Resume."""
        if self._active is not None and not self._active.finished:
            self._active.request_stop(EndReason.INTERRUPTED)

    def interject(self, message: Message, delivery: Delivery = Delivery.STEER) -> None:
        """Give the running turn a user message: ``STEER`` at the next step boundary, ``QUEUE`` at the end."""
        if self._active is None or not self._active.started or self._active.finished:
            raise HarnessUsageError("interject() needs a running turn: use turn() to start one")
        if message.role is not Role.USER:
            raise HarnessUsageError("interject() takes a user message")
        if delivery is Delivery.STEER:
            self._active.steer.append(message)
        else:
            self._active.queue.append(message)

    def messages(self) -> list[Message]:
        return list(self._messages)

    def pending(self) -> list[Pending]:
        return list(self._pending)

    def ended(self) -> Ended | None:
        return self._ended

    def is_running(self) -> bool:
        return self._active is not None and self._active.running

    def fork(self) -> Run:
        """A new Run with this one's configuration and a copy of its messages; nothing pending."""
        return Run(
            self.model,
            self.tools,
            system=self.system,
            options=self.options,
            middleware=self.middleware,
            messages=self._messages,
            context=self.context,
        )


class TurnStream:
    """The events of one turn. Enter it with ``async with``; leaving the block early cancels the turn."""

    def __init__(self, turn: _Turn) -> None:
        self._turn = turn
        self._tg: TaskGroup | None = None
        self._gen: AsyncGenerator[Event, None] | None = None
        self._exhausted = False

    async def __aenter__(self) -> TurnStream:
        if self._tg is not None:
            raise HarnessUsageError("a turn's events are entered once")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        self._turn.tg = tg
        return self

    def __aiter__(self) -> TurnStream:
        return self

    async def __anext__(self) -> Event:
        if self._tg is None:
            raise HarnessUsageError("use `async with run.turn(...) as events:` and iterate `events`")
        if self._exhausted:
            raise StopAsyncIteration
        if self._gen is None:
            self._gen = self._turn.events()
        try:
            return await self._gen.__anext__()
        except StopAsyncIteration:
            self._exhausted = True
            error = self._turn.take_raise()
            if error is not None:
                raise error from None
            raise

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        turn = self._turn
        try:
            if not turn.finished:
                turn.abort()
                if self._gen is None:
                    turn.end_unstarted()
            if self._gen is not None and not self._exhausted:
                self._exhausted = True
                await _aclose(self._gen)
        finally:
            tg = self._tg
            assert tg is not None
            if exc is not None and not isinstance(exc, anyio.get_cancelled_exc_class()):
                # The consumer's own exception goes on as it is, not wrapped in an exception group.
                tg.cancel_scope.cancel()
                await tg.__aexit__(None, None, None)
                suppress = False
            else:
                suppress = await tg.__aexit__(exc_type, exc, tb)
        if exc_type is None:
            error = turn.take_raise()
            if error is not None:
                raise error
        return suppress


async def _aclose(gen: AsyncGenerator[Event, None]) -> None:
    await gen.aclose()


# -- the turn ------------------------------------------------------------------------------------------


class _Stop(Exception):
    """The turn was cancelled or interrupted while the consumer waited."""


class _Fatal(Exception):
    def __init__(self, kind: ErrorKind, error: BaseException) -> None:
        super().__init__(str(error))
        self.kind = kind
        self.error = error


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


class _Accumulator:
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

    def usage(self, d: UsageChunk) -> None:
        for name in ("input", "output", "cache_read", "cache_write"):
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
            c.input = {}
            c.problem = f"{c.name}: invalid input: the arguments are not valid JSON ({e.msg} at {e.pos})"
            return c
        if not isinstance(value, dict):
            c.input = {}
            c.problem = f"{c.name}: invalid input: the arguments must be a JSON object"
        else:
            c.input = value  # pyright: ignore[reportUnknownMemberType]
        return c


@dataclass(slots=True)
class _CallSlot:
    """One tool call of a step being run."""

    index: int
    call: ToolCall
    result: ToolResult | None = None
    pending: Pending | None = None
    started: bool = False
    answers: Mapping[str, Any] = field(default_factory=dict[str, Any])
    state: Any = None


class _Item:
    __slots__ = ("ack", "event", "fatal", "slot")

    def __init__(
        self,
        event: Event,
        ack: anyio.Event | None = None,
        slot: _CallSlot | None = None,
        fatal: _Fatal | None = None,
    ) -> None:
        self.event = event
        self.ack = ack
        self.slot = slot
        self.fatal = fatal


class _Turn:
    """The state of one turn; ``events()`` is its body."""

    def __init__(self, run: Run, number: int, input: Message | list[Answer] | Resume) -> None:
        self.run = run
        self.number = number
        self.input = input
        self.tg: TaskGroup | None = None
        self.started = False
        self.running = False
        self.finished = False
        self.steer: list[Message] = []
        self.queue: list[Message] = []
        self.signal = CancelSignal()
        self.stop_reason: EndReason | None = None
        self.scope: CancelScope | None = None
        self.tool_scopes: set[CancelScope] = set()
        self.usage = Usage()
        self.retries = 0
        self.appended: list[Message] = []
        self.to_raise: BaseException | None = None
        self.partial: Message | None = None
        self.acc: _Accumulator | None = None
        self.offered: dict[str, Tool] = {}
        self.parent: str | None = None
        self.committed: tuple[int, int, list[Pending]] | None = None
        self._problems: dict[str, str] = {}

    # -- control from outside ---------------------------------------------------------------------

    def request_stop(self, reason: EndReason) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason
        self.signal.set()
        if self.scope is not None:
            self.scope.cancel()
        for s in list(self.tool_scopes):
            s.cancel()

    def abort(self) -> None:
        """The consumer left the block: stop everything, deliver nothing more."""
        self.request_stop(EndReason.CANCELLED)

    def end_unstarted(self) -> None:
        self.finished = True
        self.running = False
        self.run._ended = Ended(EndReason.CANCELLED, queued=tuple(self.steer + self.queue))  # pyright: ignore[reportPrivateUsage]

    def take_raise(self) -> BaseException | None:
        e, self.to_raise = self.to_raise, None
        return e

    # -- the body ---------------------------------------------------------------------------------

    async def events(self) -> AsyncGenerator[Event, None]:
        run = self.run
        self.started = self.running = True
        n, parent = self.number, self.parent
        reason = EndReason.DONE
        error: BaseException | None = None
        kind: ErrorKind | None = None
        finish: FinishReason | None = None
        try:
            yield TurnStarted(n, parent)
            step = 0
            resume_msg: Message | None = None
            if isinstance(self.input, Message):
                self._append(self.input)
            elif isinstance(self.input, Resume):
                resume_msg = self.input.message
            else:
                # A turn of answers: the pending calls run again as step 0.
                yield StepStarted(n, parent, 0)
                async with aclosing(self._resume_calls(self.input)) as g:
                    async for ev in g:
                        yield ev
                self._commit()
                yield StepEnded(n, parent, 0)
                if run._pending:  # pyright: ignore[reportPrivateUsage]
                    reason, finish = EndReason.AWAITING_INPUT, self._last_finish()
                    raise _Done
                async with aclosing(self._land_steer()) as g:
                    async for ev in g:
                        yield ev
            self._commit()
            while True:
                step += 1
                yield StepStarted(n, parent, step)
                async with aclosing(self._model_step(resume_msg)) as g:
                    async for ev in g:
                        yield ev
                resume_msg = None
                assert self.acc is not None
                message = self.acc.message(complete=True)
                self.acc = None
                finish = message.finish
                calls = message.tool_calls
                if not calls:
                    self._append(message)
                    self._commit()
                    yield StepEnded(n, parent, step)
                    if self.steer:
                        async with aclosing(self._land_steer()) as g:
                            async for ev in g:
                                yield ev
                    elif self.queue:
                        m = self.queue.pop(0)
                        self._append(m)
                        self._commit()
                        yield Interjected(n, parent, m, Delivery.QUEUE)
                    else:
                        reason = EndReason.DONE
                        raise _Done
                else:
                    slots = [_CallSlot(i, c) for i, c in enumerate(calls)]
                    async with aclosing(self._run_calls(slots, self._problems)) as g:
                        async for ev in g:
                            yield ev
                    self._check_retries()
                    self._append(message)
                    results = [s.result for s in slots if s.result is not None]
                    if results:
                        self._append(Message(Role.USER, tuple(results)))
                    paused = [s.pending for s in slots if s.pending is not None]
                    if paused:
                        run._pending = paused  # pyright: ignore[reportPrivateUsage]
                    self._commit()
                    yield StepEnded(n, parent, step)
                    if paused:
                        reason = EndReason.AWAITING_INPUT
                        raise _Done
                    async with aclosing(self._land_steer()) as g:
                        async for ev in g:
                            yield ev
                if self._should_stop(step):
                    reason = EndReason.STOPPED
                    raise _Done
        except _Done:
            pass
        except _Stop:
            reason, finish = self.stop_reason or EndReason.CANCELLED, None
            self._discard()
        except _Fatal as f:
            reason, kind, error, finish = EndReason.FAILED, f.kind, f.error, None
            self._discard()
            if isinstance(error, HarnessUsageError):
                self.to_raise = error
        except (anyio.get_cancelled_exc_class(), GeneratorExit):
            # Cancelled from outside, or the consumer left the block: record it, deliver nothing more.
            self._discard()
            self._finish(EndReason.CANCELLED, None, None, None)
            raise
        if reason is EndReason.AWAITING_INPUT:
            yield InputRequested(n, parent, tuple(run._pending))  # pyright: ignore[reportPrivateUsage]
        self._finish(reason, error, kind, finish)
        yield TurnEnded(n, parent, reason, self.usage, error, finish)

    # -- steps ------------------------------------------------------------------------------------

    def _append(self, message: Message) -> None:
        self.run._messages.append(message)  # pyright: ignore[reportPrivateUsage]
        self.appended.append(message)

    def _commit(self) -> None:
        """A step is complete: what the run holds now survives a later failure or cancel."""
        self.committed = (len(self.run._messages), len(self.appended), list(self.run._pending))  # pyright: ignore[reportPrivateUsage]

    def _discard(self) -> None:
        """Drop the step in progress: back to the last complete step."""
        run = self.run
        if self.committed is None:
            # Nothing ran yet: the turn's user message still belongs to the conversation.
            if isinstance(self.input, Message) and not self.appended:
                self._append(self.input)
            return
        n_messages, n_appended, pending = self.committed
        del run._messages[n_messages:]  # pyright: ignore[reportPrivateUsage]
        del self.appended[n_appended:]
        run._pending = pending  # pyright: ignore[reportPrivateUsage]

    def _finish(
        self,
        reason: EndReason,
        error: BaseException | None,
        kind: ErrorKind | None,
        finish: FinishReason | None,
    ) -> None:
        if self.finished:
            return
        self.finished = True
        self.running = False
        run = self.run
        run._ended = Ended(  # pyright: ignore[reportPrivateUsage]
            reason,
            appended=tuple(self.appended),
            pending=tuple(run._pending),  # pyright: ignore[reportPrivateUsage]
            usage=self.usage,
            error=error,
            error_kind=kind,
            finish=finish,
            partial=self.partial if reason is EndReason.INTERRUPTED else None,
            queued=tuple(self.steer + self.queue),
        )

    def _last_finish(self) -> FinishReason | None:
        for m in reversed(self.run._messages):  # pyright: ignore[reportPrivateUsage]
            if m.role is Role.ASSISTANT:
                return m.finish
        return None

    def _should_stop(self, step: int) -> bool:
        ctx = StopContext(step, self.usage, self.run._messages)  # pyright: ignore[reportPrivateUsage]
        return any(p(ctx) for p in self.run.options.stop)

    def _check_retries(self) -> None:
        if self.retries > self.run.options.tool_retries:
            raise _Fatal(
                ErrorKind.TOOL_RETRIES_EXCEEDED,
                RuntimeError(
                    f"the model made {self.retries} failed tool calls this turn "
                    f"(Options.tool_retries is {self.run.options.tool_retries})"
                ),
            )

    async def _land_steer(self) -> AsyncGenerator[Event, None]:
        while self.steer:
            m = self.steer.pop(0)
            self._append(m)
            yield Interjected(self.number, self.parent, m, Delivery.STEER)

    # -- the model --------------------------------------------------------------------------------

    async def _tools_now(self) -> list[Tool]:
        try:
            return list(await self._guard(self.run.tools.tools()))
        except (_Stop, anyio.get_cancelled_exc_class()):
            raise
        except HarnessUsageError as e:
            raise _Fatal(ErrorKind.TOOL_ERROR, e) from e
        except Exception as e:
            raise _Fatal(ErrorKind.TOOL_ERROR, e) from e

    async def _guard(self, aw: Awaitable[T]) -> T:
        """Await ``aw`` so that ``cancel()``/``interrupt()`` stop it at once."""
        if self.stop_reason is not None:
            _close(aw)
            raise _Stop
        with CancelScope() as scope:
            self.scope = scope
            try:
                return await aw
            finally:
                self.scope = None
        raise _Stop  # the scope swallowed our own cancellation

    async def _model_step(self, resume: Message | None) -> AsyncGenerator[Event, None]:
        run = self.run
        n, parent = self.number, self.parent
        tools = await self._tools_now()
        by_name = {t.spec().name: t for t in tools}
        specs = [t.spec() for t in tools]
        messages: list[Message] = list(run._messages)  # pyright: ignore[reportPrivateUsage]
        if resume is not None:
            msg_id = resume.id or _new_id()
            acc = _Accumulator(msg_id, resume.parts)
            messages.append(resume)
            prompt = Prompt(run.system, messages, specs, run.options, self.signal, True)
        else:
            msg_id = _new_id()
            acc = _Accumulator(msg_id)
            prompt = Prompt(run.system, messages, specs, run.options, self.signal, False)
        self.acc = acc
        self._problems = {}
        self.offered = by_name
        from_model: list[BaseException] = []
        yield (MessageResumed(n, parent, msg_id) if resume is not None else MessageStarted(n, parent, msg_id))
        it: AsyncIterator[Delta] | None = None
        closed = False
        try:
            it = self._open_stream(prompt, by_name, from_model).__aiter__()
            anext = it.__anext__
            while True:
                if self.stop_reason is not None:
                    raise _Stop
                delta: Delta | None = None
                with CancelScope() as scope:
                    self.scope = scope
                    try:
                        delta = await anext()
                    except StopAsyncIteration:
                        break
                    finally:
                        self.scope = None
                if delta is None:
                    raise _Stop  # our own cancel scope caught the cancellation
                t = type(delta)
                if t is TextChunk:
                    text = cast(TextChunk, delta).text
                    acc.text(text)
                    yield TextDelta(n, parent, msg_id, text)
                elif t is ReasoningChunk:
                    assert isinstance(delta, ReasoningChunk)
                    acc.reasoning(delta)
                    if delta.text:
                        yield ReasoningDelta(n, parent, msg_id, delta.text)
                elif t is ToolStart:
                    assert isinstance(delta, ToolStart)
                    acc.calls[delta.id] = _PendingCall(delta.name, [])
                    acc.builders.append(_Builder("call", [], call_id=delta.id))
                    yield ToolCallStarted(n, parent, delta.id, delta.name)
                elif t is ToolInput:
                    assert isinstance(delta, ToolInput)
                    c = acc.calls.get(delta.id)
                    if c is None:
                        raise ModelError(f"the model streamed input for an unknown tool call {delta.id!r}")
                    c.json.append(delta.json)
                    yield ToolInputDelta(n, parent, delta.id, delta.json)
                elif t is ToolReady:
                    assert isinstance(delta, ToolReady)
                    if delta.id not in acc.calls:
                        raise ModelError(f"the model finished an unknown tool call {delta.id!r}")
                    c = acc.ready(delta.id, delta.input)
                    if c.problem is not None:
                        self._problems[delta.id] = c.problem
                    yield ToolCallReady(n, parent, delta.id, c.name, c.input or {})
                elif t is UsageChunk:
                    assert isinstance(delta, UsageChunk)
                    acc.usage(delta)
                elif t is Finish:
                    assert isinstance(delta, Finish)
                    acc.finish = delta.reason
                else:
                    raise HarnessUsageError(f"a model streamed {delta!r}, which is not a harness delta")
            closed = True
        except _Stop:
            self._stop_partial(acc)
            raise
        except (anyio.get_cancelled_exc_class(), GeneratorExit):
            raise
        except Exception as e:
            self.usage = self.usage + acc.current_usage()
            raise self._classify_model_error(e, from_model) from e
        finally:
            if not closed and it is not None:
                await self._close_stream(it)
        # Calls never marked ready are complete at the end of the stream.
        for cid, c in acc.calls.items():
            if not c.ready:
                acc.ready(cid, None)
                if c.problem is not None:
                    self._problems[cid] = c.problem
                yield ToolCallReady(n, parent, cid, c.name, c.input or {})
        self.usage = self.usage + acc.current_usage()
        message = acc.message(complete=True)
        yield MessageEnded(n, parent, msg_id, message, message.usage or Usage(), message.finish)

    def _stop_partial(self, acc: _Accumulator) -> None:
        if self.stop_reason is EndReason.INTERRUPTED:
            self.partial = acc.message(complete=False)
        self.usage = self.usage + acc.current_usage()

    async def _close_stream(self, it: AsyncIterator[Delta]) -> None:
        with CancelScope(shield=True), anyio.move_on_after(2):
            try:
                await _aclose_delta(it)
            except Exception:  # the model's cleanup failed; the turn already ends
                log.debug("closing the model stream failed", exc_info=True)

    def _open_stream(
        self, prompt: Prompt, by_name: dict[str, Tool], from_model: list[BaseException]
    ) -> AsyncIterator[Delta]:
        model = self.run.model
        mws = self.run._model_mw  # pyright: ignore[reportPrivateUsage]
        if not mws:
            return model.stream(prompt)

        async def innermost(p: Prompt) -> AsyncIterator[Delta]:
            # The prompt that reaches the model decides which tools may run.
            offered = {s.name for s in p.tools}
            self.offered = {k: v for k, v in by_name.items() if k in offered}
            try:
                async for d in model.stream(p):
                    yield d
            except Exception as e:
                from_model.append(e)
                raise

        nxt: NextModel = innermost
        for mw in reversed(mws):
            nxt = _bind_model(mw, nxt)
        return nxt(prompt)

    def _classify_model_error(self, e: Exception, from_model: list[BaseException]) -> _Fatal:
        """A ModelError keeps its kind; other exceptions are the model's or, when a middleware raised
        them itself, the middleware's."""
        if isinstance(e, ModelError):
            return _Fatal(e.kind, e)
        came_from_model = not self.run._model_mw or any(x is e for x in from_model)  # pyright: ignore[reportPrivateUsage]
        return _Fatal(ErrorKind.MODEL_ERROR if came_from_model else ErrorKind.MIDDLEWARE_ERROR, e)

    # -- tools ------------------------------------------------------------------------------------

    async def _run_calls(
        self, slots: list[_CallSlot], problems: Mapping[str, str]
    ) -> AsyncGenerator[Event, None]:
        """Run a step's calls: read-only ones at once, the others one at a time; results in model order."""
        concurrent: list[_CallSlot] = []
        serial: list[_CallSlot] = []
        for s in slots:
            tool = self.offered.get(s.call.name)
            if tool is not None and s.call.id not in problems and tool.spec().hints.read_only:
                concurrent.append(s)
            else:
                serial.append(s)
        send, receive = anyio.create_memory_object_stream[_Item](float("inf"))
        fatal: list[_Fatal] = []
        try:
            groups: list[list[_CallSlot]] = []
            if concurrent:
                groups.append(concurrent)
            groups.extend([s] for s in serial)
            for group in groups:
                if self.stop_reason is not None or fatal:
                    break
                if self.steer:
                    for s in group:
                        s.result = ToolResult(s.call.id, (Text(SKIPPED_TEXT),), True, s.call.name)
                        yield ToolEnded(self.number, self.parent, s.call.id, Result.failure(SKIPPED_TEXT))
                    continue
                async with aclosing(self._run_group(group, problems, send, receive, fatal)) as g:
                    async for ev in g:
                        yield ev
        finally:
            send.close()
            receive.close()
        if fatal:
            raise fatal[0]
        if self.stop_reason is not None:
            for s in slots:
                if not s.started:
                    s.result = ToolResult(s.call.id, (Text(CANCELLED_TEXT),), True, s.call.name)
                    yield ToolEnded(self.number, self.parent, s.call.id, Result.failure(CANCELLED_TEXT))
            raise _Stop

    async def _run_group(
        self,
        group: list[_CallSlot],
        problems: Mapping[str, str],
        send: MemoryObjectSendStream[_Item],
        receive: MemoryObjectReceiveStream[_Item],
        fatal: list[_Fatal],
    ) -> AsyncGenerator[Event, None]:
        tg = self.tg
        assert tg is not None, "the turn's task group is entered by `async with run.turn(...)`"
        left = 0
        for s in group:
            s.started = True
            left += 1
            tg.start_soon(self._call_task, s, problems.get(s.call.id), send.clone())
        while left:
            if self.stop_reason is not None or fatal:
                item = await receive.receive()  # tools were cancelled; collect their ends
            else:
                try:
                    item = await self._guard(receive.receive())
                except _Stop:
                    for sc in list(self.tool_scopes):
                        sc.cancel()
                    continue
            if item.slot is not None:
                left -= 1
                if item.fatal is not None:
                    fatal.append(item.fatal)
                    for sc in list(self.tool_scopes):
                        sc.cancel()
                    continue
            yield item.event
            if item.ack is not None:
                item.ack.set()

    async def _call_task(
        self, slot: _CallSlot, problem: str | None, send: MemoryObjectSendStream[_Item]
    ) -> None:
        run = self.run
        call = slot.call
        outcome: Result | BaseException = Result.failure(CANCELLED_TEXT)
        fatal: _Fatal | None = None
        host = _Host(self, send)
        context = Call(
            call,
            host=host,
            run=run,
            context=run.context,
            spec=None,
            answers=slot.answers,
            state=slot.state,
        )
        with send:
            with CancelScope() as scope:
                self.tool_scopes.add(scope)
                if self.stop_reason is not None:
                    scope.cancel()
                try:
                    outcome, fatal = await self._invoke(call, context, problem)
                finally:
                    self.tool_scopes.discard(scope)
            if scope.cancelled_caught:
                outcome, fatal = Result.failure(CANCELLED_TEXT), None
            item: _Item
            if fatal is not None:
                item = _Item(ToolEnded(self.number, self.parent, call.id, fatal.error), None, slot, fatal)
            else:
                pending = context.pending()
                if pending is not None:
                    slot.pending = pending
                    outcome = Result.failure("(awaiting input)")
                result = outcome if isinstance(outcome, Result) else Result.failure(_describe(outcome))
                if pending is None:
                    slot.result = ToolResult(call.id, result.content, result.error, call.name)
                item = _Item(ToolEnded(self.number, self.parent, call.id, outcome), None, slot)
            try:
                send.send_nowait(item)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    async def _invoke(
        self, call: ToolCall, context: Call, problem: str | None
    ) -> tuple[Result | BaseException, _Fatal | None]:
        """The call through the tool middleware; returns the outcome, or a fatal error for the turn."""
        tool = self.offered.get(call.name)
        if tool is None:
            self.retries += 1
            names = ", ".join(sorted(self.offered)) or "(none)"
            return Result.failure(f"unknown tool {call.name!r}; the tools are: {names}"), None
        spec = tool.spec()
        context.spec = spec
        if problem is None:
            why = input_error(spec.schema, call.input)
            if why is not None:
                problem = f"{call.name}: {why}"
        if problem is not None:
            self.retries += 1
            return Result.failure(problem), None
        raised: list[BaseException] = []

        async def innermost(c: ToolCall, ctx: Call) -> Result:
            try:
                return await tool.call(dict(c.input), ctx)
            except Retry as e:
                self.retries += 1
                return Result.failure(str(e) or "retry")
            except HarnessUsageError as e:
                raised.append(e)
                raise
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as e:
                log.warning("tool %s raised", c.name, exc_info=True)
                raised.append(e)
                return Result.failure(_describe(e))

        nxt: NextTool = innermost
        for mw in reversed(self.run._tool_mw):  # pyright: ignore[reportPrivateUsage]
            nxt = _bind_tool(mw, nxt)
        try:
            result = await nxt(call, context)
        except anyio.get_cancelled_exc_class():
            raise
        except Retry as e:
            self.retries += 1
            return Result.failure(str(e) or "retry"), None
        except Exception as e:
            if raised and raised[-1] is e:
                return e, _Fatal(ErrorKind.TOOL_ERROR, e)
            log.warning("tool middleware raised on %s", call.name, exc_info=True)
            return e, _Fatal(ErrorKind.MIDDLEWARE_ERROR, e)
        if not isinstance(result, Result):  # pyright: ignore[reportUnnecessaryIsInstance]
            e = HarnessUsageError(f"tool {call.name!r} returned {type(result).__name__}, not a Result")
            return e, _Fatal(ErrorKind.TOOL_ERROR, e)
        if raised and not isinstance(raised[-1], HarnessUsageError) and result.error:
            return raised[-1], None
        return result, None

    async def _resume_calls(self, answers: list[Answer]) -> AsyncGenerator[Event, None]:
        """Step 0 of a turn of answers: decide, then run the pending calls again."""
        run = self.run
        pending = list(run._pending)  # pyright: ignore[reportPrivateUsage]
        by_id = {a.call_id: a for a in answers}
        tools = await self._tools_now()
        self.offered = {t.spec().name: t for t in tools}
        slots: list[_CallSlot] = []
        denied_slots: list[_CallSlot] = []
        for i, p in enumerate(pending):
            a = by_id[p.call.id].answers
            denied: Decision | None = None
            for need in p.needs:
                value = a.get(need.id)
                if isinstance(need, Approval):
                    if not isinstance(value, Decision):
                        raise _Fatal(
                            ErrorKind.TOOL_ERROR,
                            HarnessUsageError(f"call {p.call.id}: the approval {need.id!r} needs a Decision"),
                        )
                    yield ToolDecided(self.number, self.parent, p.call.id, need.id, value)
                    if not value.allowed and denied is None:
                        denied = value
                elif isinstance(need, Question) and isinstance(value, Decision):  # pyright: ignore[reportUnnecessaryIsInstance]
                    yield ToolDecided(self.number, self.parent, p.call.id, need.id, value)
            slot = _CallSlot(i, p.call, answers=a, state=p.state)
            if denied is not None and p.state is None:
                text = f"Denied: {denied.reason or 'the user said no'}"
                slot.result = ToolResult(p.call.id, (Text(text),), True, p.call.name)
                slot.started = True
                denied_slots.append(slot)
            else:
                slots.append(slot)
        for s in denied_slots:
            yield ToolEnded(
                self.number, self.parent, s.call.id, Result.failure(s.result.text if s.result else "")
            )
        async with aclosing(self._run_calls(slots, {})) as g:
            async for ev in g:
                yield ev
        self._check_retries()
        all_slots = sorted(slots + denied_slots, key=lambda s: s.index)
        new_results = {s.call.id: s.result for s in all_slots if s.result is not None}
        self._merge_results(new_results)
        run._pending = [s.pending for s in all_slots if s.pending is not None]  # pyright: ignore[reportPrivateUsage]

    def _merge_results(self, new_results: Mapping[str, ToolResult | None]) -> None:
        msgs = self.run._messages  # pyright: ignore[reportPrivateUsage]
        # The step's assistant message is the last assistant message; its results follow it.
        idx = max((i for i, m in enumerate(msgs) if m.role is Role.ASSISTANT), default=-1)
        if idx < 0:
            raise _Fatal(
                ErrorKind.TOOL_ERROR, HarnessUsageError("pending calls without their assistant message")
            )
        assistant = msgs[idx]
        existing: dict[str, ToolResult] = {}
        if idx + 1 < len(msgs):
            existing = {r.call_id: r for r in msgs[idx + 1].tool_results}
        merged = dict(existing)
        merged.update({k: v for k, v in new_results.items() if v is not None})
        ordered = tuple(merged[c.id] for c in assistant.tool_calls if c.id in merged)
        message = Message(Role.USER, ordered)
        if idx + 1 < len(msgs):
            msgs[idx + 1] = message
        else:
            msgs.append(message)
        self.appended.append(message)


class _Done(Exception):
    pass


class _Host:
    """The run's side of a ``Call``: progress goes to the consumer, who acknowledges it."""

    __slots__ = ("send", "turn")

    def __init__(self, turn: _Turn, send: MemoryObjectSendStream[_Item]) -> None:
        self.turn = turn
        self.send = send

    async def emit_progress(self, call_id: str, value: Any) -> None:
        ack = anyio.Event()
        await self.send.send(_Item(ToolProgress(self.turn.number, self.turn.parent, call_id, value), ack))
        await ack.wait()

    async def emit_event(self, event: Any) -> None:
        ack = anyio.Event()
        await self.send.send(_Item(event, ack))
        await ack.wait()

    def is_cancelled(self) -> bool:
        return self.turn.signal.is_set()


def _bind_model(mw: ModelMiddleware, nxt: NextModel) -> NextModel:
    def bound(p: Prompt) -> AsyncIterator[Delta]:
        return mw.stream(p, nxt)

    return bound


def _bind_tool(mw: ToolMiddleware, nxt: NextTool) -> NextTool:
    async def bound(c: ToolCall, ctx: Call) -> Result:
        return await mw.call(c, ctx, nxt)

    return bound


async def _aclose_delta(it: AsyncIterator[Delta]) -> None:
    aclose: Callable[[], Awaitable[None]] | None = getattr(it, "aclose", None)
    if aclose is not None:
        await aclose()


def _close(aw: Awaitable[Any]) -> None:
    close = getattr(aw, "close", None)
    if close is not None:
        close()


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _new_id() -> str:
    return "msg_" + os.urandom(8).hex()
