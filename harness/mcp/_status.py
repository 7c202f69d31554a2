"""A server's state as the host sees it: ``ServerStatus``, ``ServerState`` and the callback that hears it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

__all__ = ["ServerState", "ServerStatus", "StatusCallback"]


class ServerStatus(StrEnum):
    STOPPED = "stopped"  # not started yet, or closed
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class ServerState:
    """A server's state as the user should see it; ``cause`` says why it failed."""

    name: str
    status: ServerStatus
    cause: str | None = None
    tools: int = 0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "status": self.status.value, "tools": self.tools}
        if self.cause is not None:
            d["cause"] = self.cause
        return d


StatusCallback = Callable[[ServerState], None]
