"""`session/update` notification params and every stable v1 `SessionUpdate` variant (SDK 2.4.0 schema)
(discriminated on `sessionUpdate`), and the UNSTABLE variants this agent sends to clients that advertise
them (``schema.unstable.json``: ``plan_update``/``plan_removed``, ``notice``, ``compaction_update``,
``compaction_summary_chunk``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias, cast

from pydantic import Field, SerializationInfo, SerializerFunctionWrapHandler, model_serializer

from ._models_content import ContentBlock
from ._models_session import SessionConfigOption
from ._models_tools import ToolCallContent, ToolCallLocation, ToolCallStatus, ToolKind
from ._wire import WireModel

__all__ = [
    "AgentMessageChunk",
    "AgentPlanUpdate",
    "AgentThoughtChunk",
    "AvailableCommand",
    "AvailableCommandInput",
    "AvailableCommandsUpdate",
    "CompactionStatus",
    "CompactionSummaryChunk",
    "CompactionUpdate",
    "ConfigOptionUpdate",
    "Cost",
    "CurrentModeUpdate",
    "Notice",
    "NoticeSeverity",
    "PlanEntry",
    "PlanEntryPriority",
    "PlanEntryStatus",
    "PlanItems",
    "PlanRemoved",
    "PlanUpdate",
    "SessionInfoUpdate",
    "SessionNotification",
    "SessionUpdate",
    "ToolCallProgress",
    "ToolCallStart",
    "UsageUpdate",
    "UserMessageChunk",
]


class UserMessageChunk(WireModel):
    session_update: Literal["user_message_chunk"] = "user_message_chunk"
    content: ContentBlock
    message_id: str | None = None


class AgentMessageChunk(WireModel):
    session_update: Literal["agent_message_chunk"] = "agent_message_chunk"
    content: ContentBlock
    message_id: str | None = None


class AgentThoughtChunk(WireModel):
    session_update: Literal["agent_thought_chunk"] = "agent_thought_chunk"
    content: ContentBlock
    message_id: str | None = None


class ToolCallStart(WireModel):
    """`tool_call`: announces a tool call; must precede every `tool_call_update` for its id."""

    session_update: Literal["tool_call"] = "tool_call"
    tool_call_id: str
    title: str
    name: str | None = None
    """The programmatic tool name (the name the model called; for an MCP tool, the name the model saw)."""
    kind: ToolKind | None = None
    status: ToolCallStatus | None = None
    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    raw_output: Any = None


class ToolCallProgress(WireModel):
    """`tool_call_update`: only changed fields; `content`/`locations` replace the whole collection."""

    session_update: Literal["tool_call_update"] = "tool_call_update"
    tool_call_id: str
    title: str | None = None
    name: str | None = None
    kind: ToolKind | None = None
    status: ToolCallStatus | None = None
    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    raw_input: Any = None
    raw_output: Any = None


PlanEntryPriority: TypeAlias = Literal["high", "medium", "low"]
PlanEntryStatus: TypeAlias = Literal["pending", "in_progress", "completed"]


class PlanEntry(WireModel):
    content: str
    priority: PlanEntryPriority
    status: PlanEntryStatus


class AgentPlanUpdate(WireModel):
    """`plan`: always the complete list; the client replaces its plan."""

    session_update: Literal["plan"] = "plan"
    entries: list[PlanEntry]


class AvailableCommandInput(WireModel):
    """The only (unstructured) command input kind: a hint shown when the user has typed no input."""

    hint: str


class AvailableCommand(WireModel):
    name: str
    description: str
    input: AvailableCommandInput | None = None


class AvailableCommandsUpdate(WireModel):
    session_update: Literal["available_commands_update"] = "available_commands_update"
    available_commands: list[AvailableCommand]


class CurrentModeUpdate(WireModel):
    session_update: Literal["current_mode_update"] = "current_mode_update"
    current_mode_id: str


class ConfigOptionUpdate(WireModel):
    """The complete list of config options."""

    session_update: Literal["config_option_update"] = "config_option_update"
    config_options: list[SessionConfigOption]


class SessionInfoUpdate(WireModel):
    """Omitted field = unchanged. To clear a field pass `None` explicitly (`SessionInfoUpdate(title=None)`):
    fields set explicitly to `None` are sent as JSON `null`."""

    session_update: Literal["session_info_update"] = "session_info_update"
    title: str | None = None
    updated_at: str | None = None

    @model_serializer(mode="wrap")
    def _explicit_nulls(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data: Any = handler(self)
        if not isinstance(data, dict):
            return data
        fields = cast(dict[str, Any], data)
        for name, alias in (("title", "title"), ("updated_at", "updatedAt")):
            if name in self.model_fields_set and getattr(self, name) is None:
                fields.setdefault(alias if info.by_alias else name, None)
        return fields


class Cost(WireModel):
    amount: float
    currency: str
    """ISO 4217."""


class UsageUpdate(WireModel):
    session_update: Literal["usage_update"] = "usage_update"
    used: Annotated[int, Field(ge=0)]
    """Tokens in the context window."""
    size: Annotated[int, Field(ge=0)]
    """Context window size in tokens."""
    cost: Cost | None = None


# --- UNSTABLE (schema.unstable.json): sent only to clients that advertise their side ---------------


class PlanItems(WireModel):
    """A plan as structured entries (``PlanUpdateContent`` of ``type: "items"``)."""

    type: Literal["items"] = "items"
    plan_id: str
    entries: list[PlanEntry]


class PlanUpdate(WireModel):
    """`plan_update`: the complete content of the plan ``plan.plan_id`` (client capability ``plan``)."""

    session_update: Literal["plan_update"] = "plan_update"
    plan: PlanItems


class PlanRemoved(WireModel):
    """`plan_removed`: the plan ``plan_id`` is dismissed."""

    session_update: Literal["plan_removed"] = "plan_removed"
    plan_id: str


NoticeSeverity: TypeAlias = Literal["info", "warning", "error"]


class Notice(WireModel):
    """`notice`: advisory information for the user, fire and forget (not session history)."""

    session_update: Literal["notice"] = "notice"
    severity: NoticeSeverity
    title: Annotated[str, Field(min_length=1)]
    description: str | None = None


CompactionStatus: TypeAlias = Literal["in_progress", "completed", "failed", "cancelled"]


class CompactionUpdate(WireModel):
    """`compaction_update`: one compaction, by id (client capability ``session.compaction``). ``summary``
    (only with ``completed``) replaces the retained summary; ``error`` only with ``failed``."""

    session_update: Literal["compaction_update"] = "compaction_update"
    compaction_id: str
    status: CompactionStatus
    summary: list[ContentBlock] | None = None
    error: str | None = None


class CompactionSummaryChunk(WireModel):
    """`compaction_summary_chunk`: one block appended to an in-progress compaction's summary."""

    session_update: Literal["compaction_summary_chunk"] = "compaction_summary_chunk"
    compaction_id: str
    content: ContentBlock


SessionUpdate: TypeAlias = Annotated[
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
    | PlanUpdate
    | PlanRemoved
    | Notice
    | CompactionUpdate
    | CompactionSummaryChunk,
    Field(discriminator="session_update"),
]


class SessionNotification(WireModel):
    """Params of `session/update`."""

    session_id: str
    update: SessionUpdate
