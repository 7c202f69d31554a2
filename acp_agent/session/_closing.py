"""``session/close`` and ``session/delete``: a live session leaves the table, its turn is cancelled and
its last step written; until then a delete (or load) of the same id waits for it. A delete runs alone on its
session (``_deletes``), and is refused while another agent process has the session open (``_holds``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol.errors import INTERNAL_ERROR, RpcError
from ._holds import SessionInUse

if TYPE_CHECKING:
    from ..protocol import models as m
    from ..protocol.connection import RequestContext
    from ._registry import SessionRegistry
    from ._session import Session

__all__ = ["close_live", "close_session", "closed_fully", "delete_session", "in_use_error"]


def in_use_error(exc: SessionInUse) -> RpcError:
    """A load, resume or delete refused because another agent process has the session open (``_holds``)."""
    return RpcError(INTERNAL_ERROR, str(exc), {"errorKind": "session_in_use", "sessionId": exc.session_id})


async def close_session(
    agent: SessionRegistry, req: m.CloseSessionRequest, ctx: RequestContext
) -> dict[str, Any]:
    session = agent.sessions.pop(req.session_id, None)
    if session is None:
        await closed_fully(agent, req.session_id)
        if await agent.store.load_meta(req.session_id) is None:
            raise RpcError.not_found(f"session not found: {req.session_id}", uri=req.session_id)
        return {}
    await close_live(agent, session)
    return {}


async def close_live(agent: SessionRegistry, session: Session) -> None:
    """Close a session that left the live table; until its turn has ended and its last step is on
    disk, a delete (or load) of the same id waits for it."""
    await agent.closing.close(session)


async def closed_fully(agent: SessionRegistry, session_id: str) -> None:
    await agent.closing.wait(session_id)


async def delete_session(
    agent: SessionRegistry, req: m.DeleteSessionRequest, ctx: RequestContext
) -> dict[str, Any]:
    async with agent.deletes.deleting(req.session_id):  # after the loads and resumes of it under way
        session = agent.sessions.pop(req.session_id, None)
        if session is not None:
            await close_live(agent, session)
        await closed_fully(agent, req.session_id)
        try:
            await agent.store.delete(req.session_id)
        except SessionInUse as exc:  # open in another agent process: nothing removed (``_holds``)
            raise in_use_error(exc) from None
    return {}
