"""Options of a run, and stop predicates."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._errors import HarnessUsageError
from ._usage import Usage

if TYPE_CHECKING:
    from ._messages import Message

__all__ = ["Options", "StopContext", "StopPredicate", "max_steps"]


@dataclass(frozen=True, slots=True)
class StopContext:
    """What a stop predicate sees after each step: the steps of this turn so far and the turn's usage."""

    steps: int
    usage: Usage
    messages: Sequence[Message]


StopPredicate = Callable[[StopContext], bool]


def max_steps(n: int) -> StopPredicate:
    """Stop the turn after ``n`` steps (the default is 20)."""
    if n < 1:
        raise HarnessUsageError("max_steps needs n >= 1")

    def predicate(ctx: StopContext) -> bool:
        return ctx.steps >= n

    predicate.__name__ = f"max_steps({n})"
    return predicate


@dataclass(frozen=True, slots=True)
class Options:
    """What the run and the provider honour. ``provider`` is keyed by provider (``openai``, ``anthropic``)."""

    max_output_tokens: int | None = None
    temperature: float | None = None
    context_window: int | None = None
    tool_retries: int = 3
    stop: tuple[StopPredicate, ...] = field(default_factory=lambda: (max_steps(20),))
    provider: Mapping[str, Mapping[str, Any]] = field(default_factory=dict[str, Mapping[str, Any]])
    cache_ttl: str | None = "5m"
    """Prompt caching: the lifetime of Anthropic's cache breakpoints (``"5m"`` or ``"1h"``); None sends
    no cache hints at all. Servers that cache prefixes on their own (OpenAI, vLLM, llama.cpp) need none."""
    cache_key: str | None = None
    """A stable id of the conversation (a session's): sent as ``prompt_cache_key`` to OpenAI's own
    endpoint, which routes requests with the same key to the same cache (with ``cache_ttl`` not None)."""

    def __post_init__(self) -> None:
        if self.max_output_tokens is not None and self.max_output_tokens < 1:
            raise HarnessUsageError("Options.max_output_tokens must be >= 1")
        if self.context_window is not None and self.context_window < 1:
            raise HarnessUsageError("Options.context_window must be >= 1")
        if self.tool_retries < 0:
            raise HarnessUsageError("Options.tool_retries must be >= 0")
        if self.cache_ttl not in (None, "5m", "1h"):
            raise HarnessUsageError('Options.cache_ttl must be "5m", "1h" or None')
