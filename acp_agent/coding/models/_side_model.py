"""The side model: a cheaper model of the same endpoint for side work (``small_model`` in the
configuration): compaction summaries, and titles (``SessionSetup.side_model``). Without one, side work
runs on the session's model, as before. Every side request is counted by the session's ``UsageMeter``
at the price of the model it went to."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING

from harness import HarnessUsageError
from harness.compact import SUMMARY_SYSTEM
from harness.middleware import Prelude

if TYPE_CHECKING:
    from harness import Model
    from harness.middleware import NextModel
    from harness.model import Delta, Prompt

    from .._controls import CodingControls
    from ._pricing import Price
    from ._usage_meter import UsageMeter

__all__ = ["ExploreModel", "SideModel", "SideSummary"]


class SideModel:
    """``small()``: the configured small model, metered (None: none configured); ``__call__()``: the
    model for side work: the small one, else the session's (None before its first turn chose it)."""

    def __init__(self, controls: Callable[[], CodingControls | None], meter: UsageMeter) -> None:
        self._controls = controls
        self._meter = meter

    async def small(self) -> Model | None:
        controls = self._controls()
        side = await controls.side_model() if controls is not None else None
        if controls is None or side is None:
            return None
        model, name = side
        return self._meter.model(model, partial(controls.price, name))

    async def __call__(self, *, in_turn: bool = True) -> Model | None:
        controls = self._controls()
        side = await controls.side_model() if controls is not None else None
        if controls is not None and side is not None:
            model, name = side
            return self._meter.model(model, partial(controls.price, name), in_turn=in_turn)
        main = controls.current_model() if controls is not None else None
        if main is None or controls is None:
            return None
        return self._meter.model(main, controls.price, in_turn=in_turn)

    async def off_turn(self) -> Model | None:
        """The side model for work between turns (a title): its requests count in the session's usage,
        not in a turn's (the next turn's ``usage`` would be wrong by a request it did not make)."""
        return await self(in_turn=False)


class SideSummary:
    """Model middleware inside the compaction: its summary requests go to the small model when one is
    configured (else on, to the session's model)."""

    def __init__(self, small: Callable[[], Awaitable[Model | None]]) -> None:
        self._small = small

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        if prompt.system != SUMMARY_SYSTEM:
            return next(prompt)
        small_model = self._small

        async def opening() -> AsyncIterator[Delta]:
            small = await small_model()
            return small.stream(prompt) if small is not None else next(prompt)

        return Prelude(opening)  # the deltas handed on with no frame each


class ExploreModel:
    """The model of the ``explore`` sub-agent: the session's current one, or with ``small`` (the
    ``explore_model = "small"`` setting) the configured small model when there is one. Its requests are
    counted by the meter in the sub-agent's middleware, at ``price()``."""

    def __init__(self, controls: Callable[[], CodingControls | None], small: bool) -> None:
        self._controls = controls
        self._small = small

    def price(self) -> Price | None:
        controls = self._controls()
        if controls is None:
            return None
        return controls.price(controls.small_model_name() if self._small else None)

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        return self._stream(prompt)

    async def _stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        controls = self._controls()
        side = await controls.side_model() if controls is not None and self._small else None
        model = side[0] if side is not None else (controls.current_model() if controls is not None else None)
        if model is None:
            raise HarnessUsageError("the session has no model yet; a sub-agent runs inside a turn")
        async for delta in model.stream(prompt):
            yield delta
