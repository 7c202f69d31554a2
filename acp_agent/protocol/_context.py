"""What a request handler gets from the connection (``RequestContext``), and what the connection needs of
the session layer (``Handler``). The rules are in ``acp_agent.protocol.connection``'s docstring."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

import anyio

from ._jsonrpc import RequestId

__all__ = ["Handler", "RequestContext"]

_log = logging.getLogger("acp_agent.protocol")


class RequestContext:
    """What a request handler knows about its request."""

    __slots__ = (
        "_cancel_callback",
        "_cancel_requested",
        "_scope",
        "cancellable",
        "method",
        "request_id",
        "sequence",
    )

    def __init__(
        self, request_id: RequestId, method: str, scope: anyio.CancelScope, sequence: int = 0
    ) -> None:
        self.request_id: RequestId = request_id
        self.method = method
        self.sequence = sequence
        """The request's place among the messages read (see ``Connection.sequence``)."""
        self.cancellable = True
        """False: `$/cancel_request` (and the end of input) only marks the request; it finishes and answers
        as usual (for short requests, where cancelling would only lose work). Set it before the first await."""
        self._scope = scope
        self._cancel_requested = False
        self._cancel_callback: Callable[[], None] | None = None

    @property
    def cancel_requested(self) -> bool:
        """True once the client sent `$/cancel_request` for this id (or the connection is closing)."""
        return self._cancel_requested

    def on_cancel_request(self, callback: Callable[[], None] | None) -> None:
        """Handle cancellation yourself: `callback` (sync, quick) is called instead of cancelling the
        handler's scope; the handler then still answers normally. `None` restores the default.
        Register it before the handler's first await: a cancel that arrived earlier already cancelled
        the scope."""
        self._cancel_callback = callback

    def _request_cancel(self) -> None:
        if self._cancel_requested:
            return
        self._cancel_requested = True
        if not self.cancellable:
            return
        callback = self._cancel_callback
        if callback is None:
            self._scope.cancel()
            return
        try:
            callback()
        except Exception:
            _log.exception("cancel callback of request %r failed; cancelling it", self.request_id)
            self._scope.cancel()


class Handler(Protocol):
    """The session layer's side of the connection."""

    async def handle_request(self, method: str, params: Any, ctx: RequestContext) -> Any: ...

    async def handle_notification(self, method: str, params: Any) -> None: ...
