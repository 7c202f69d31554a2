"""The model a coding session talks to (``ModelSwitch``, so ``/model`` applies from the next step) and its
thought level (``ThoughtLevel``: the provider knobs of each level merged into the prompt's options)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING

from harness.providers import registry

if TYPE_CHECKING:
    from harness import Model
    from harness.middleware import NextModel
    from harness.model import Delta, Prompt

__all__ = ["ModelSwitch", "ThoughtLevel", "thought_levels"]


def thought_levels(provider: str | None) -> tuple[str, ...]:
    """The thought levels ``provider`` offers (``harness.providers.registry``), ``off`` first; none: ``()``."""
    spec = registry.get(provider)
    return tuple(spec.thinking) if spec is not None else ()


class ModelSwitch:
    """The session's model: delegates to the chosen one, so ``/model`` applies from the next step."""

    def __init__(self, current: Model) -> None:
        self.current = current

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        return self.current.stream(prompt)


class ThoughtLevel:
    """Model middleware: merges the chosen thought level's provider knobs into each prompt's options."""

    def __init__(self, provider: str | None) -> None:
        self.provider = provider
        self.level = "off"

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        spec = registry.get(self.provider)
        knobs = spec.thinking.get(self.level) if spec is not None else None
        if not knobs or spec is None:
            return next(prompt)
        key = spec.protocol  # the key its class reads its knobs under
        merged = {**prompt.options.provider, key: {**prompt.options.provider.get(key, {}), **knobs}}
        return next(prompt.replace(options=replace(prompt.options, provider=merged)))
