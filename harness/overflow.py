"""``CompactOnOverflow``: when the server says the prompt does not fit, compact once and send it again.

Placed in front of a ``Compact``. A model call failing with ``ErrorKind.CONTEXT_TOO_LONG`` before the
reply began (every server's wording is classified by the providers: OpenAI ``context_length_exceeded``,
Anthropic ``prompt is too long``, vLLM ``maximum context length``, llama.cpp ``exceeds the available
context size``, Ollama, LiteLLM ``ContextWindowExceededError``, OpenRouter) asks the ``Compact`` to
compact and sends the step's prompt once more, with the window the error names (or, when unknown, three
quarters of the prompt's estimate) so the summary fits too. A second overflow ends the turn with the
server's error and what to do.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from dataclasses import replace

from ._errors import ModelError
from ._kinds import ErrorKind
from .compact import Compact
from .middleware import NextModel, Relay
from .model import Delta, Prompt, close_stream

__all__ = ["STILL_TOO_LONG", "CompactOnOverflow", "window_in_error"]

log = logging.getLogger(__name__)

STILL_TOO_LONG = (
    "{error}. The agent compacted the conversation where it could and sent it once more; it still does "
    "not fit. What to do: start a new "
    "session (or /compact with fewer recent messages), ask for less output at once, or give the model "
    "a larger window on the server (llama.cpp `-c`, Ollama `OLLAMA_CONTEXT_LENGTH` or `num_ctx`, vLLM "
    "`--max-model-len`) and declare it as the model's context_window."
)

_WINDOW = re.compile(
    r"(?:maximum context length is|context size \(|context window (?:is|of)|n_ctx[\"']?\s*[:=]?\s*|"
    r"context length of|limit of|tokens\s*>)\s*(\d[\d,]*)",
    re.IGNORECASE,
)


def window_in_error(message: str) -> int | None:
    """The context window a server's overflow message names, when it names one."""
    m = _WINDOW.search(message)
    if m is None:
        return None
    n = int(m.group(1).replace(",", ""))
    return n if n > 0 else None


def _overflow(e: ModelError) -> bool:
    return e.kind is ErrorKind.CONTEXT_TOO_LONG


class CompactOnOverflow:
    """See the module docstring. ``compact`` is the ``Compact`` behind this middleware in the chain."""

    def __init__(self, compact: Compact) -> None:
        self._compact = compact

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        return _Overflowing(self._compact, prompt, next)


class _Overflowing(Relay):
    """One model call of ``CompactOnOverflow``: retried once before its first delta; then handed on."""

    __slots__ = ("_compact", "_next_model", "_prompt")

    def __init__(self, compact: Compact, prompt: Prompt, next: NextModel) -> None:
        super().__init__()
        self._compact = compact
        self._prompt = prompt
        self._next_model = next

    async def start(self) -> Delta:
        prompt = self._prompt
        inner = await self.hand(self._next_model(prompt))
        try:
            return await anext(inner)
        except ModelError as e:
            if not _overflow(e):
                raise
            first = e
        window = prompt.options.context_window or window_in_error(first.message)
        if window is None:
            window = max(1024, int(self._compact.estimate(prompt) * 0.75))
        log.warning("the prompt did not fit the model's window (%s); compacting once and retrying", first)
        await close_stream(inner)
        self._compact.compact_now()
        again = prompt.replace(options=replace(prompt.options, context_window=window))
        inner = await self.hand(self._next_model(again))
        try:
            return await anext(inner)
        except ModelError as e:
            if not _overflow(e):
                raise
            raise ModelError(STILL_TOO_LONG.format(error=e.message.rstrip(".")), e.kind) from e
