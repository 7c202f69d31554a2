"""The model's own stream under a step's model middleware: a ``Relay``, so it costs no frame per delta.

It decides which tools may run from the prompt that reaches the model, and tells the step whether an
exception came from the model (``MODEL_ERROR``) or from a middleware (``MIDDLEWARE_ERROR``): before the
first delta by catching it, after it by the model stream's frame in the exception's traceback (the
deltas no longer pass through here).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from types import FrameType
from typing import Any

from ._relay import Relay
from ._state import TurnState
from ._tools import Tool
from .model import Delta, Model, Prompt

__all__ = ["ModelCall", "raised_by_model"]


class ModelCall(Relay):
    """``model.stream(prompt)`` for the innermost ``next``; ``from_model`` collects what it knows to be
    the model's: its exceptions before the first delta, and its stream's frame (``FrameType``)."""

    __slots__ = ("_by_name", "_from_model", "_model", "_prompt", "_state")

    def __init__(
        self,
        state: TurnState,
        model: Model,
        prompt: Prompt,
        by_name: Mapping[str, Tool],
        from_model: list[Any],
    ) -> None:
        super().__init__()
        self._state = state
        self._model = model
        self._prompt = prompt
        self._by_name = by_name
        self._from_model = from_model

    async def start(self) -> Delta:
        p = self._prompt
        # The prompt that reaches the model decides which tools may run.
        offered = {spec.name for spec in p.tools}
        self._state.offered = {k: v for k, v in self._by_name.items() if k in offered}
        deltas = self._model.stream(p)
        frame: FrameType | None = getattr(deltas, "ag_frame", None)
        if frame is None:  # not an async generator: each of its errors is caught as it passes
            deltas = _caught(deltas, self._from_model)
        else:
            self._from_model.append(frame)
        await self.hand(deltas)
        try:
            return await anext(deltas)
        except StopAsyncIteration:
            raise
        except Exception as e:
            self._from_model.append(e)
            raise


async def _caught(deltas: AsyncIterator[Delta], from_model: list[Any]) -> AsyncIterator[Delta]:
    try:
        async for d in deltas:
            yield d
    except Exception as e:
        from_model.append(e)
        raise
    finally:
        close = getattr(deltas, "aclose", None)
        if close is not None:
            await close()


def raised_by_model(e: BaseException, from_model: list[Any]) -> bool:
    """Whether ``e`` is one the model raised: caught as it passed, or raised through its stream's frame."""
    if any(x is e for x in from_model):
        return True
    frames = [x for x in from_model if isinstance(x, FrameType)]
    tb = e.__traceback__
    while tb is not None:
        if any(tb.tb_frame is f for f in frames):
            return True
        tb = tb.tb_next
    return False
