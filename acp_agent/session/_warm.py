"""The warm-up after ``initialize``: the imports and schema builds the first sessions need, in a worker
thread while the client reads the answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..protocol import models as m
from . import _harness

if TYPE_CHECKING:
    from ._setup import SessionFactory

__all__ = ["WarmsUp", "warm_imports"]


@runtime_checkable
class WarmsUp(Protocol):
    """A session factory that can import what its first session needs ahead of time."""

    def warm(self) -> None:
        """Runs in a worker thread once ``initialize`` was answered."""
        ...


def warm_imports(factory: SessionFactory) -> None:
    # Pays the harness's and the factory's import cost, and the models' schema builds, off the event loop.
    import sqlite3  # noqa: F401  # pyright: ignore[reportUnusedImport]  # the session index's (``_index``)

    _harness.preload("JsonlTranscript")  # the harness package and its transcript writer
    if isinstance(factory, WarmsUp):
        factory.warm()
    m.NewSessionRequest.model_validate({"cwd": "/", "mcpServers": []})
    m.PromptRequest.model_validate({"sessionId": "s", "prompt": [{"type": "text", "text": "x"}]})
