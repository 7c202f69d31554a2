"""``Relay``: a model middleware's stream that hands the inner stream on without a frame per delta.

An async generator that only passes deltas on (``async for d in inner: yield d``) costs a generator resume
and a yield per delta per layer; a chain of them was a tenth of the agent's CPU per streamed update. A
``Relay`` does its own work before the first delta (``start``) and from then on each ``__anext__`` is the
inner stream's own: relays inside relays collapse to the innermost stream that is not one.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable

from ._errors import HarnessUsageError
from .model import Delta, close_stream

__all__ = ["Prelude", "Relay"]


class Relay(AsyncIterator[Delta]):
    """Subclass and implement ``start``: open the inner stream with ``hand(inner)`` and return its first
    delta (retry, rewrite or watch until then); raise ``StopAsyncIteration`` when it has none.

    After ``start`` the deltas, the stream's end and its errors reach the consumer straight from the inner
    stream, unseen by the relay: a middleware that looks at later deltas, or does work at the end, is an
    async generator. ``aclose()`` closes the inner stream (what the relay's ``finally`` would have done).
    """

    __slots__ = ("_inner", "_next", "_started")

    def __init__(self) -> None:
        self._inner: AsyncIterator[Delta] | None = None
        self._next: Callable[[], Awaitable[Delta]] = self._first
        self._started = False

    @abstractmethod
    async def start(self) -> Delta:
        """Open the inner stream (``hand``) and return its first delta; runs once, at the first ``__anext__``."""

    async def hand(self, inner: AsyncIterator[Delta]) -> AsyncIterator[Delta]:
        """Make ``inner`` the stream handed on (a stream handed before is closed first); returns it."""
        before, self._inner = self._inner, inner
        if before is not None and before is not inner:
            await close_stream(before)
        return inner

    def __aiter__(self) -> Relay:
        return self

    def __anext__(self) -> Awaitable[Delta]:
        return self._next()

    async def _first(self) -> Delta:
        self._next = _running
        try:
            delta = await self.start()
        except BaseException:
            self._next = _ended  # as a generator that raised: finished, never started again
            self._started = True
            raise
        inner = self._inner
        if inner is None:
            self._next = _ended
            raise HarnessUsageError(f"{type(self).__name__}.start returned a delta without hand(inner)")
        # Collapse: a relay inside that has started hands on its own inner stream's __anext__.
        self._next = inner._next if isinstance(inner, Relay) and inner._started else inner.__anext__
        self._started = True
        return delta

    async def aclose(self) -> None:
        """Close the inner stream; later ``__anext__`` calls end at once (as a closed generator's)."""
        if self._next is _running:
            raise RuntimeError(f"{type(self).__name__} is already running (in start)")
        self._next = _ended
        self._started = True
        inner, self._inner = self._inner, None
        if inner is not None:
            await close_stream(inner)


class Prelude(Relay):
    """The common relay: ``await opening()`` runs before the first delta and returns the inner stream
    (``next(rewritten prompt)``), whose deltas are then handed on."""

    __slots__ = ("_opening",)

    def __init__(self, opening: Callable[[], Awaitable[AsyncIterator[Delta]]]) -> None:
        super().__init__()
        self._opening = opening

    async def start(self) -> Delta:
        inner = await self.hand(await self._opening())
        return await anext(inner)


async def _ended() -> Delta:
    raise StopAsyncIteration


async def _running() -> Delta:
    raise RuntimeError("a relay's start is already running")
