"""`initialize`, `authenticate` and `logout`: capabilities of both sides, implementation info, auth
methods. Capability markers that are objects in the schema (`sessionCapabilities.list: {}`) use
`CapabilityMarker`: present = supported, `None` = not advertised."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias, cast

from pydantic import Discriminator, Field, Tag

from ._wire import WireModel

__all__ = [
    "AgentAuthCapabilities",
    "AgentCapabilities",
    "AuthCapabilities",
    "AuthMethod",
    "AuthMethodAgent",
    "AuthMethodTerminal",
    "AuthenticateRequest",
    "AuthenticateResponse",
    "CapabilityMarker",
    "ClientCapabilities",
    "ClientSessionCapabilities",
    "ElicitationCapabilities",
    "EmptyResponse",
    "FileSystemCapabilities",
    "Implementation",
    "InitializeRequest",
    "InitializeResponse",
    "LogoutRequest",
    "LogoutResponse",
    "McpCapabilities",
    "PromptCapabilities",
    "ProtocolVersion",
    "SessionCapabilities",
    "SessionConfigOptionsCapabilities",
]

ProtocolVersion: TypeAlias = Annotated[int, Field(strict=True, ge=0, le=65535)]
"""uint16; a string such as "1.0.0" is invalid."""


class CapabilityMarker(WireModel):
    """An empty capability object (`{}`), optionally with `_meta`."""


class EmptyResponse(WireModel):
    """A result with no fields: sent as `{}`."""


# --- client side -------------------------------------------------------------------------------


class FileSystemCapabilities(WireModel):
    read_text_file: bool = False
    write_text_file: bool = False


class SessionConfigOptionsCapabilities(WireModel):
    boolean: CapabilityMarker | None = None


class ClientSessionCapabilities(WireModel):
    config_options: SessionConfigOptionsCapabilities | None = None


class AuthCapabilities(WireModel):
    terminal: bool = False


class ElicitationCapabilities(WireModel):
    form: CapabilityMarker | None = None
    url: CapabilityMarker | None = None


class ClientCapabilities(WireModel):
    fs: FileSystemCapabilities = Field(default_factory=FileSystemCapabilities)
    terminal: bool = False
    session: ClientSessionCapabilities | None = None
    auth: AuthCapabilities = Field(default_factory=AuthCapabilities)
    elicitation: ElicitationCapabilities | None = None


class Implementation(WireModel):
    name: str
    version: str
    title: str | None = None


class InitializeRequest(WireModel):
    protocol_version: ProtocolVersion
    client_capabilities: ClientCapabilities = Field(default_factory=ClientCapabilities)
    client_info: Implementation | None = None


# --- agent side --------------------------------------------------------------------------------


class PromptCapabilities(WireModel):
    image: bool = False
    audio: bool = False
    embedded_context: bool = False


class McpCapabilities(WireModel):
    http: bool = False
    sse: bool = False


class SessionCapabilities(WireModel):
    list: CapabilityMarker | None = None
    delete: CapabilityMarker | None = None
    additional_directories: CapabilityMarker | None = None
    resume: CapabilityMarker | None = None
    close: CapabilityMarker | None = None


class AgentAuthCapabilities(WireModel):
    logout: CapabilityMarker | None = None


class AgentCapabilities(WireModel):
    load_session: bool = False
    prompt_capabilities: PromptCapabilities = Field(default_factory=PromptCapabilities)
    mcp_capabilities: McpCapabilities = Field(default_factory=McpCapabilities)
    session_capabilities: SessionCapabilities = Field(default_factory=SessionCapabilities)
    auth: AgentAuthCapabilities | None = None


class AuthMethodAgent(WireModel):
    """The default auth method kind: sent without a `type` field."""

    id: str
    name: str
    description: str | None = None


class AuthMethodTerminal(WireModel):
    """Only offer when the client advertised `clientCapabilities.auth.terminal`."""

    type: Literal["terminal"] = "terminal"
    id: str
    name: str
    description: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None


def _auth_method_tag(value: Any) -> str:
    kind: object = (
        cast(dict[str, Any], value).get("type") if isinstance(value, dict) else getattr(value, "type", None)
    )
    return "terminal" if kind == "terminal" else "agent"


AuthMethod: TypeAlias = Annotated[
    Annotated[AuthMethodAgent, Tag("agent")] | Annotated[AuthMethodTerminal, Tag("terminal")],
    Discriminator(_auth_method_tag),
]


class InitializeResponse(WireModel):
    protocol_version: ProtocolVersion
    agent_capabilities: AgentCapabilities = Field(default_factory=AgentCapabilities)
    auth_methods: list[AuthMethod] = Field(default_factory=lambda: [])
    agent_info: Implementation | None = None


class AuthenticateRequest(WireModel):
    method_id: str


class LogoutRequest(WireModel):
    pass


AuthenticateResponse = EmptyResponse
LogoutResponse = EmptyResponse
