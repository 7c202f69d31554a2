"""One turn, in pydantic-ai's phases: the user prompt, then steps of a model request and its tool calls.

``Turn.events()`` is the turn's body. ``UserPrompt`` lands the input (a user message, a Resume, or the
answers, whose calls run again as step 0); each ``Step`` is a ``ModelRequest`` (``_step_model``) and, when
the reply has calls, ``CallTools`` (``_step_tools``), then the step boundary where steering messages land;
a reply without calls that would end the turn is first put to the ``EndMiddleware``, whose message (a stop
hook's "go on: ...") lands like a steering one and the turn takes another step.
A phase that ends the turn leaves an ``End`` in its ``end``; cancel and failure unwind as ``Stop`` and
``Fatal``. Whatever the way out, the run keeps complete steps only (``TurnState.discard``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import aclosing

import anyio

from ._errors import HarnessUsageError
from ._kinds import Delivery, EndReason, ErrorKind, Role
from ._messages import Message
from ._pause import Answer
from ._state import End, Ended, Fatal, Resume, Stop, TurnPhase, TurnState
from ._step_model import ModelRequest
from ._step_tools import CallSlot, CallTools, ResumedCalls
from .events import Event, InputRequested, Interjected, StepEnded, StepStarted, TurnEnded, TurnStarted
from .middleware import TurnEnding

__all__ = ["Step", "Turn", "UserPrompt"]

# Python has no ``yield from`` for async generators, so each phase's events are relayed with
# ``async with aclosing(...)``: a consumer that leaves closes the phase (its model stream, its tool calls)
# at once, in this task, rather than whenever the generator is collected.


class Turn:
    """The state of one turn and its body; the run controls it through ``request_stop`` and ``state``."""

    __slots__ = ("input", "phase", "state", "to_raise")

    def __init__(self, state: TurnState, input: Message | Sequence[Answer] | Resume) -> None:
        self.state = state
        self.input = input
        self.phase = TurnPhase.CREATED
        self.to_raise: BaseException | None = None

    # -- control from outside ---------------------------------------------------------------------

    def request_stop(self, reason: EndReason) -> None:
        self.state.request_stop(reason)

    def abort(self) -> None:
        """The consumer left the block: stop everything, deliver nothing more."""
        self.state.request_stop(EndReason.CANCELLED)

    def end_unstarted(self) -> None:
        s = self.state
        self.phase = TurnPhase.FINISHED
        s.conversation.ended = Ended(EndReason.CANCELLED, queued=tuple(s.steer + s.queue))

    def take_raise(self) -> BaseException | None:
        e, self.to_raise = self.to_raise, None
        return e

    # -- the body ---------------------------------------------------------------------------------

    async def events(self) -> AsyncGenerator[Event, None]:
        s = self.state
        self.phase = TurnPhase.RUNNING
        n, parent = s.number, s.parent
        try:
            yield TurnStarted(n, parent)
            prompt = UserPrompt(s, self.input)
            async with aclosing(prompt.events()) as g:
                async for ev in g:
                    yield ev
            end, resume, n_step = prompt.end, prompt.resume, 0
            while end is None:
                n_step += 1
                step = Step(s, n_step, resume)
                yield StepStarted(n, parent, n_step)
                # The reply is relayed here, not through the step: one generator less per text delta.
                async with aclosing(step.request.events()) as g:
                    async for ev in g:
                        yield ev
                async with aclosing(step.events()) as g:
                    async for ev in g:
                        yield ev
                end, resume = step.end, None
        except Stop:
            end = End(s.stop_reason or EndReason.CANCELLED)
            s.discard(self.input)
        except Fatal as f:
            end = End(EndReason.FAILED, error=f.error, kind=f.kind)
            s.discard(self.input)
            if isinstance(f.error, HarnessUsageError):
                self.to_raise = f.error
        except (anyio.get_cancelled_exc_class(), GeneratorExit):
            # Cancelled from outside, or the consumer left the block: record it, deliver nothing more.
            s.discard(self.input)
            self._finish(End(EndReason.CANCELLED))
            raise
        if end.reason is EndReason.AWAITING_INPUT:
            yield InputRequested(n, parent, tuple(s.conversation.pending))
        self._finish(end)
        yield TurnEnded(n, parent, end.reason, s.usage, end.error, end.finish)
        error = self.take_raise()  # the run's error, raised to the consumer after TurnEnded
        if error is not None:
            raise error from None

    def _finish(self, end: End) -> None:
        """Record how the turn ended (``run.ended()``); the first record wins."""
        if self.phase is TurnPhase.FINISHED:
            return
        self.phase = TurnPhase.FINISHED
        s = self.state
        s.conversation.ended = Ended(
            end.reason,
            appended=tuple(s.appended),
            pending=tuple(s.conversation.pending),
            usage=s.usage,
            error=end.error,
            error_kind=end.kind,
            finish=end.finish,
            partial=s.partial if end.reason is EndReason.INTERRUPTED else None,
            queued=tuple(s.steer + s.queue),
        )


class UserPrompt:
    """The turn's input lands: a user message is appended, a Resume's edit is what step 1 continues, and a
    turn of answers runs the paused calls again as step 0 (it ends the turn when calls still await input)."""

    __slots__ = ("end", "input", "resume", "state")

    def __init__(self, state: TurnState, input: Message | Sequence[Answer] | Resume) -> None:
        self.state = state
        self.input = input
        self.end: End | None = None
        self.resume: Message | None = None

    async def events(self) -> AsyncGenerator[Event, None]:
        s = self.state
        match self.input:
            case Message() as message:
                s.append(message)
            case Resume(message=edited):
                self.resume = edited
            case answers:
                yield StepStarted(s.number, s.parent, 0)
                async with aclosing(ResumedCalls(s, answers).events()) as g:
                    async for ev in g:
                        yield ev
                s.commit()
                yield StepEnded(s.number, s.parent, 0)
                if s.conversation.pending:
                    self.end = End(EndReason.AWAITING_INPUT, s.last_finish())
                    return
                if s.ending:
                    self.end = End(EndReason.DONE, s.last_finish())
                    return
                for ev in _land(s, queued=False):
                    yield ev
        s.commit()


class Step:
    """Step ``n``: its model request (``request``, whose events the turn relays itself), then in
    ``events()`` the reply's tool calls and the boundary where interjections land."""

    __slots__ = ("end", "n", "request", "state")

    def __init__(self, state: TurnState, n: int, resume: Message | None) -> None:
        self.state = state
        self.n = n
        self.request = ModelRequest(state, resume)
        self.end: End | None = None

    async def events(self) -> AsyncGenerator[Event, None]:
        s = self.state
        message = self.request.message
        assert message is not None, "a step goes on once its model request has its message"
        if message.tool_calls:
            slots = [CallSlot(i, c) for i, c in enumerate(message.tool_calls)]
            async with aclosing(CallTools(s, slots, self.request.problems).events()) as g:
                async for ev in g:
                    yield ev
            paused = self._record_calls(message, slots)
            yield StepEnded(s.number, s.parent, self.n)
            if paused:
                self.end = End(EndReason.AWAITING_INPUT, message.finish)
                return
            if s.ending:  # a call's result ended the turn (``Result.ends_turn``); steering waits, queued
                self.end = End(EndReason.DONE, message.finish)
                return
            for ev in _land(s, queued=False):
                yield ev
        else:
            s.append(message)
            s.commit()
            yield StepEnded(s.number, s.parent, self.n)
            if not s.steer and not s.queue:
                more = await self._before_end(message)
                if more is None:
                    self.end = End(EndReason.DONE, message.finish)
                    return
                s.append(more)
                s.commit()  # like a steering message: delivered, so a failure of the next step keeps it
                yield Interjected(s.number, s.parent, more, Delivery.CONTINUE)
            else:
                for ev in _land(s, queued=True):
                    yield ev
        if s.should_stop(self.n):
            self.end = End(EndReason.STOPPED, message.finish)

    async def _before_end(self, message: Message) -> Message | None:
        """The end middleware's say on a reply that would end the turn: the first message to go on with,
        or None. Under the stop controls (a cancel ends it at once); its failure fails the turn, the reply
        kept (it is a complete step)."""
        s = self.state
        for mw in s.end_middleware:
            ending = TurnEnding(message, s.continued, self.n)
            try:
                more = await s.guard(mw.before_end(ending))
            except (Stop, anyio.get_cancelled_exc_class()):
                raise
            except Exception as e:
                raise Fatal(ErrorKind.MIDDLEWARE_ERROR, e) from e
            if more is None:
                continue
            if more.role is not Role.USER:
                raise Fatal(
                    ErrorKind.MIDDLEWARE_ERROR,
                    HarnessUsageError(f"{type(mw).__name__}.before_end must return a user message or None"),
                )
            s.continued += 1
            return more
        return None

    def _record_calls(self, message: Message, slots: list[CallSlot]) -> bool:
        """The step is complete: its message and results join the run; True when calls await input."""
        s = self.state
        s.check_retries()
        s.append(message)
        results = [slot.result for slot in slots if slot.result is not None]
        if results:
            s.append(Message(Role.USER, tuple(results)))
        paused = [slot.pending for slot in slots if slot.pending is not None]
        if paused:
            s.conversation.pending = paused
        s.commit()
        return bool(paused)


def _land(s: TurnState, *, queued: bool) -> Iterator[Interjected]:
    """A step boundary: every steering message lands (one sent meanwhile too); with ``queued`` and none
    steering, the next queued message does, as a complete step of its own."""
    if s.steer or not queued:
        while s.steer:
            m = s.steer.pop(0)
            s.append(m)
            s.commit()  # delivered (the user is told): a failure of the next step must not drop it
            yield Interjected(s.number, s.parent, m, Delivery.STEER)
    elif s.queue:
        m = s.queue.pop(0)
        s.append(m)
        s.commit()
        yield Interjected(s.number, s.parent, m, Delivery.QUEUE)
