"""The first run: whether anything names a model to use, and whether the client can run the agent's set-up
in a terminal (``auth.terminal``, or Zed's ``_meta["terminal-auth"]``): then ``session/new`` answers
``auth_required`` and the client offers the ``setup`` method before the user types."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from ..protocol.jsonvalue import as_object

if TYPE_CHECKING:
    from harness import Model

    from ..model_setup import ModelSettings

__all__ = ["needs_setup", "terminal_auth"]


def terminal_auth(caps: Mapping[str, Any]) -> bool:
    """The client runs an agent's terminal auth method."""
    return (
        as_object(caps.get("auth")).get("terminal") is True
        or as_object(caps.get("_meta")).get("terminal-auth") is True
    )


async def needs_setup(settings: ModelSettings, model: Model | None, cwd: str | None) -> bool:
    """Nothing names a provider (flags, environment, the config files for ``cwd``)."""
    if model is not None or settings.configured:
        return False
    from ..config import ConfigError, load_config

    where = Path(cwd) if cwd is not None else Path.home()
    no_flags: dict[str, Any] = {}
    try:
        config = await anyio.to_thread.run_sync(load_config, where, no_flags, dict(os.environ))
    except ConfigError:
        return False  # the factory reports the problems, with their fixes
    return config.provider is None
