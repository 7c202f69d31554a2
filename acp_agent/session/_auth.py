"""``auth/status`` (UNSTABLE, ``agentCapabilities.auth.status``) and ``logout`` (``auth.logout``).

``auth/status`` says whether a session can start without the user setting up a model first:
``authenticated`` (a key is configured; not checked), ``not_required`` (a local server with no key, or the
scripted model), ``unauthenticated`` (nothing configured: ``acp-agent setup`` or the variables). The
account it reports is the provider's key by its label only: never the key.

``logout`` forgets the key: the one ``acp-agent setup`` stored (``api-key`` in the user's config folder,
named by ``config.toml``'s ``api_key_file``) is deleted and the line removed, and this process forgets the
key it read (from there or from the environment, which it cannot change: the next start reads the
variable again). It asks nothing: the client asked. Sessions already open keep their model; new ones
need a model set up again (``auth_required``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

if TYPE_CHECKING:
    from ..model_setup import ModelSettings
    from ..protocol.connection import RequestContext
    from ._agent import AcpAgent

__all__ = ["KEY_FILE", "auth_status", "logout"]

log = logging.getLogger(__name__)

KEY_FILE = "api-key"
"""The file ``acp-agent setup`` writes a typed key to, in the user's config folder."""


def status_of(settings: ModelSettings, model_given: bool) -> dict[str, Any]:
    if settings.provider == "script" or (model_given and not settings.configured):
        return {"state": "not_required"}
    if settings.api_key:
        label = f"{settings.provider} API key" if settings.provider else "API key"
        return {"state": "authenticated", "accounts": [{"label": label, "active": True}]}
    if settings.configured:  # a local server that needs no key
        return {"state": "not_required"}
    return {"state": "unauthenticated"}


async def auth_status(agent: AcpAgent, params: Any, ctx: RequestContext) -> dict[str, Any]:
    return status_of(agent.settings, agent.has_model_given)


async def logout(agent: AcpAgent, params: Any, ctx: RequestContext) -> dict[str, Any]:
    await anyio.to_thread.run_sync(forget_stored_key, os.environ.copy())
    agent.settings = dataclasses.replace(agent.settings, api_key=None)
    agent.forget_model()
    log.info("logout: the API key is forgotten")
    return {}


def forget_stored_key(env: dict[str, str]) -> bool:
    """Delete the key ``acp-agent setup`` stored and its ``api_key_file`` line (blocking: a worker
    thread); False when there was none. A key file the user wrote themselves elsewhere is left alone."""
    from ..config import user_config_dir, user_config_file, write_user_config

    directory = user_config_dir(env)
    key = directory / KEY_FILE
    config = user_config_file(env)
    named = _named_key_file(config)
    if named is not None and Path(named).expanduser() == key:
        write_user_config({"api_key_file": None}, env, check=False)
    try:
        key.unlink()
    except FileNotFoundError:
        return False
    return True


def _named_key_file(config: Path) -> str | None:
    import tomllib

    try:
        data = tomllib.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    value = data.get("api_key_file")
    return value if isinstance(value, str) else None
