"""``ModelNotes``: the model middleware that puts the session's model facts to work and says what the
editor would otherwise not show.

For each model call of a turn it gives the prompt the model's context window (so ``Compact`` compacts
near it, for every model whose window is known), and after each reply it sends ``usage_update`` (the
context used of that window). It says, as an agent message:

- once per session, when the window is unknown and the conversation has grown past ``TELL_AFTER`` tokens
  (the server's count, else an estimate from the prompt's characters): how to declare it, and the tokens
  used so far (a short chat is not interrupted by a notice that does not matter yet);
- once per session, before the first reply, when the server is one that drops what does not fit
  without an error (Ollama) and runs the model at its small default window: how to raise it on the
  server (its OpenAI endpoint takes no ``num_ctx``) and declare it. A default window nothing reported is
  assumed (``OLLAMA_DEFAULT_WINDOW``) and used as any other; when the agent's own instructions and tools
  leave no room in it, compacting could not help (it would run on every step): the user is told that
  instead, once, and the prompt goes without the window (``usage_update`` still shows it);
- once per session, when the model takes no images (declared, or its server says so) and the
  conversation holds some: that they are left out of what it is sent (each image becomes a short note),
  instead of the server refusing the whole request;
- after a reply with no text and no tool call: that the model returned no text, with the finish reason
  when it is not ``stop``, so a turn is never blank.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from harness import Image, Text
from harness.model import Finish, FinishReason, ReasoningChunk, TextChunk, ToolStart, UsageChunk

from ._model_facts import OLLAMA_DEFAULT_WINDOW, ModelFacts

if TYPE_CHECKING:
    from harness.middleware import NextModel
    from harness.model import Delta, Prompt

__all__ = ["ModelNotes", "empty_reply_text", "ollama_warning", "too_small_text", "unknown_window_text"]

log = logging.getLogger(__name__)

_EXAMPLE_WINDOW = 65536
RECHECK_S = 5.0
"""How long the server's model list may take to say the window of a model the first request loaded."""
TELL_AFTER = 8192
"""Tokens of conversation after which an unknown window is worth a notice."""
_FINISH_MEANING = {
    FinishReason.LENGTH: "it reached its output limit before writing any",
    FinishReason.CONTENT_FILTER: "the provider's content filter stopped it",
    FinishReason.REFUSAL: "it refused",
}


def empty_reply_text(finish: FinishReason | None, reasoned: bool) -> str:
    text = "The model returned no text" + (" (only its reasoning)" if reasoned else "")
    if finish is not None and finish is not FinishReason.STOP:
        meaning = _FINISH_MEANING.get(finish)
        text += f"; finish reason: {finish.value}" + (f" ({meaning})" if meaning else "")
    return text + "."


def unknown_window_text(name: str, config_file: Path, used: int | None) -> str:
    so_far = f" ({used:,} tokens used so far)" if used else ""
    return (
        f"The context window of {name} is not known{so_far}, so the agent cannot show how full it is or "
        "compact the conversation before the server refuses it. Declare it in "
        f'{config_file}:\n\n[models."{name}"]\ncontext_window = <tokens>'
    )


def _raise_it(name: str, config_file: Path) -> str:
    return (
        f"raise it on the server: `OLLAMA_CONTEXT_LENGTH={_EXAMPLE_WINDOW} ollama serve` (or the context "
        f"slider in the Ollama app, or `PARAMETER num_ctx {_EXAMPLE_WINDOW}` in a Modelfile), then declare "
        f'it in {config_file}:\n\n[models."{name}"]\ncontext_window = {_EXAMPLE_WINDOW}'
    )


def ollama_warning(facts: ModelFacts, config_file: Path) -> str:
    runs = (
        "at Ollama's default context window, assumed to be "
        f"{facts.context_window or OLLAMA_DEFAULT_WINDOW:,} tokens (the default with under 24 GiB of VRAM; "
        "the server sets it with OLLAMA_CONTEXT_LENGTH, and says nothing of it here)"
        if facts.default_window or facts.context_window is None
        else f"at {facts.context_window:,} tokens of context"
    )
    supports = f" though the model supports {facts.trained_window:,}" if facts.trained_window else ""
    return (
        f"{facts.name} runs on Ollama {runs},{supports}. Ollama drops what does not fit without an error, "
        "the instructions first, and its OpenAI endpoint takes no num_ctx, so "
        + _raise_it(facts.name, config_file)
    )


def too_small_text(facts: ModelFacts, fixed: int, config_file: Path) -> str:
    window = facts.context_window or OLLAMA_DEFAULT_WINDOW
    return (
        f"The agent's instructions and tools alone are about {fixed:,} tokens: they do not fit "
        f"{facts.name}'s context window of {window:,} tokens (Ollama's default, assumed) with room for a "
        "reply, so the agent will not compact the conversation (it would on every step) and Ollama will "
        "cut what does not fit. For the agent to work, " + _raise_it(facts.name, config_file)
    )


def _fixed(prompt: Prompt) -> int:
    """The tokens of what every request carries (instructions, tools), as ``Compact`` estimates them."""
    return (len(prompt.system or "") + sum(len(json.dumps(t.to_dict())) for t in prompt.tools)) // 4


def _fits(prompt: Prompt, facts: ModelFacts) -> bool:
    """Whether the agent's own request leaves room in an assumed window, as ``Compact`` keeps a prompt
    within it (the window less the reply's share); any other window is taken as it is."""
    window = facts.context_window
    if window is None or not facts.default_window:
        return True
    return _fixed(prompt) < window - (prompt.options.max_output_tokens or min(window // 4, 8192))


_LEFT_OUT = "[an image was here; this model takes no images, so it was left out]"


def _estimate(prompt: Prompt) -> int:
    """The prompt's tokens, roughly (four characters a token), for a server that reports no usage."""
    chars = len(prompt.system or "") + sum(len(m.text) for m in prompt.messages)
    return chars // 4


class ModelNotes:
    """See the module docstring. ``facts`` gives the current model's facts (it may switch mid-session);
    ``say`` sends an agent message (the empty reply); ``advise(title, text)`` the advisory news (a notice
    where the client takes them, else an agent message); ``usage`` sends a ``usage_update`` (used, size);
    ``tell_unknown``: tell how to declare an unknown window (for an HTTP provider, where declaring it helps)."""

    def __init__(
        self,
        facts: Callable[[], ModelFacts | None],
        say: Callable[[str], Awaitable[None]],
        advise: Callable[[str, str], Awaitable[None]],
        usage: Callable[[int, int], Awaitable[None]],
        config_file: Path,
        *,
        tell_unknown: bool = True,
        recheck: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._tell_unknown = tell_unknown
        self._recheck = recheck
        self._rechecked: set[str] = set()
        self._facts = facts
        self._say = say
        self._advise = advise
        self._usage = usage
        self._config_file = config_file
        self._told: set[str] = set()

    async def _without_images(self, prompt: Prompt, facts: ModelFacts) -> Prompt:
        messages = list(prompt.messages)
        changed = False
        for i, m in enumerate(messages):
            if any(isinstance(p, Image) for p in m.parts):
                parts = tuple(Text(_LEFT_OUT) if isinstance(p, Image) else p for p in m.parts)
                messages[i] = replace(m, parts=parts)
                changed = True
        if not changed:
            return prompt
        where = facts.sources.get("images", "its server")
        text = f"{facts.name} takes no images ({where}), so the conversation's images are left out of what it is sent."
        await self._once(f"images {facts.name}", "Images left out", text)
        return prompt.replace(messages=messages)

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        return self._stream(prompt, next)

    async def _once(self, key: str, title: str, text: str) -> None:
        if key not in self._told:
            self._told.add(key)
            await self._advise(title, text)

    async def _prepare(self, prompt: Prompt, facts: ModelFacts) -> Prompt:
        """The prompt as this model takes it (its window, no images it cannot read); Ollama's notice,
        unless it waits for the first reply (``_assumed``)."""
        if facts.images is False:
            prompt = await self._without_images(prompt, facts)
        window = facts.context_window
        if not self._assumed(facts):
            await self._ollama_notice(prompt, facts)
        if window is not None and _fits(prompt, facts):  # else no compaction on every step
            prompt = prompt.replace(options=replace(prompt.options, context_window=window))
        return prompt

    def _assumed(self, facts: ModelFacts) -> bool:
        """The window is Ollama's default, assumed, and the server may say better once the first request
        loaded the model (``/api/ps`` lists loaded models only): the notice waits for that."""
        return facts.default_window and self._recheck is not None and facts.name not in self._rechecked

    async def _after_reply(self, prompt: Prompt, facts: ModelFacts) -> None:
        if self._assumed(facts) and self._recheck is not None:
            self._rechecked.add(facts.name)
            with anyio.move_on_after(RECHECK_S):
                try:
                    await self._recheck()
                except anyio.get_cancelled_exc_class():
                    raise
                except Exception as exc:  # the reply is in: a failed look at the server costs nothing more
                    log.info("asking the server for %s's window again failed: %s", facts.name, exc)
            facts = self._facts() or facts
        await self._ollama_notice(prompt, facts)

    async def _ollama_notice(self, prompt: Prompt, facts: ModelFacts) -> None:
        """Once: how to raise the small window Ollama runs the model at, or that the agent's own request
        does not fit in it."""
        if not facts.evicts_silently:
            return
        if _fits(prompt, facts):
            text, title = ollama_warning(facts, self._config_file), "Small context window"
        else:
            text, title = too_small_text(facts, _fixed(prompt), self._config_file), "Context window too small"
        await self._once(f"ollama {facts.name}", title, text)

    async def _stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        facts = self._facts()
        window = facts.context_window if facts is not None else None
        if facts is not None:
            prompt = await self._prepare(prompt, facts)
        wrote = reasoned = False
        finish: FinishReason | None = None
        usage: dict[str, int] = {}
        async for delta in next(prompt):
            if type(delta) is TextChunk:  # the hot path: an identity check, and no strip once it wrote
                if not wrote and delta.text.strip():
                    wrote = True
                yield delta
                continue
            match delta:
                case ToolStart():
                    wrote = True
                case ReasoningChunk():
                    reasoned = True
                case Finish(reason=reason):
                    finish = reason
                case UsageChunk():
                    for name in ("input", "output", "cache_read", "cache_write"):
                        value = getattr(delta, name)
                        if value is not None:
                            usage[name] = value
                case _:
                    pass
            yield delta
        used = sum(usage.values())
        if window is not None and used > 0:
            await self._usage(used, window)
        elif window is None and facts is not None and self._tell_unknown and not facts.evicts_silently:
            used = used or _estimate(prompt)
            if used > TELL_AFTER:
                text = unknown_window_text(facts.name, self._config_file, used)
                await self._once(f"window {facts.name}", "Context window unknown", text)
        if facts is not None and facts.server == "ollama":
            await self._after_reply(prompt, facts)
        if not wrote:
            await self._say(empty_reply_text(finish, reasoned))
