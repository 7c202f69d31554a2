"""``session/archive`` / ``session/unarchive`` (``sessionCapabilities.archive``) and ``session/status``
(``sessionCapabilities.status``).

Archiving hides a session from ``session/list`` (unless asked with ``archived: include`` or ``only``) and
keeps its id and history; a live one is closed first, as ``session/close`` would (its turn cancelled, its
last step written). ``session/status`` says whether this process has the session in memory (``open``) or
only on disk (``saved``), and changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol.errors import RpcError
from ._closing import close_live, closed_fully

if TYPE_CHECKING:
    from ..protocol import models as m
    from ..protocol.connection import RequestContext
    from ._registry import SessionRegistry
    from ._store import SessionMeta

__all__ = ["archive_session", "session_status", "unarchive_session"]


async def archive_session(
    agent: SessionRegistry, req: m.SessionIdRequest, ctx: RequestContext
) -> dict[str, Any]:
    live = agent.sessions.pop(req.session_id, None)
    if live is not None:
        await close_live(agent, live)
    await _set_archived(agent, req.session_id, True)
    return {}


async def unarchive_session(
    agent: SessionRegistry, req: m.SessionIdRequest, ctx: RequestContext
) -> dict[str, Any]:
    await _set_archived(agent, req.session_id, False)
    return {}


async def _set_archived(agent: SessionRegistry, session_id: str, archived: bool) -> None:
    async with agent.deletes.using(session_id):  # not written back by a delete's side (``_deletes``)
        await closed_fully(agent, session_id)
        meta = await _known(agent, session_id)
        if meta.archived != archived:
            try:
                await agent.store.save_meta(meta.touched(archived=archived))
            except FileNotFoundError:  # removed since it was read, by another process: not made again
                raise _not_found(session_id) from None
        live = agent.sessions.get(session_id)  # unarchived while loaded: the live one keeps its flag right
        if live is not None:
            live.meta = live.meta.touched(archived=archived)


async def session_status(
    agent: SessionRegistry, req: m.SessionIdRequest, ctx: RequestContext
) -> dict[str, Any]:
    if req.session_id in agent.sessions:
        return {"status": "open"}
    await _known(agent, req.session_id)
    return {"status": "saved"}


async def _known(agent: SessionRegistry, session_id: str) -> SessionMeta:
    meta = await agent.store.load_meta(session_id)
    if meta is None:
        raise _not_found(session_id)
    return meta


def _not_found(session_id: str) -> RpcError:
    return RpcError(-32002, f"session not found: {session_id}", {"sessionId": session_id, "uri": session_id})
