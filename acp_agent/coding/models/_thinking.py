"""The model a coding session talks to (``ModelSwitch``, so ``/model`` applies from the next step) and its
thought level (``ThoughtLevel``: the provider knobs of each level merged into the prompt's options)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from harness import Model
    from harness.middleware import NextModel
    from harness.model import Delta, Prompt

__all__ = ["THOUGHT", "ModelSwitch", "ThoughtLevel"]

# Thought levels -> the provider knobs (Options.provider) that select them.
THOUGHT: Final[dict[str, dict[str, dict[str, Any]]]] = {
    "anthropic": {
        "off": {},
        "low": {"thinking": {"type": "enabled", "budget_tokens": 2048}},
        "medium": {"thinking": {"type": "enabled", "budget_tokens": 8192}},
        "high": {"thinking": {"type": "enabled", "budget_tokens": 24576}},
    },
    "openai": {
        "off": {},
        "low": {"reasoning_effort": "low"},
        "medium": {"reasoning_effort": "medium"},
        "high": {"reasoning_effort": "high"},
    },
    "openai-responses": {
        "off": {},
        "low": {"reasoning": {"effort": "low"}},
        "medium": {"reasoning": {"effort": "medium"}},
        "high": {"reasoning": {"effort": "high"}},
    },
}
_PROVIDER_KEY: Final = {"anthropic": "anthropic", "openai": "openai", "openai-responses": "openai"}


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
        knobs = THOUGHT.get(self.provider or "", {}).get(self.level) or {}
        if not knobs or self.provider is None:
            return next(prompt)
        key = _PROVIDER_KEY[self.provider]
        merged = {**prompt.options.provider, key: {**prompt.options.provider.get(key, {}), **knobs}}
        return next(prompt.replace(options=replace(prompt.options, provider=merged)))
