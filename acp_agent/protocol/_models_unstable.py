"""UNSTABLE ACP methods this agent serves (``schema.unstable.json``): ``session/fork``,
``session/set_title`` and ``providers/list|set|disable``; and the ``_session/steering`` extension (served as
claude-agent-acp and codex-acp serve it; in no schema).

The unstable ``session/update`` variants live with the stable ones (``_models_updates``), in one union.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from pydantic import Field, field_validator

from ._models_content import ContentBlock
from ._models_session import McpServer, SessionConfigOption, SessionModeState, SystemPrompt
from ._wire import WireModel
from .jsonvalue import as_object

__all__ = [
    "DisableProviderRequest",
    "ForkSessionRequest",
    "ForkSessionResponse",
    "ListProvidersResponse",
    "ProviderCurrentConfig",
    "ProviderInfo",
    "SetProviderRequest",
    "SessionIdRequest",
    "SetSessionTitleRequest",
    "SteeringOutcome",
    "SteeringRequest",
    "SteeringResponse",
]


class ForkSessionRequest(WireModel):
    """``session/fork``: a new session with the history of ``session_id`` (capability
    ``sessionCapabilities.fork``)."""

    session_id: str
    cwd: str
    additional_directories: list[str] | None = None
    mcp_servers: list[McpServer] = Field(default_factory=list[McpServer])
    system_prompt: SystemPrompt | None = None


class ForkSessionResponse(WireModel):
    session_id: str
    modes: SessionModeState | None = None
    config_options: list[SessionConfigOption] | None = None


class ProviderCurrentConfig(WireModel):
    """A provider's effective routing, without secrets (no headers, no credentials in the URL)."""

    api_type: str
    base_url: str


class ProviderInfo(WireModel):
    provider_id: str
    supported: list[str]
    required: bool
    current: ProviderCurrentConfig | None = None


class ListProvidersResponse(WireModel):
    providers: list[ProviderInfo]


class SetProviderRequest(WireModel):
    """``providers/set``: replace the provider's whole routing. ``headers`` are secrets: never logged,
    stored or echoed (``repr`` hides them)."""

    provider_id: str
    api_type: str
    base_url: str
    headers: dict[str, str] = Field(default_factory=dict[str, str], repr=False)

    @field_validator("headers")
    @classmethod
    def _plain_headers(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not name or any(c in name for c in " \t\r\n:") or any(c in text for c in "\r\n\0"):
                raise ValueError(f"header {name!r} is not a valid HTTP header")
        return value


class DisableProviderRequest(WireModel):
    provider_id: str


class SetSessionTitleRequest(WireModel):
    """``session/set_title`` (capability ``sessionCapabilities.title``): the user's title for the session;
    the agent never replaces it with one of its own."""

    session_id: str
    title: str


SteeringOutcome: TypeAlias = Literal["injected", "startedNewTurn", "promptRequired"]


class SteeringRequest(WireModel):
    """``_session/steering`` (advertised as ``InitializeResponse._meta.steering.supported``): a message for
    the running turn, landing at its next step boundary. When the session is idle it starts a turn, unless
    ``_meta.steering.idleBehavior`` is ``"promptRequired"`` (the client then sends ``session/prompt``)."""

    session_id: str
    prompt: list[ContentBlock]

    @property
    def prompt_required_when_idle(self) -> bool:
        steering = as_object((self.field_meta or {}).get("steering"))
        return steering.get("idleBehavior") == "promptRequired"


class SteeringResponse(WireModel):
    outcome: SteeringOutcome


class SessionIdRequest(WireModel):
    """The params of ``session/archive``, ``session/unarchive`` and ``session/status`` (capabilities
    ``sessionCapabilities.archive`` and ``.status``): a session id."""

    session_id: str
