"""The state a turn works on: the run's (``RunState``) and the turn's own (``TurnState``), and how it ends.

``RunState`` is what a ``Run`` keeps between turns; the running turn is handed it and is its only writer.
``TurnState`` is the one object the turn's phases share (pydantic-ai's ``GraphAgentState``): counters,
the offered tools, the stop controls and the last complete step (``Checkpoint``). A phase ends the turn by
returning an ``End``; ``Stop`` and ``Fatal`` are the two ways out that unwind a phase from deep inside.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
from anyio import CancelScope

from ._call import CallRun
from ._kinds import EndReason, ErrorKind, FinishReason, Role
from ._messages import Message
from ._options import StopContext
from ._pause import Pending
from ._tools import Tool, ToolSource
from ._usage import Usage
from .model import CancelSignal

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from ._call import Call
    from .middleware import EndMiddleware, ModelMiddleware, ToolMiddleware

__all__ = [
    "Checkpoint",
    "End",
    "Ended",
    "Fatal",
    "Resume",
    "RunState",
    "Stop",
    "Stoppable",
    "TurnPhase",
    "TurnRun",
    "TurnState",
]

T = TypeVar("T")


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


@dataclass(slots=True, eq=False)
class RunState:
    """What a ``Run`` keeps between turns: the conversation, the calls awaiting input, the last end."""

    messages: list[Message]
    pending: list[Pending]
    ended: Ended | None = None


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The run as the last complete step left it; a failed or cancelled step goes back to it."""

    messages: int
    appended: int
    pending: tuple[Pending, ...]


class TurnPhase(enum.Enum):
    """A turn's life: made by ``run.turn()``, running from its first event, finished once ``Ended`` is
    recorded (before ``TurnEnded`` goes out, so its handler sees ``run.ended()``)."""

    CREATED = "created"
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(frozen=True, slots=True)
class End:
    """A phase's outcome when it ends the turn (a phase that lets the turn go on returns None)."""

    reason: EndReason
    finish: FinishReason | None = None
    error: BaseException | None = None
    kind: ErrorKind | None = None


class Stop(Exception):
    """The turn was cancelled or interrupted while the consumer waited."""


class Fatal(Exception):
    """The turn fails with ``kind``; ``error`` is what the host sees in ``Ended.error``."""

    def __init__(self, kind: ErrorKind, error: BaseException) -> None:
        super().__init__(str(error))
        self.kind = kind
        self.error = error


class Stoppable(Protocol):
    """What the consumer's wait is stopped by: an anyio ``CancelScope``, or on asyncio a ``TaskStop``."""

    def cancel(self) -> None: ...


class TurnRun(CallRun, Protocol):
    """What a turn uses of its run (``Run``, which imports this module): what a call knows of it, and the
    tools."""

    @property
    def tools(self) -> ToolSource: ...


@dataclass(slots=True, eq=False)
class TurnState:
    """The one object a turn's phases share. Only the turn and its phases write it."""

    run: TurnRun
    conversation: RunState
    model_middleware: Sequence[ModelMiddleware]
    tool_middleware: Sequence[ToolMiddleware]
    number: int
    parent: str | None = None
    tg: TaskGroup | None = None
    # Stop controls: ``request_stop`` sets the reason and cancels the scope (or task stop) the consumer
    # waits in.
    signal: CancelSignal = field(default_factory=CancelSignal)
    stop_reason: EndReason | None = None
    scope: Stoppable | None = None
    tool_scopes: set[CancelScope] = field(default_factory=set[CancelScope])
    # The calls running now, by id (``cancel_call``), and the reason each one cancelled alone ends with.
    calls: dict[str, tuple[CancelScope, Call]] = field(default_factory=dict[str, "tuple[CancelScope, Call]"])
    cancelled_calls: dict[str, str] = field(default_factory=dict[str, str])
    # Interjections waiting for a step boundary (steer) or for the turn's end (queue).
    steer: list[Message] = field(default_factory=list[Message])
    queue: list[Message] = field(default_factory=list[Message])
    usage: Usage = Usage()
    retries: int = 0
    appended: list[Message] = field(default_factory=list[Message])
    partial: Message | None = None
    # The tools the model was offered this step, by name: a call runs only against these.
    offered: dict[str, Tool] = field(default_factory=dict[str, Tool])
    checkpoint: Checkpoint | None = None
    # Asked before a reply ends the turn (``Step``); ``continued`` counts the times one kept it going.
    end_middleware: Sequence[EndMiddleware] = ()
    continued: int = 0
    # A call's result asked the turn to end once the step's calls are done (``Result.ends_turn``).
    ending: bool = False

    # -- stopping ---------------------------------------------------------------------------------

    def request_stop(self, reason: EndReason) -> None:
        if self.stop_reason is None:
            self.stop_reason = reason
        self.signal.set()
        if self.scope is not None:
            self.scope.cancel()
        self.cancel_tools()

    def cancel_tools(self) -> None:
        for s in list(self.tool_scopes):
            s.cancel()

    def cancel_call(self, path: str, reason: str) -> bool:
        """Cancel the running call ``path`` alone (``a/b``: call ``b`` of the nested run of call ``a``);
        False when no such call runs."""
        head, _, rest = path.partition("/")
        running = self.calls.get(head)
        if running is None:
            return False
        scope, call = running
        if rest:
            nested = call.nested
            return nested is not None and nested.cancel_call(rest, reason)
        self.cancelled_calls[head] = reason
        scope.cancel()
        return True

    async def guard(self, aw: Awaitable[T]) -> T:
        """Await ``aw`` so that ``cancel()``/``interrupt()`` stop it at once."""
        if self.stop_reason is not None:
            _close(aw)
            raise Stop
        with CancelScope() as scope:
            self.scope = scope
            try:
                return await aw
            finally:
                self.scope = None
        raise Stop  # the scope swallowed our own cancellation

    # -- the conversation -------------------------------------------------------------------------

    def append(self, message: Message) -> None:
        self.conversation.messages.append(message)
        self.appended.append(message)

    def commit(self) -> None:
        """A step is complete: what the run holds now survives a later failure or cancel."""
        c = self.conversation
        self.checkpoint = Checkpoint(len(c.messages), len(self.appended), tuple(c.pending))

    def discard(self, input: object) -> None:
        """Drop the step in progress: back to the last complete step."""
        cp = self.checkpoint
        if cp is None:
            # Nothing ran yet: the turn's user message still belongs to the conversation.
            if isinstance(input, Message) and not self.appended:
                self.append(input)
            return
        del self.conversation.messages[cp.messages :]
        del self.appended[cp.appended :]
        self.conversation.pending = list(cp.pending)

    def last_finish(self) -> FinishReason | None:
        for m in reversed(self.conversation.messages):
            if m.role is Role.ASSISTANT:
                return m.finish
        return None

    # -- limits and tools -------------------------------------------------------------------------

    def should_stop(self, step: int) -> bool:
        ctx = StopContext(step, self.usage, self.conversation.messages)
        return any(p(ctx) for p in self.run.options.stop)

    def check_retries(self) -> None:
        limit = self.run.options.tool_retries
        if self.retries > limit:
            raise Fatal(
                ErrorKind.TOOL_RETRIES_EXCEEDED,
                RuntimeError(
                    f"the model made {self.retries} failed tool calls this turn (Options.tool_retries is {limit})"
                ),
            )

    async def tools_now(self) -> list[Tool]:
        """The tool source read for this step; its failure fails the turn."""
        try:
            return list(await self.guard(self.run.tools.tools()))
        except (Stop, anyio.get_cancelled_exc_class()):
            raise
        except Exception as e:
            raise Fatal(ErrorKind.TOOL_ERROR, e) from e


def _close(aw: Awaitable[Any]) -> None:
    close = getattr(aw, "close", None)
    if close is not None:
        close()
