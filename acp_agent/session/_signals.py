"""The agent's input ends on SIGTERM or SIGHUP as it does at EOF (see ``acp_agent._ending``):
``EndOnSignal`` wraps the protocol's input, and ``watch`` ends it when a signal comes, or at once when one
came before the event loop started."""

from __future__ import annotations

import logging
import signal

import anyio
from anyio.abc import ByteReceiveStream

from .._ending import SIGNALS, received

__all__ = ["EndOnSignal", "watch"]

log = logging.getLogger(__name__)


class EndOnSignal(ByteReceiveStream):
    """``inner``, until ``end``: then (and from then on) the end of the stream."""

    def __init__(self, inner: ByteReceiveStream) -> None:
        self._inner = inner
        self._ended = False
        self._reading: anyio.CancelScope | None = None

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._ended:
            raise anyio.EndOfStream
        with anyio.CancelScope() as scope:
            self._reading = scope
            try:
                return await self._inner.receive(max_bytes)
            finally:
                self._reading = None
        raise anyio.EndOfStream  # reached only when ``end`` cancelled the read

    def end(self) -> None:
        self._ended = True
        if self._reading is not None:
            self._reading.cancel()

    async def aclose(self) -> None:
        await self._inner.aclose()


async def watch(stream: EndOnSignal) -> None:
    """Ends ``stream`` on the first SIGTERM or SIGHUP (runs until cancelled)."""
    with anyio.open_signal_receiver(*SIGNALS) as signals:
        early = received()  # looked at once the receiver is in place: a signal in between is not lost
        if early is None:
            async for signum in signals:
                early = signum
                break
        log.info("%s: ending as at the end of input", signal.Signals(early).name)
        stream.end()
        await anyio.sleep_forever()  # later signals are taken here while the sessions close
