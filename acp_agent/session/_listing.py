"""``session/list``: the sessions on disk (and the live ones, whose state is newer), newest first, in pages
of ``PAGE_SIZE`` behind an opaque cursor."""

from __future__ import annotations

import base64
import binascii
import os
from typing import TYPE_CHECKING, Final

from ..protocol import models as m
from ..protocol.errors import RpcError
from ._roots import list_filter

if TYPE_CHECKING:
    from ..protocol.connection import RequestContext
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
    offset = _decode_cursor(req.cursor) if req.cursor is not None else 0
    metas = await agent.store.list()
    for live in agent.sessions.values():  # in-memory state is newer than disk mid-turn
        metas = [live.meta if meta.id == live.id else meta for meta in metas]
    if wanted is not None:
        metas = [meta for meta in metas if _normalised(meta.cwd) == wanted]
    if archived != "include":
        metas = [meta for meta in metas if meta.archived == (archived == "only")]
    metas.sort(key=lambda meta: (meta.updated_at, meta.id), reverse=True)
    page = metas[offset : offset + PAGE_SIZE]
    more = offset + PAGE_SIZE < len(metas)
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
        next_cursor=_encode_cursor(offset + PAGE_SIZE) if more else None,
    )


def _normalised(path: str) -> str:
    return os.path.normpath(path)


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


def _decode_cursor(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        if not text.startswith("o:"):
            raise ValueError(cursor)
        offset = int(text[2:])
        if offset < 0:
            raise ValueError(cursor)
        return offset
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise RpcError.invalid_params("invalid params: cursor: not a cursor this agent gave out") from None
