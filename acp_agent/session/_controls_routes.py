"""``session/set_mode`` and ``session/set_config_option``: served by the session's controls (its factory's
modes and options), whose follow-up (the updates the change causes) goes out after the answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol.errors import RpcError

if TYPE_CHECKING:
    from ..protocol import models as m
    from ..protocol.connection import RequestContext
    from ._registry import SessionRegistry

__all__ = ["set_config_option", "set_mode"]


async def set_mode(
    agent: SessionRegistry, req: m.SetSessionModeRequest, ctx: RequestContext
) -> dict[str, Any]:
    controls = agent.live_session(req.session_id).setup.controls
    if controls is None:
        raise RpcError.invalid_params("invalid params: this session has no modes")
    await controls.set_mode(req.mode_id)
    agent.after_response(ctx, controls.client_followed_up)
    return {}


async def set_config_option(
    agent: SessionRegistry, req: m.SetSessionConfigOptionRequest, ctx: RequestContext
) -> dict[str, Any]:
    controls = agent.live_session(req.session_id).setup.controls
    if controls is None:
        raise RpcError.invalid_params("invalid params: this session has no config options")
    options = await controls.set_config_option(req.config_id, req.value)
    agent.after_response(ctx, controls.client_followed_up)
    return {"configOptions": options}
