"""The interception seams. A middleware object implements one or more; the list is outermost first.

``ModelMiddleware`` wraps each model call, ``ToolMiddleware`` each tool call, and ``EndMiddleware`` is asked
before a reply ends the turn whether the turn goes on (a user message to continue with, or None).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ._call import Call
from ._messages import Message, ToolCall
from ._relay import Prelude, Relay
from ._tools import Result
from .model import Delta, Prompt

__all__ = [
    "EndMiddleware",
    "Middleware",
    "ModelMiddleware",
    "NextModel",
    "NextTool",
    "Prelude",
    "Relay",
    "ToolMiddleware",
    "TurnEnding",
]

NextModel = Callable[[Prompt], AsyncIterator[Delta]]
NextTool = Callable[[ToolCall, Call], Awaitable[Result]]


@runtime_checkable
class ModelMiddleware(Protocol):
    """Wraps every model call. Rewrite the prompt (keep ``prompt.cancel``), observe or retry the deltas.

    Retry only before the first delta went on: the run folds each delta as it is yielded. ``stream`` may
    return any async iterator: ``next(prompt)`` itself, an async generator, or a ``Relay``/``Prelude`` (work before the
    first delta, then the inner stream handed on with no frame per delta: the cheap form for middleware that
    do not look at later deltas).
    """

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]: ...


@runtime_checkable
class ToolMiddleware(Protocol):
    """Wraps every tool call: deny (return an error Result), ask (``context.needs_input``), rewrite, trace."""

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result: ...


@dataclass(frozen=True, slots=True)
class TurnEnding:
    """A reply that would end the turn: no tool calls, nothing steered or queued. ``continued`` counts
    how often an ``EndMiddleware`` kept this turn going already; ``step`` is the reply's step."""

    message: Message
    continued: int
    step: int


@runtime_checkable
class EndMiddleware(Protocol):
    """Asked, in list order, when a reply would end the turn: a user message makes the turn go on (it is
    appended as a complete step and the model takes another step; the first answer wins), None lets it
    end. Awaited under the turn's stop controls: ``cancel()``/``interrupt()`` stop it at once. A bound on
    how often it continues is the middleware's (``continued``); the run's stop predicates still apply."""

    async def before_end(self, ending: TurnEnding) -> Message | None: ...


Middleware = ModelMiddleware | ToolMiddleware | EndMiddleware
"""What a run's ``middleware`` list holds."""
