"""The model seam: what a provider receives (``Prompt``) and streams back (deltas), and how it fails.

A provider implements ``Model.stream(prompt)`` as an async iterator of deltas. The run folds them into
the assistant message and the event stream. Cancellation reaches a provider as anyio cancellation of the
task that iterates it (close sockets in ``finally``/``async with``), and ``prompt.cancel`` tells a
provider that polls.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from ._errors import ModelError, UnsupportedOptionError
from ._fast_init import fast_frozen_init
from ._kinds import ErrorKind, FinishReason
from ._messages import Message
from ._options import Options
from ._tool_values import ToolSpec

__all__ = [
    "CancelSignal",
    "Delta",
    "ErrorKind",
    "Finish",
    "FinishReason",
    "Model",
    "ModelError",
    "Prompt",
    "ReasoningChunk",
    "TextChunk",
    "ToolInput",
    "ToolReady",
    "ToolStart",
    "UnsupportedOptionError",
    "UsageChunk",
    "close_stream",
]


@dataclass(frozen=True, slots=True)
class TextChunk:
    text: str


@fast_frozen_init  # made once per streamed delta
@dataclass(frozen=True, slots=True)
class ReasoningChunk:
    """Reasoning text; ``signature`` (sent once the block is complete) and ``redacted`` data are kept."""

    text: str = ""
    signature: str | None = None
    redacted: str | None = None


@dataclass(frozen=True, slots=True)
class ToolStart:
    """A tool call begins. ``id`` is the provider's call id; later deltas of this call use it."""

    id: str
    name: str


@fast_frozen_init  # made once per streamed delta
@dataclass(frozen=True, slots=True)
class ToolInput:
    """A fragment of the call's JSON input, as streamed."""

    id: str
    json: str


@dataclass(frozen=True, slots=True)
class ToolReady:
    """The call is complete. ``input`` given wins; otherwise the fragments are parsed."""

    id: str
    input: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class UsageChunk:
    """Usage so far for this message: each given (non-None) field replaces the one known before."""

    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    reasoning: int | None = None
    """Of ``output``: the reasoning tokens, where the provider says (OpenAI's ``reasoning_tokens``)."""


@dataclass(frozen=True, slots=True)
class Finish:
    reason: FinishReason


Delta = TextChunk | ReasoningChunk | ToolStart | ToolInput | ToolReady | UsageChunk | Finish


class CancelSignal:
    """Set once when the turn is cancelled or interrupted. Cheap to check; providers may poll it."""

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set


@dataclass(frozen=True, slots=True)
class Prompt:
    """One model call: the system text, the conversation, the tools offered, the options.

    ``continue_`` is true when the last message is an assistant message to extend (a Resume); a provider
    that cannot continue raises ``UnsupportedOptionError`` naming the fallback.
    """

    system: str | None
    messages: Sequence[Message]
    tools: Sequence[ToolSpec]
    options: Options = field(default_factory=Options)
    cancel: CancelSignal = field(default_factory=CancelSignal)
    continue_: bool = False

    def replace(self, **changes: Any) -> Prompt:
        """A copy with some fields changed, the cancel signal kept (middleware uses this)."""
        return replace(self, **changes)

    def provider_options(self, key: str) -> Mapping[str, Any]:
        return self.options.provider.get(key, {})


@runtime_checkable
class Model(Protocol):
    """A model: streams the deltas of one reply to ``prompt``. Raise ``ModelError`` on failure."""

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]: ...


async def close_stream(stream: AsyncIterator[Any]) -> None:
    """Close a model's stream that was not read to its end (an async generator's ``aclose``: its
    ``finally`` blocks run now, its HTTP response is released); a plain iterator has nothing to close."""
    aclose = getattr(stream, "aclose", None)
    if aclose is not None:
        await aclose()
