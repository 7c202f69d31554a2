"""``session/list``: the sessions on disk (and the live ones, whose state is newer), newest first, in pages
of ``PAGE_SIZE`` behind an opaque cursor (the last one's key: a page costs what it returns, read from the
store's index)."""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any, Final

from ..protocol import models as m
from ..protocol.errors import RpcError
from ._index import ListQuery
from ._roots import list_filter

if TYPE_CHECKING:
    from ..protocol.connection import RequestContext
    from ._meta import SessionMeta
    from ._registry import SessionRegistry

__all__ = ["PAGE_SIZE", "list_sessions"]

PAGE_SIZE: Final = 50
_ARCHIVE_FILTERS: Final = ("exclude", "include", "only")


async def list_sessions(
    agent: SessionRegistry, req: m.ListSessionsRequest, ctx: RequestContext
) -> m.ListSessionsResponse:
    """``session/list``: newest first, ``PAGE_SIZE`` a page, filtered by ``cwd`` when given and by the
    archive state (``archived``: ``exclude`` archived sessions by default, ``include`` or ``only`` them)."""
    wanted = list_filter(req.cwd)
    archived = req.archived or "exclude"
    if archived not in _ARCHIVE_FILTERS:
        raise RpcError.invalid_params(
            f"invalid params: archived: {archived!r} is not exclude, include or only"
        )
    after = _decode_cursor(req.cursor) if req.cursor is not None else None
    query = ListQuery(wanted, archived, after, PAGE_SIZE)
    metas = await agent.store.page(query, [live.meta for live in agent.sessions.values()])
    page = metas[:PAGE_SIZE]
    return m.ListSessionsResponse(
        sessions=[
            m.SessionInfo(
                session_id=meta.id,
                cwd=meta.cwd,
                title=meta.title,
                updated_at=meta.updated_at,
                additional_directories=list(meta.additional_directories) or None,
                archived=meta.archived,
            )
            for meta in page
        ],
        next_cursor=_encode_cursor(page[-1]) if len(metas) > PAGE_SIZE else None,
    )


def _encode_cursor(last: SessionMeta) -> str:
    """The key of the last session shown: the next page starts after it, whatever was added meanwhile."""
    return base64.urlsafe_b64encode(json.dumps(["k", last.updated_at, last.id]).encode()).decode()


def _decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        key: Any = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        match key:
            case ["k", str(updated_at), str(session_id)]:
                return updated_at, session_id
            case _:
                raise ValueError(cursor)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise RpcError.invalid_params("invalid params: cursor: not a cursor this agent gave out") from None
