"""Tool calls: kinds, statuses, tool call content (`content`, `diff`, `terminal`), locations, and the
permission request (`session/request_permission`) with its outcome."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias, cast

from pydantic import Field, SerializationInfo, SerializerFunctionWrapHandler, model_serializer

from ._models_content import ContentBlock
from ._wire import WireModel

__all__ = [
    "CancelledPermissionOutcome",
    "ContentToolCallContent",
    "DiffToolCallContent",
    "PermissionOption",
    "PermissionOptionKind",
    "RequestPermissionOutcome",
    "RequestPermissionRequest",
    "RequestPermissionResponse",
    "SelectedPermissionOutcome",
    "TerminalToolCallContent",
    "ToolCallContent",
    "ToolCallLocation",
    "ToolCallStatus",
    "ToolCallUpdate",
    "ToolKind",
]

ToolKind: TypeAlias = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
ToolCallStatus: TypeAlias = Literal["pending", "in_progress", "completed", "failed"]
PermissionOptionKind: TypeAlias = Literal["allow_once", "allow_always", "reject_once", "reject_always"]


class ContentToolCallContent(WireModel):
    type: Literal["content"] = "content"
    content: ContentBlock


class DiffToolCallContent(WireModel):
    """A file edit. `old_text=None` means a new file; `oldText` is then sent as an explicit `null`."""

    type: Literal["diff"] = "diff"
    path: str
    old_text: str | None = None
    new_text: str

    @model_serializer(mode="wrap")
    def _always_old_text(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data: Any = handler(self)
        if not isinstance(data, dict):
            return data
        fields = cast(dict[str, Any], data)
        fields.setdefault("oldText" if info.by_alias else "old_text", None)
        return fields


class TerminalToolCallContent(WireModel):
    type: Literal["terminal"] = "terminal"
    terminal_id: str


ToolCallContent: TypeAlias = Annotated[
    ContentToolCallContent | DiffToolCallContent | TerminalToolCallContent,
    Field(discriminator="type"),
]


class ToolCallLocation(WireModel):
    path: str
    """Absolute."""
    line: int | None = None
    """1-based."""


class ToolCallUpdate(WireModel):
    """Tool call fields without the `sessionUpdate` tag (used inside permission requests). Only the
    fields that are set are sent; `content` and `locations` replace the client's whole collection."""

    tool_call_id: str
    title: str | None = None
    name: str | None = None
    kind: ToolKind | None = None
    status: ToolCallStatus | None = None
    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    raw_output: Any = None


class PermissionOption(WireModel):
    option_id: str
    name: str
    kind: PermissionOptionKind


class RequestPermissionRequest(WireModel):
    """Params of `session/request_permission` (agent -> client)."""

    session_id: str
    tool_call: ToolCallUpdate
    options: list[PermissionOption]


class CancelledPermissionOutcome(WireModel):
    outcome: Literal["cancelled"] = "cancelled"


class SelectedPermissionOutcome(WireModel):
    outcome: Literal["selected"] = "selected"
    option_id: str


RequestPermissionOutcome: TypeAlias = Annotated[
    CancelledPermissionOutcome | SelectedPermissionOutcome, Field(discriminator="outcome")
]


class RequestPermissionResponse(WireModel):
    outcome: RequestPermissionOutcome
