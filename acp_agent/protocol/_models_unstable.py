"""UNSTABLE ACP methods this agent serves (``schema.unstable.json``): ``session/fork``.

The unstable ``session/update`` variants live with the stable ones (``_models_updates``), in one union.
"""

from __future__ import annotations

from pydantic import Field

from ._models_session import McpServer, SessionConfigOption, SessionModeState
from ._wire import WireModel

__all__ = ["ForkSessionRequest", "ForkSessionResponse"]


class ForkSessionRequest(WireModel):
    """``session/fork``: a new session with the history of ``session_id`` (capability
    ``sessionCapabilities.fork``)."""

    session_id: str
    cwd: str
    additional_directories: list[str] | None = None
    mcp_servers: list[McpServer] = Field(default_factory=list[McpServer])


class ForkSessionResponse(WireModel):
    session_id: str
    modes: SessionModeState | None = None
    config_options: list[SessionConfigOption] | None = None
