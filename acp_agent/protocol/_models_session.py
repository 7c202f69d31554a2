"""Session lifecycle methods (`session/new|load|resume|list|delete|close|set_mode|set_config_option|
prompt|cancel`), MCP server descriptions, modes and config options."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias, cast

from pydantic import Discriminator, Field, StrictBool, StrictStr, Tag, model_validator

from ._models_content import ContentBlock
from ._wire import RequestId, WireModel

__all__ = [
    "CancelNotification",
    "CancelRequestNotification",
    "CloseSessionRequest",
    "DeleteSessionRequest",
    "EnvVariable",
    "HttpHeader",
    "ListSessionsRequest",
    "ListSessionsResponse",
    "LoadSessionRequest",
    "LoadSessionResponse",
    "McpServer",
    "McpServerAcp",
    "McpServerHttp",
    "McpServerSse",
    "McpServerStdio",
    "McpServerUnknown",
    "NewSessionRequest",
    "NewSessionResponse",
    "PromptRequest",
    "PromptResponse",
    "ResumeSessionRequest",
    "ResumeSessionResponse",
    "SessionConfigOption",
    "SessionConfigOptionBoolean",
    "SessionConfigOptionSelect",
    "SessionConfigSelectGroup",
    "SessionConfigSelectOption",
    "SessionInfo",
    "SessionMode",
    "SessionModeState",
    "SetSessionConfigOptionRequest",
    "SetSessionConfigOptionResponse",
    "SetSessionModeRequest",
    "StopReason",
    "Usage",
]

StopReason: TypeAlias = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]


# --- MCP servers -------------------------------------------------------------------------------


class EnvVariable(WireModel):
    name: str
    value: str


class HttpHeader(WireModel):
    name: str
    value: str


class McpServerStdio(WireModel):
    """Untagged in v1 (Zed sends no `type`); a stray `"type": "stdio"` is accepted, never sent."""

    type: Literal["stdio"] | None = None
    name: str
    command: str
    args: list[str]
    env: list[EnvVariable]


class McpServerHttp(WireModel):
    type: Literal["http"] = "http"
    name: str
    url: str
    headers: list[HttpHeader]


class McpServerSse(WireModel):
    type: Literal["sse"] = "sse"
    name: str
    url: str
    headers: list[HttpHeader]


class McpServerAcp(WireModel):
    """UNSTABLE (``mcpCapabilities.acp``): a server the client runs, reached over the ACP connection."""

    type: Literal["acp"] = "acp"
    name: str
    server_id: str


class McpServerUnknown(WireModel):
    """A server of a transport this schema version does not know (e.g. unstable `acp`): kept so one odd
    entry does not fail the whole `session/new`; the session layer should skip it with a log line."""

    type: str
    name: str | None = None


def _mcp_server_tag(value: Any) -> str:
    kind: object = (
        cast(dict[str, Any], value).get("type") if isinstance(value, dict) else getattr(value, "type", None)
    )
    if kind is None or kind == "stdio":
        return "stdio"
    if kind in ("http", "sse"):
        return str(kind)
    if kind == "acp" and isinstance(value, dict) and "serverId" in value:
        return "acp"
    return "unknown"


McpServer: TypeAlias = Annotated[
    Annotated[McpServerStdio, Tag("stdio")]
    | Annotated[McpServerHttp, Tag("http")]
    | Annotated[McpServerSse, Tag("sse")]
    | Annotated[McpServerAcp, Tag("acp")]
    | Annotated[McpServerUnknown, Tag("unknown")],
    Discriminator(_mcp_server_tag),
]


# --- modes and config options ------------------------------------------------------------------


class SessionMode(WireModel):
    id: str
    name: str
    description: str | None = None


class SessionModeState(WireModel):
    current_mode_id: str
    available_modes: list[SessionMode]


class SessionConfigSelectOption(WireModel):
    value: str
    name: str
    description: str | None = None


class SessionConfigSelectGroup(WireModel):
    group: str
    name: str
    options: list[SessionConfigSelectOption]


class SessionConfigOptionSelect(WireModel):
    type: Literal["select"] = "select"
    id: str
    name: str
    description: str | None = None
    category: str | None = None
    """`mode`, `model`, `model_config`, `thought_level`, or any custom string."""
    current_value: str
    options: list[SessionConfigSelectOption] | list[SessionConfigSelectGroup]


class SessionConfigOptionBoolean(WireModel):
    """Only send when the client advertised `clientCapabilities.session.configOptions.boolean`."""

    type: Literal["boolean"] = "boolean"
    id: str
    name: str
    description: str | None = None
    category: str | None = None
    current_value: bool


SessionConfigOption: TypeAlias = Annotated[
    SessionConfigOptionSelect | SessionConfigOptionBoolean, Field(discriminator="type")
]


# --- requests and responses --------------------------------------------------------------------


class SystemPrompt(WireModel):
    """UNSTABLE (``sessionCapabilities.systemPrompt``): the client's system-level instructions for a
    session, ``append``ed to the agent's own or (``override``) replacing its built-in defaults."""

    mode: str
    content: list[ContentBlock]


class NewSessionRequest(WireModel):
    cwd: str
    mcp_servers: list[McpServer]
    additional_directories: list[str] | None = None
    system_prompt: SystemPrompt | None = None


class NewSessionResponse(WireModel):
    session_id: str
    modes: SessionModeState | None = None
    config_options: list[SessionConfigOption] | None = None


class LoadSessionRequest(WireModel):
    session_id: str
    cwd: str
    mcp_servers: list[McpServer]
    additional_directories: list[str] | None = None
    system_prompt: SystemPrompt | None = None


class LoadSessionResponse(WireModel):
    modes: SessionModeState | None = None
    config_options: list[SessionConfigOption] | None = None


class ResumeSessionRequest(WireModel):
    session_id: str
    cwd: str
    mcp_servers: list[McpServer] | None = None
    additional_directories: list[str] | None = None
    system_prompt: SystemPrompt | None = None


class ResumeSessionResponse(WireModel):
    modes: SessionModeState | None = None
    config_options: list[SessionConfigOption] | None = None


class ListSessionsRequest(WireModel):
    cwd: str | None = None
    cursor: str | None = None
    archived: str | None = None
    """UNSTABLE (``sessionCapabilities.archive``): ``exclude`` (the default), ``include`` or ``only``."""


class SessionInfo(WireModel):
    session_id: str
    cwd: str
    additional_directories: list[str] | None = None
    title: str | None = None
    updated_at: str | None = None
    """ISO 8601 / RFC 3339."""
    archived: bool | None = None
    """UNSTABLE: sent by an agent that advertises ``sessionCapabilities.archive``."""


class ListSessionsResponse(WireModel):
    sessions: list[SessionInfo]
    next_cursor: str | None = None


class DeleteSessionRequest(WireModel):
    session_id: str


class CloseSessionRequest(WireModel):
    session_id: str


class SetSessionModeRequest(WireModel):
    session_id: str
    mode_id: str


class SetSessionConfigOptionRequest(WireModel):
    """`type: "boolean"` requires a boolean `value`; a missing or other `type` means a string value id."""

    session_id: str
    config_id: str
    type: str | None = None
    value: StrictBool | StrictStr

    @model_validator(mode="after")
    def _value_matches_type(self) -> SetSessionConfigOptionRequest:
        if (self.type == "boolean") != isinstance(self.value, bool):
            wanted = "a boolean" if self.type == "boolean" else "a string value id"
            raise ValueError(f"value must be {wanted}")
        return self


class SetSessionConfigOptionResponse(WireModel):
    config_options: list[SessionConfigOption]
    """The complete list."""


class PromptRequest(WireModel):
    session_id: str
    prompt: list[ContentBlock]


class Usage(WireModel):
    """UNSTABLE: token usage information for a prompt turn."""

    total_tokens: Annotated[int, Field(ge=0)]
    input_tokens: Annotated[int, Field(ge=0)]
    output_tokens: Annotated[int, Field(ge=0)]
    thought_tokens: Annotated[int, Field(ge=0)] | None = None
    cached_read_tokens: Annotated[int, Field(ge=0)] | None = None
    cached_write_tokens: Annotated[int, Field(ge=0)] | None = None


class PromptResponse(WireModel):
    stop_reason: StopReason
    usage: Usage | None = None
    """UNSTABLE: token usage for this turn (optional)."""


class CancelNotification(WireModel):
    """Params of the `session/cancel` notification."""

    session_id: str


class CancelRequestNotification(WireModel):
    """Params of the `$/cancel_request` notification (either direction)."""

    request_id: RequestId
