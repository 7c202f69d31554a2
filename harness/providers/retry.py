"""``RetryModel``: retries a model call that failed rate limited or overloaded, before its first delta."""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Collection

import anyio

from .._errors import HarnessUsageError, ModelError
from .._kinds import ErrorKind
from ..middleware import NextModel
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

    async def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        attempt = 1
        while True:
            yielded = False
            try:
                deltas: AsyncIterator[Delta] = next(prompt)
                try:
                    async for delta in deltas:
                        yielded = True
                        yield delta
                finally:
                    with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                        await close_stream(deltas)
                return
            except ModelError as exc:
                if (
                    yielded
                    or attempt >= self.max_tries
                    or exc.kind not in self.kinds
                    or prompt.cancel.is_set()
                ):
                    raise
                wait = self.delay(attempt, exc)
                if wait is None:
                    raise
                log.info(
                    "model call %s (try %d of %d); retrying in %.2f s",
                    exc.kind.value,
                    attempt,
                    self.max_tries,
                    wait,
                )
                await self._sleep(wait)
                attempt += 1
