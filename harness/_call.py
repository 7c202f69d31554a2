"""``Call``: what a tool (and a tool middleware) knows of the call it runs, and how it asks the host."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ._errors import HarnessUsageError
from ._messages import ToolCall
from ._pause import Approval, Decision, Need, Pending
from ._tool_values import Result, ToolSpec

if TYPE_CHECKING:
    from ._messages import Message
    from ._options import Options
    from .model import Model

__all__ = ["Call", "CallHost", "CallRun", "NestedRun"]


class NestedRun(Protocol):
    """What a call knows of the run it runs itself (a sub-agent's ``Run``): enough to cancel one of its calls."""

    def cancel_call(self, call_id: str, reason: str = ...) -> bool: ...


class CallRun(Protocol):
    """What a call knows of the run it is a call of (``Run``, whose turn imports this module)."""

    @property
    def model(self) -> Model: ...

    @property
    def system(self) -> str | None: ...

    @property
    def options(self) -> Options: ...

    @property
    def context(self) -> Any:
        """The host's context (``Run(context=...)``)."""
        ...

    def messages(self) -> list[Message]: ...


class CallHost(Protocol):
    """The run's side of a call (implemented by the run; a test helper implements it too)."""

    async def emit_progress(self, call_id: str, value: Any) -> None: ...

    async def emit_event(self, event: Any) -> None: ...

    def is_cancelled(self) -> bool: ...


class Call:
    """The context of one tool call: id, run, the host's ``context``, the called tool's ``spec``.

    Pause: ``return call.needs_input([Approval("why")], state)`` ends the turn awaiting input once the
    step's other calls are done. On the resume the call is made again with ``answers()``, ``decision()``
    (the answer to the ``approval`` need) and ``state()``.
    """

    __slots__ = ("_answers", "_host", "_pending", "_state", "context", "nested", "run", "spec", "tool_call")

    def __init__(
        self,
        tool_call: ToolCall,
        *,
        host: CallHost,
        run: CallRun | None = None,
        context: Any = None,
        spec: ToolSpec | None = None,
        answers: Mapping[str, Any] | None = None,
        state: Any = None,
    ) -> None:
        self.tool_call = tool_call
        self.run = run
        self.context = context
        self.spec = spec
        self._host = host
        self._answers: dict[str, Any] = dict(answers or {})
        self._state = state
        self._pending: Pending | None = None
        self.nested: NestedRun | None = None
        """The run this call runs now (a sub-agent's), set by the tool: ``Run.cancel_call("a/b")`` reaches
        it."""

    @property
    def id(self) -> str:
        return self.tool_call.id

    @property
    def name(self) -> str:
        return self.tool_call.name

    @property
    def input(self) -> dict[str, Any]:
        return self.tool_call.input

    async def progress(self, value: Any) -> None:
        """Report progress (a ``ToolProgress`` event); returns once the consumer took it."""
        await self._host.emit_progress(self.tool_call.id, value)

    async def emit(self, event: Any) -> None:
        """Forward an event of a nested run into this run's stream (``AgentTool`` does); returns once the
        consumer took it. Set its ``parent`` first."""
        await self._host.emit_event(event)

    def is_cancelled(self) -> bool:
        return self._host.is_cancelled()

    def needs_input(self, needs: Need | Sequence[Need], state: Any = None) -> Result:
        """Ask the host; return what this gives from the tool (or middleware)."""
        items: tuple[Need, ...] = (needs,) if not isinstance(needs, Sequence) else tuple(needs)
        if not items:
            raise HarnessUsageError("needs_input() needs at least one Approval or Question")
        ids = [n.id for n in items]
        if len(set(ids)) != len(ids):
            raise HarnessUsageError(f"need ids must be unique within a call, got {ids}")
        self._pending = Pending(self.tool_call, items, state)
        return Result.failure("(awaiting input)", meta={"pending": True})

    def pending(self) -> Pending | None:
        """The needs the last inner call asked for, if it asked (the inline-answering idiom reads this)."""
        return self._pending

    def answer(self, answers: Mapping[str, Any]) -> None:
        """Answer the pending needs in place; the next ``next()`` call sees them (inline answering)."""
        if self._pending is None:
            raise HarnessUsageError("answer() with nothing pending on this call")
        self._state = self._pending.state
        self._answers = dict(answers)
        self._pending = None

    def answers(self) -> Mapping[str, Any]:
        return self._answers

    def decision(self) -> Decision | None:
        d = self._answers.get("approval")
        return d if isinstance(d, Decision) else None

    def ask_or_deny(self, question: str, meta: Mapping[str, Any], why: str = "") -> Result | None:
        """A middleware's approval: None once the user allowed the call (go on); else what to return, the
        question (``Approval(question)``) the first time, ``Denied: <their reason>`` (then ``why``, with
        ``meta``) when they declined."""
        decision = self.decision()
        if decision is None:
            return self.needs_input([Approval(question)])
        if decision.allowed:
            return None
        return Result.failure(f"Denied: {decision.reason or 'the user declined'}{why}", meta=dict(meta))

    def state(self) -> Any:
        return self._state

    def __repr__(self) -> str:
        return f"Call({self.tool_call.id!r}, {self.tool_call.name!r})"
