"""``UsageMeter``: what a session's model requests used and cost, per turn and in all.

Every model request of the session is counted: the turn's steps and its side requests (compaction
summaries, the ``explore`` sub-agent, a title or summary on the side model), as the provider reported
them (the last value of each field of the reply's ``UsageChunk``s). Each request is priced with the
model it went to (``_pricing``); a request to a model with no known price makes the session's cost
unknown from then on (no cost is sent: an under-count would be a guess).

Kept in the session's directory (``usage.json``: the running totals), so ``session/load`` goes on from
them and ``acp-agent sessions list/show`` shows them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.to_thread

from harness import Usage
from harness.model import UsageChunk

from ...session.plugin import wire_usage, write_json_atomic

if TYPE_CHECKING:
    from harness import Model
    from harness.middleware import NextModel
    from harness.model import Delta, Prompt

    from ._pricing import Price

__all__ = ["USAGE_FILE", "UsageMeter", "read_usage", "wire_usage"]

log = logging.getLogger(__name__)

USAGE_FILE: Final = "usage.json"


def read_usage(path: Path) -> dict[str, Any] | None:
    """A session's ``usage.json`` (blocking); None when absent or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("%s: unreadable usage (%s)", path, exc)
        return None
    return data if isinstance(data, dict) else None  # pyright: ignore[reportUnknownVariableType]


class UsageMeter:
    """See the module docstring. ``price()``: the session's current model's price (None: unknown);
    ``path``: where the totals are kept (None: not kept)."""

    def __init__(self, price: Callable[[], Price | None], path: Path | None = None) -> None:
        self._price = price
        self._path = path
        self.session = Usage()
        self.turn = Usage()
        self.cost = 0.0
        """USD of the priced requests (meaningful when ``unpriced`` is 0)."""
        self.unpriced = 0
        self.requests = 0
        self._restored = path is None

    # --- the totals kept ---------------------------------------------------------------------

    def restore_sync(self) -> None:
        """The totals an earlier process kept (blocking)."""
        data = read_usage(self._path) if self._path is not None else None
        if data is None:
            return
        usage: Any = data.get("usage")
        self.session = Usage.from_dict(usage) if isinstance(usage, dict) else Usage()  # pyright: ignore[reportUnknownArgumentType]
        cost, unpriced, requests = data.get("costUsd"), data.get("unpriced"), data.get("requests")
        self.cost = float(cost) if isinstance(cost, int | float) else 0.0
        self.unpriced = unpriced if isinstance(unpriced, int) else (0 if isinstance(cost, int | float) else 1)
        self.requests = requests if isinstance(requests, int) else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "usage": self.session.to_dict(),
            "costUsd": round(self.cost, 8) if not self.unpriced else None,
            "unpriced": self.unpriced,
            "requests": self.requests,
        }

    async def save(self) -> None:
        path = self._path
        if path is None:
            return
        data = self.to_dict()
        try:
            await anyio.to_thread.run_sync(lambda: write_json_atomic(path, data, sync=False))
        except OSError as exc:
            log.warning("writing %s failed: %s", path, exc)

    # --- what the session tells ------------------------------------------------------------------

    async def turn_started(self) -> None:
        """A prompt starts: the turn's count from zero (the kept totals read first, once)."""
        if not self._restored:
            self._restored = True
            await anyio.to_thread.run_sync(self.restore_sync)
        self.turn = Usage()

    def turn_usage(self) -> dict[str, int] | None:
        return wire_usage(self.turn) if self.turn.total else None

    def session_cost(self) -> dict[str, Any] | None:
        """ACP's ``Cost`` of the session so far, None when a request's price was unknown."""
        if self.unpriced or not self.requests:
            return None
        return {"amount": round(self.cost, 6), "currency": "USD"}

    # --- counting --------------------------------------------------------------------------------

    def add(self, usage: Usage, price: Price | None, *, in_turn: bool = True) -> None:
        self.session = self.session + usage
        if in_turn:
            self.turn = self.turn + usage
        self.requests += 1
        if price is None:
            self.unpriced += 1
        else:
            self.cost += price.cost(usage)

    async def counted(
        self, deltas: AsyncIterator[Delta], price: Price | None, *, in_turn: bool = True
    ) -> AsyncIterator[Delta]:
        """``deltas`` passed on, their usage counted once the reply ends (or stops); ``in_turn``: in the
        running turn's usage too (not for a request between turns)."""
        last = [0, 0, 0, 0, 0]
        try:
            async for delta in deltas:
                if type(delta) is UsageChunk:
                    said = (delta.input, delta.output, delta.cache_read, delta.cache_write, delta.reasoning)
                    for i, v in enumerate(said):
                        if v is not None:
                            last[i] = v
                yield delta
        finally:
            if any(last):
                self.add(Usage(*last), price, in_turn=in_turn)
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await self.save()

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        return self.counted(next(prompt), self._price())

    def at(self, price: Callable[[], Price | None]) -> _PricedMeter:
        """This meter as a model middleware that prices at ``price()`` (a sub-agent's model)."""
        return _PricedMeter(self, price)

    def model(self, model: Model, price: Callable[[], Price | None], *, in_turn: bool = True) -> Model:
        """``model`` with its requests counted at ``price`` (the side model's); ``in_turn``: in the
        running turn's usage too."""
        return _Metered(model, self, price, in_turn)


class _Metered:
    def __init__(
        self, model: Model, meter: UsageMeter, price: Callable[[], Price | None], in_turn: bool
    ) -> None:
        self._model = model
        self._meter = meter
        self._price = price
        self._in_turn = in_turn

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        return self._meter.counted(self._model.stream(prompt), self._price(), in_turn=self._in_turn)


class _PricedMeter:
    def __init__(self, meter: UsageMeter, price: Callable[[], Price | None]) -> None:
        self._meter = meter
        self._price = price

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        return self._meter.counted(next(prompt), self._price())
