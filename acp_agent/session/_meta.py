"""A session's metadata, as ``meta.json`` holds it (``_store``) and the index lists it (``_index``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

__all__ = ["SessionMeta", "now_iso", "valid_session_id"]

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


def valid_session_id(session_id: str) -> bool:
    """Ids name directories: anything else (``..``, slashes) is simply not a session."""
    return bool(_ID_RE.match(session_id)) and ".." not in session_id


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class SessionMeta:
    id: str
    cwd: str
    created_at: str
    updated_at: str
    title: str | None = None
    additional_directories: tuple[str, ...] = ()
    mcp_servers: tuple[dict[str, Any], ...] = field(default=(), compare=False)
    title_source: str | None = None
    """Who set ``title``: ``prompt`` (the first prompt, cut short), ``model`` or ``user`` (never replaced)."""
    archived: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "cwd": self.cwd,
            "title": self.title,
            "titleSource": self.title_source,
            "archived": self.archived,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "additionalDirectories": list(self.additional_directories),
            "mcpServers": list(self.mcp_servers),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionMeta:
        return cls(
            id=str(data["id"]),
            cwd=str(data["cwd"]),
            created_at=str(data.get("createdAt") or data.get("updatedAt") or now_iso()),
            updated_at=str(data.get("updatedAt") or data.get("createdAt") or now_iso()),
            title=data.get("title") if isinstance(data.get("title"), str) else None,
            additional_directories=tuple(str(d) for d in data.get("additionalDirectories") or ()),
            mcp_servers=tuple(_objects(data.get("mcpServers"))),
            title_source=data.get("titleSource") if isinstance(data.get("titleSource"), str) else None,
            archived=data.get("archived") is True,
        )

    def touched(self, **changes: Any) -> SessionMeta:
        return replace(self, updated_at=now_iso(), **changes)


def _objects(value: Any) -> list[dict[str, Any]]:
    items: list[Any] = list(value) if isinstance(value, list) else []  # pyright: ignore[reportUnknownArgumentType]
    return [dict(item) for item in items if isinstance(item, dict)]  # pyright: ignore[reportUnknownArgumentType]
