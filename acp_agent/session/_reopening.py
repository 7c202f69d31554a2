"""``session/load`` and ``session/resume``: a saved session made live again, its history read and its set-up
done before the answer (a load replays it to the client first), or a live one resumed as it is. A delete of
the same id runs before or after, never beside (``_deletes``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..protocol.errors import RpcError
from ._opening import controls_state, kept_servers
from ._roots import checked_roots
from ._setup import checked_system_prompt

if TYPE_CHECKING:
    from ..protocol import models as m
    from ..protocol.connection import RequestContext
    from ._registry import SessionRegistry

__all__ = ["reopen_session"]

log = logging.getLogger(__name__)


async def reopen_session(
    agent: SessionRegistry,
    req: m.LoadSessionRequest | m.ResumeSessionRequest,
    ctx: RequestContext,
    *,
    replay: bool,
) -> dict[str, Any]:
    cwd, dirs = await checked_roots(req.cwd, req.additional_directories)
    prompt = checked_system_prompt(req.system_prompt)
    async with agent.deletes.using(req.session_id):
        live = agent.sessions.get(req.session_id)
        if live is not None and live.busy:
            raise RpcError.invalid_request("invalid request: a prompt is running on this session")
        meta = await agent.store.load_meta(req.session_id)
        if meta is None:
            raise RpcError.not_found(f"session not found: {req.session_id}", uri=req.session_id)
        if live is not None and not replay and prompt == live.env.system_prompt:
            live.opened.set()
            return controls_state(live)
        if live is not None:  # out of the table first: after the close, a newer load's may be there
            if agent.sessions.get(req.session_id) is live:
                del agent.sessions[req.session_id]
            await agent.closing.close(live)
        servers = kept_servers(req.mcp_servers or [])
        meta = meta.touched(cwd=cwd, additional_directories=dirs, mcp_servers=servers)
        history = await agent.store.load_messages(meta.id)
        session = await agent.open_session(meta, history, ctx, prompt)
        try:
            await agent.store.save_meta(meta)
        except FileNotFoundError:  # deleted meanwhile by another agent process sharing the home
            if agent.sessions.get(meta.id) is session:
                agent.sessions.pop(meta.id, None)
            await agent.closing.close(session)
            raise RpcError.not_found(f"session not found: {req.session_id}", uri=req.session_id) from None
        if replay:
            await session.replay()
        log.info("session %s %s (%d messages)", meta.id, "loaded" if replay else "resumed", len(history))
        return controls_state(session)
