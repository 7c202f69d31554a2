"""``RetryModel``: retries a model call that failed rate limited or overloaded, before its first delta."""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Collection

import anyio

from .._errors import HarnessUsageError, ModelError
from .._kinds import ErrorKind
from ..middleware import NextModel, Relay
from ..model import Delta, Prompt, close_stream

__all__ = ["RetryModel"]

log = logging.getLogger(__name__)


class RetryModel:
    """A ``ModelMiddleware``. Waits ``retry_after`` when the server gave one (giving up when it exceeds
    ``max_delay``), else ``base_delay * 2**(try-1)`` with jitter, capped at ``max_delay``. Past the first
    delta an error is re-raised: the run has already folded what was streamed."""

    def __init__(
        self,
        max_tries: int = 3,
        *,
        base_delay: float = 1.0,
        max_delay: float = 60.0,
        kinds: Collection[ErrorKind] = (ErrorKind.RATE_LIMITED,),
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        if max_tries < 1:
            raise HarnessUsageError("RetryModel needs max_tries >= 1")
        self.max_tries = max_tries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.kinds = frozenset(kinds)
        self._sleep = sleep

    def delay(self, attempt: int, error: ModelError) -> float | None:
        """Seconds before try ``attempt + 1``, or None to give up."""
        if error.retry_after is not None:
            return error.retry_after if error.retry_after <= self.max_delay else None
        backoff = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return backoff * (0.5 + random.random() / 2)

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        return _Retrying(self, prompt, next, self._sleep)


class _Retrying(Relay):
    """One model call of ``RetryModel``: retried until its first delta, then the deltas handed on."""

    __slots__ = ("_next_model", "_prompt", "_retry", "_sleep")

    def __init__(
        self,
        retry: RetryModel,
        prompt: Prompt,
        next: NextModel,
        sleep: Callable[[float], Awaitable[None]],
    ) -> None:
        super().__init__()
        self._retry = retry
        self._prompt = prompt
        self._next_model = next
        self._sleep = sleep

    async def start(self) -> Delta:
        retry, prompt = self._retry, self._prompt
        attempt = 1
        while True:
            deltas: AsyncIterator[Delta] | None = None
            try:
                deltas = await self.hand(self._next_model(prompt))
                return await anext(deltas)
            except ModelError as exc:
                if attempt >= retry.max_tries or exc.kind not in retry.kinds or prompt.cancel.is_set():
                    raise
                wait = retry.delay(attempt, exc)
                if wait is None:
                    raise
                log.info(
                    "model call %s (try %d of %d); retrying in %.2f s",
                    exc.kind.value,
                    attempt,
                    retry.max_tries,
                    wait,
                )
                if deltas is not None:
                    await _close(deltas)
                await self._sleep(wait)
                attempt += 1

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await super().aclose()


async def _close(deltas: AsyncIterator[Delta]) -> None:
    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
        await close_stream(deltas)
