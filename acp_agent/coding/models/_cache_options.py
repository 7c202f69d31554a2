"""``CacheOptions``: the model middleware that gives each model call of a session its prompt-cache
options: the configured lifetime (``prompt_cache``: Anthropic's breakpoints; ``off`` sends no hints) and
the session's id as the cache key (``prompt_cache_key`` on OpenAI's own endpoint). Where the breakpoints go
is the provider's business (``harness.providers._cache``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.middleware import NextModel
    from harness.model import Delta, Prompt

__all__ = ["CacheOptions"]


class CacheOptions:
    """See the module docstring. ``ttl``: ``5m``, ``1h`` or None (caching off)."""

    def __init__(self, session_id: str, ttl: str | None) -> None:
        self._key = session_id
        self._ttl = ttl

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        options = replace(prompt.options, cache_ttl=self._ttl, cache_key=self._key if self._ttl else None)
        return next(prompt.replace(options=options))
