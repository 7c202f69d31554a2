"""A harness ``Usage`` as ACP's (unstable) ``Usage`` object: what ``PromptResponse.usage`` and a sub-agent's
``idle`` state (``IdleStateUpdate.usage``) carry."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness import Usage

__all__ = ["wire_usage"]


def wire_usage(usage: Usage) -> dict[str, int]:
    """ACP's (unstable) ``Usage``: ``inputTokens`` is the whole prompt, cached parts included;
    ``thoughtTokens`` (part of ``outputTokens``) where the provider said it."""
    wire = {
        "totalTokens": usage.total,
        "inputTokens": usage.prompt,
        "outputTokens": usage.output,
        "cachedReadTokens": usage.cache_read,
        "cachedWriteTokens": usage.cache_write,
    }
    if usage.reasoning:
        wire["thoughtTokens"] = usage.reasoning
    return wire
