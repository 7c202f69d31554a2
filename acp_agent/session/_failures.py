"""The message a failed turn's error carries: what happened and, where the error's own message has none,
what to do about it (Zed shows it as is)."""

from __future__ import annotations

__all__ = ["failure_message"]

# Advice added to a failure, unless the error's own message (the providers write actionable ones)
# already says something of the kind.
_ADVICE: dict[str, tuple[str, tuple[str, ...]]] = {
    "transport_error": (
        "check the model endpoint (ACP_AGENT_BASE_URL, --base-url) and the network",
        ("base-url", "base_url", "server", "network"),
    ),
    "rate_limited": ("wait a moment and retry", ("retry", "wait")),
    "context_too_long": (
        "/compact summarises the conversation, or start a new session",
        ("/compact",),
    ),
}


# What happened, said first unless the error's message already says it.
_WHAT: dict[str, tuple[str, tuple[str, ...]]] = {
    "transport_error": (
        "cannot reach the model",
        ("connect", "refused", "reach", "timed out", "timeout", "dropped", "reset", "stream", "endpoint"),
    ),
    "rate_limited": ("the model provider is rate-limiting requests", ("rate", "limit", "overload")),
    "context_too_long": ("the conversation is too long for the model's context window", ("context",)),
    "model_error": ("the model failed", ("model",)),
}


def failure_message(kind: str, error: BaseException | None) -> str:
    """A message a person can act on (Zed shows it as is): the error's own message, with advice only
    where it has none."""
    detail = str(getattr(error, "message", None) or error or "").strip()
    if kind == "tool_retries_exceeded":
        return f"the model kept calling tools with invalid input: {detail or 'no details'}"
    if kind in ("tool_error", "middleware_error"):
        return f"internal error in the agent ({kind}): {detail or 'no details'}; see the agent's log"
    what, said = _WHAT.get(kind, ("the model failed", ()))
    if not detail:
        text = what
    elif any(marker in detail.lower() for marker in said):
        text = detail  # the message already says what happened
    else:
        text = f"{what}: {detail}"
    retry_after = getattr(error, "retry_after", None)
    if kind == "rate_limited" and isinstance(retry_after, int | float):
        text += f" (the provider asks to wait {retry_after:g} s)"
    advice = _ADVICE.get(kind)
    if advice is not None and not any(marker in text.lower() for marker in advice[1]):
        text += f"; {advice[0]}"
    return text
