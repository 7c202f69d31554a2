"""The warm-up after ``initialize``: the imports and schema builds the first sessions need, in a worker
thread while the client reads the answer."""

from __future__ import annotations

import gc
import logging
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..protocol import models as m
from . import _harness

if TYPE_CHECKING:
    from ._setup import SessionFactory

__all__ = ["WarmsUp", "freeze_after_warm_up", "warm_imports"]

log = logging.getLogger(__name__)
_freeze = False


@runtime_checkable
class WarmsUp(Protocol):
    """A session factory that can import what its first session needs ahead of time."""

    def warm(self) -> None:
        """Runs in a worker thread once ``initialize`` was answered."""
        ...


def freeze_after_warm_up() -> None:
    """Once the warm-up imported what sessions need, leave the start-up's objects out of the garbage
    collector's passes (``gc.freeze``): a full collection would otherwise walk them all (~60k objects,
    10 ms and more, a pause landing on whatever request runs then: a cancel's or a ``session/new``'s p99).
    For the agent's own process only (``serve_stdio``): in a test process, whatever garbage exists at
    that moment would never be collected."""
    global _freeze
    _freeze = True


def warm_imports(factory: SessionFactory) -> None:
    # Pays the harness's and the factory's import cost, and the models' schema builds, off the event loop.
    import sqlite3  # noqa: F401  # pyright: ignore[reportUnusedImport]  # the session index's (``_index``)

    _harness.preload("JsonlTranscript")  # the harness package and its transcript writer
    if isinstance(factory, WarmsUp):
        factory.warm()
    m.NewSessionRequest.model_validate({"cwd": "/", "mcpServers": []})
    m.PromptRequest.model_validate({"sessionId": "s", "prompt": [{"type": "text", "text": "x"}]})
    if _freeze:
        gc.freeze()  # (cheap: moves the collector's lists, walks nothing)
        log.debug("warmed up: %d objects left out of the garbage collector's passes", gc.get_freeze_count())
