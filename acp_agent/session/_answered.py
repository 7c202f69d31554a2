"""Work that waits for a response to be on the wire: a session's after-open work (Zed drops the updates of a
session it has not registered, and it registers one when it reads the opening response), a turn's
follow-up, what a request leaves for after its answer. ``serve.ResponseWatch`` reports each response it
writes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["Answered"]


class Answered:
    """Callbacks by request id, each called once the response to its request is written."""

    def __init__(self) -> None:
        self._waiting: dict[Any, Callable[[], None]] = {}

    @property
    def watching(self) -> bool:
        """Whether some response is awaited (``written`` wants to hear of it)."""
        return bool(self._waiting)

    def then(self, request_id: Any, callback: Callable[[], None]) -> None:
        """``callback`` (sync, quick) once the response to ``request_id`` is written, after those given
        before it for that request."""
        earlier = self._waiting.get(request_id)
        if earlier is None:
            self._waiting[request_id] = callback
            return

        def both() -> None:
            earlier()
            callback()

        self._waiting[request_id] = both

    def written(self, request_id: Any) -> None:
        """The response to ``request_id`` is on the wire."""
        callback = self._waiting.pop(request_id, None)
        if callback is not None:
            callback()
