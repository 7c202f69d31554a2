"""Exceptions of the harness: misuse, model failures, and the tool's way to ask for a retry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._kinds import ErrorKind

if TYPE_CHECKING:
    from ._kinds import ErrorKind

__all__ = ["HarnessUsageError", "ModelError", "Retry", "ToolFailure", "UnsupportedOptionError"]


class HarnessUsageError(Exception):
    """Misuse by the host or a tool author: a bug to fix, never something the model can correct.

    Raised from a model, middleware or tool it ends the turn ``Failed`` and is re-raised from the
    iteration after ``TurnEnded``.
    """


class UnsupportedOptionError(HarnessUsageError):
    """A provider cannot honour an option or a prompt (e.g. Resume); the message names the fallback."""


class ModelError(Exception):
    """The model call failed at run time. ``kind`` classifies it; ``retry_after`` is in seconds."""

    def __init__(self, message: str, kind: ErrorKind | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.kind: ErrorKind = kind if kind is not None else ErrorKind.MODEL_ERROR
        self.retry_after = retry_after

    def __repr__(self) -> str:
        return f"ModelError({self.message!r}, kind={self.kind.value!r}, retry_after={self.retry_after!r})"


class Retry(Exception):
    """Raised by a tool: the model gets an error result to correct, counted against ``Options.tool_retries``."""


class ToolFailure(Exception):
    """A tool's exception rebuilt from its serialised form (``{"class": ..., "message": ...}``)."""

    def __init__(self, class_name: str, message: str) -> None:
        super().__init__(message)
        self.class_name = class_name
        self.message = message

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ToolFailure)
            and other.class_name == self.class_name
            and other.message == self.message
        )

    def __hash__(self) -> int:
        return hash((self.class_name, self.message))
