"""The two interception seams. A middleware object implements one or both; the list is outermost first."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol, runtime_checkable

from ._call import Call
from ._messages import ToolCall
from ._tools import Result
from .model import Delta, Prompt

__all__ = ["ModelMiddleware", "NextModel", "NextTool", "ToolMiddleware"]

NextModel = Callable[[Prompt], AsyncIterator[Delta]]
NextTool = Callable[[ToolCall, Call], Awaitable[Result]]


@runtime_checkable
class ModelMiddleware(Protocol):
    """Wraps every model call. Rewrite the prompt (keep ``prompt.cancel``), observe or retry the deltas.

    Retry only before the first delta went on: the run folds each delta as it is yielded.
    """

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]: ...


@runtime_checkable
class ToolMiddleware(Protocol):
    """Wraps every tool call: deny (return an error Result), ask (``context.needs_input``), rewrite, trace."""

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result: ...
