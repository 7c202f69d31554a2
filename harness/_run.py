"""Run: a conversation with a model and tools, one turn at a time; ``TurnStream``: a turn's events.

A turn is driven by its consumer: ``__anext__`` pulls the model's deltas itself, so a streamed reply costs
no task switch per event. Tools run in tasks of a task group that the ``async with run.turn(...)`` block
owns; their events reach the consumer through a memory stream, one at a time, in the consumer's pace.
Every await of the consumer on the model or on tools sits in a short cancel scope that ``cancel()`` and
``interrupt()`` cancel (on asyncio, a wait on the model in an equivalent native task stop:
``harness._task_stop``), so stopping is immediate without polling and without a scope across a ``yield``.
The turn itself is ``harness._turn``; the state it is handed (``RunState``, ``TurnState``) is
``harness._state``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Sequence
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskGroup

from ._errors import HarnessUsageError
from ._kinds import Delivery, EndReason, Role
from ._messages import Message
from ._options import Options
from ._pause import Answer, Pending
from ._state import Ended, Resume, RunState, TurnPhase, TurnState
from ._step_tools import CALL_CANCELLED_TEXT
from ._tools import ToolSource
from ._turn import Turn
from .conforms import conforms
from .events import Event
from .middleware import EndMiddleware, Middleware, ModelMiddleware, ToolMiddleware
from .model import Model

__all__ = ["Ended", "Resume", "Run", "TurnStream"]


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
        middleware: Sequence[Middleware] = (),
        messages: Sequence[Message] = (),
        pending: Sequence[Pending] = (),
        context: Any = None,
    ) -> None:
        if not conforms(tools, ToolSource):
            raise HarnessUsageError(f"tools must be a ToolSource such as Tools(...), got {tools!r}")
        self.model = model
        self.tools = tools
        self.system = system
        self.options = options or Options()
        self.middleware: tuple[Middleware, ...] = tuple(middleware)
        self.context = context
        self._model_mw = tuple(m for m in self.middleware if conforms(m, ModelMiddleware))
        self._tool_mw = tuple(m for m in self.middleware if conforms(m, ToolMiddleware))
        self._end_mw = tuple(m for m in self.middleware if conforms(m, EndMiddleware))
        for m in self.middleware:
            if not (
                conforms(m, ModelMiddleware) or conforms(m, ToolMiddleware) or conforms(m, EndMiddleware)
            ):
                raise HarnessUsageError(f"not a ModelMiddleware, ToolMiddleware or EndMiddleware: {m!r}")
        self._state = RunState(list(messages), list(pending))
        self._turns = 0
        self._active: Turn | None = None

    # -- public API -------------------------------------------------------------------------------

    def turn(self, input: Message | Sequence[Answer] | Resume) -> TurnStream:
        """Start a turn: ``async with run.turn(message) as events: async for event in events: ...``."""
        if self._active is not None and self._active.phase is not TurnPhase.FINISHED:
            raise HarnessUsageError("a turn is already running on this Run; one turn at a time")
        match input:
            case Message():
                self._check_message(input)
            case Resume():
                self._check_resume(input)
            case _:
                input = self._check_answers(input)
        self._turns += 1
        state = TurnState(
            self, self._state, self._model_mw, self._tool_mw, self._turns, end_middleware=self._end_mw
        )
        turn = Turn(state, input)
        self._active = turn
        return TurnStream(turn)

    def _check_message(self, message: Message) -> None:
        if message.role is not Role.USER:
            raise HarnessUsageError("a turn starts from a user message")
        if self._state.pending:
            raise HarnessUsageError(
                f"{len(self._state.pending)} call(s) await input: answer them with turn([Answer(...)]) first"
            )

    def _check_resume(self, resume: Resume) -> None:
        if resume.message.role is not Role.ASSISTANT:
            raise HarnessUsageError("Resume takes the edited assistant message")
        if self._state.pending:
            raise HarnessUsageError("cannot Resume while calls await input")
        messages = self._state.messages
        if not messages or messages[-1].role is not Role.USER:
            raise HarnessUsageError("Resume is valid only when the run's last message is a user message")

    def _check_answers(self, input: Sequence[Answer]) -> list[Answer]:
        """One ``Answer`` per pending call, each naming one."""
        answers = list(input)
        if not self._state.pending:
            raise HarnessUsageError("no call awaits input: start a turn with a user message")
        for a in answers:
            if not isinstance(a, Answer):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise HarnessUsageError(f"turn() takes a Message, a list of Answer or a Resume, not {a!r}")
        waiting = {p.call.id for p in self._state.pending}
        given = [a.call_id for a in answers]
        unknown = sorted(set(given) - waiting)
        if unknown:
            raise HarnessUsageError(f"no pending call with id {', '.join(unknown)}")
        if len(set(given)) != len(given):
            raise HarnessUsageError("one Answer per pending call")
        missing = sorted(waiting - set(given))
        if missing:
            raise HarnessUsageError(f"pending call(s) {', '.join(missing)} not answered")
        return answers

    def cancel(self) -> None:
        """Cancel the running turn (no-op when none runs): it ends ``Cancelled``, the step discarded."""
        if self._active is not None and self._active.phase is not TurnPhase.FINISHED:
            self._active.request_stop(EndReason.CANCELLED)

    def cancel_call(self, call_id: str, reason: str = CALL_CANCELLED_TEXT) -> bool:
        """Cancel one running tool call alone; the turn goes on. The call's tools are cancelled (a
        sub-agent's run with them), a question it asked is dropped, and its result is the error
        ``reason`` (``meta["cancelled"]``), which the model reads. ``"a/b"`` cancels call ``b`` of the run
        that call ``a`` runs (a sub-agent's: ``Call.nested``). False when no such call runs now."""
        turn = self._active
        if turn is None or turn.phase is not TurnPhase.RUNNING:
            return False
        return turn.state.cancel_call(call_id, reason)

    def interrupt(self) -> None:
        """Stop the reply; the turn ends ``Interrupted`` with ``ended().partial`` to edit and Resume."""
        if self._active is not None and self._active.phase is not TurnPhase.FINISHED:
            self._active.request_stop(EndReason.INTERRUPTED)

    def interject(self, message: Message, delivery: Delivery = Delivery.STEER) -> None:
        """Give the running turn a user message: ``STEER`` at the next step boundary, ``QUEUE`` at the end."""
        if self._active is None or self._active.phase is not TurnPhase.RUNNING:
            raise HarnessUsageError("interject() needs a running turn: use turn() to start one")
        if message.role is not Role.USER:
            raise HarnessUsageError("interject() takes a user message")
        if delivery is Delivery.STEER:
            self._active.state.steer.append(message)
        else:
            self._active.state.queue.append(message)

    def messages(self) -> list[Message]:
        """The conversation so far: complete steps only."""
        return list(self._state.messages)

    def pending(self) -> list[Pending]:
        """The calls awaiting input; a turn of ``Answer``s answers them."""
        return list(self._state.pending)

    def ended(self) -> Ended | None:
        """How the last turn ended; set before its ``TurnEnded`` goes out."""
        return self._state.ended

    def is_running(self) -> bool:
        """True from the turn's first event until ``TurnEnded``."""
        return self._active is not None and self._active.phase is TurnPhase.RUNNING

    def fork(self) -> Run:
        """A new Run with this one's configuration and a copy of its messages; nothing pending."""
        return Run(
            self.model,
            self.tools,
            system=self.system,
            options=self.options,
            middleware=self.middleware,
            messages=self._state.messages,
            context=self.context,
        )


class TurnStream:
    """The events of one turn. Enter it with ``async with``; leaving the block early cancels the turn."""

    def __init__(self, turn: Turn) -> None:
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
        self._turn.state.tg = tg
        return self

    def __aiter__(self) -> TurnStream:
        return self

    def __anext__(self) -> Awaitable[Event]:
        # The turn's generator's own step, not a coroutine around it (one frame less per event): it
        # raises the run's error itself after TurnEnded, and a finished or closed one stops.
        gen = self._gen
        if gen is None:
            if self._tg is None:
                raise HarnessUsageError("use `async with run.turn(...) as events:` and iterate `events`")
            gen = self._gen = self._turn.events()
        return gen.__anext__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        turn = self._turn
        try:
            if turn.phase is not TurnPhase.FINISHED:
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
