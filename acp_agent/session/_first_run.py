"""The first run: whether anything names a model to use, and whether the client can run the agent's set-up
in a terminal (``auth.terminal``, or Zed's ``_meta["terminal-auth"]``): then ``session/new`` answers
``auth_required`` and the client offers the ``setup`` method before the user types.

The session layer reads no configuration: a factory that does (the coding factory) says whether its
configuration names a provider (``KnowsModel``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..protocol.jsonvalue import as_object

if TYPE_CHECKING:
    from harness import Model

    from ..model_setup import ModelSettings

__all__ = ["KnowsModel", "needs_setup", "terminal_auth"]


@runtime_checkable
class KnowsModel(Protocol):
    """A session factory that can say whether its configuration for ``cwd`` names a provider."""

    async def names_a_model(self, cwd: Path | None) -> bool: ...


def terminal_auth(caps: Mapping[str, Any]) -> bool:
    """The client runs an agent's terminal auth method."""
    return (
        as_object(caps.get("auth")).get("terminal") is True
        or as_object(caps.get("_meta")).get("terminal-auth") is True
    )


async def needs_setup(settings: ModelSettings, model: Model | None, factory: object, cwd: str | None) -> bool:
    """Nothing names a provider: not the flags and environment (``settings``), not the factory's
    configuration for ``cwd`` (the user's, when None)."""
    if model is not None or settings.configured:
        return False
    if isinstance(factory, KnowsModel):
        return not await factory.names_a_model(Path(cwd) if cwd is not None else None)
    return True
