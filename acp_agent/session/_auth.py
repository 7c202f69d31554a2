"""``auth/status`` (UNSTABLE, ``agentCapabilities.auth.status``) and ``logout`` (``auth.logout``).

``auth/status`` says whether a session can start without the user setting up a model first:
``authenticated`` (a key is configured; not checked), ``not_required`` (a local server with no key, or the
scripted model), ``unauthenticated`` (nothing configured: ``acp-agent setup`` or the variables). The
account it reports is the provider's key by its label only: never the key.

``logout`` forgets the key: the one ``acp-agent setup`` stored (``api-key`` in the user's config folder,
named by ``config.toml``'s ``api_key_file``) is deleted and the line removed (``AcpAgent.forget_key``, given
by the composition root: this layer knows no configuration files), and this process forgets the key it read (from there or from the environment, which it cannot change: the next start reads the
variable again). It asks nothing: the client asked. Sessions already open keep their model; new ones
need a model set up again (``auth_required``).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any

import anyio.to_thread

if TYPE_CHECKING:
    from ..model_setup import ModelSettings
    from ..protocol.connection import RequestContext
    from ._registry import ModelOwner

__all__ = ["auth_status", "logout", "status_of"]

log = logging.getLogger(__name__)


def status_of(settings: ModelSettings, model_given: bool) -> dict[str, Any]:
    if settings.provider == "script" or (model_given and not settings.configured):
        return {"state": "not_required"}
    if settings.api_key:
        label = f"{settings.provider} API key" if settings.provider else "API key"
        return {"state": "authenticated", "accounts": [{"label": label, "active": True}]}
    if settings.configured:  # a local server that needs no key
        return {"state": "not_required"}
    return {"state": "unauthenticated"}


async def auth_status(agent: ModelOwner, params: Any, ctx: RequestContext) -> dict[str, Any]:
    return status_of(agent.settings, agent.has_model_given)


async def logout(agent: ModelOwner, params: Any, ctx: RequestContext) -> dict[str, Any]:
    if agent.forget_key is not None:
        await anyio.to_thread.run_sync(agent.forget_key)
    agent.settings = dataclasses.replace(agent.settings, api_key=None)
    agent.forget_model()
    log.info("logout: the API key is forgotten")
    return {}
