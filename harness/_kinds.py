"""The enumerations of the harness: roles, end reasons, error kinds, finish reasons, delivery."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Delivery", "EndReason", "ErrorKind", "FinishReason", "Role"]


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


class EndReason(StrEnum):
    """Why a turn ended (``Ended.reason``, ``TurnEnded.reason``)."""

    DONE = "done"
    STOPPED = "stopped"
    AWAITING_INPUT = "awaiting_input"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


class ErrorKind(StrEnum):
    """What made a turn fail (``Ended.error_kind``) and what a ``ModelError`` is."""

    MODEL_ERROR = "model_error"
    CONTEXT_TOO_LONG = "context_too_long"
    RATE_LIMITED = "rate_limited"
    TRANSPORT_ERROR = "transport_error"
    TOOL_RETRIES_EXCEEDED = "tool_retries_exceeded"
    MIDDLEWARE_ERROR = "middleware_error"
    TOOL_ERROR = "tool_error"


class FinishReason(StrEnum):
    """Why the model stopped writing a message."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    REFUSAL = "refusal"
    CONTENT_FILTER = "content_filter"


class Delivery(StrEnum):
    """How a user message joined a running turn: ``Run.interject``'s ``STEER`` and ``QUEUE``, or
    ``CONTINUE`` (an ``EndMiddleware`` kept the turn going past a reply that would have ended it)."""

    STEER = "steer"
    QUEUE = "queue"
    CONTINUE = "continue"
