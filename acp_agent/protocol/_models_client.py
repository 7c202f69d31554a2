"""Client-side methods the agent calls: `fs/*`, `terminal/*`, `elicitation/*` (stable since 1.21.0).
Gate every call on the matching client capability."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ._models_session import EnvVariable
from ._wire import RequestId, WireModel

__all__ = [
    "CompleteElicitationNotification",
    "CreateElicitationRequest",
    "CreateElicitationResponse",
    "CreateTerminalRequest",
    "CreateTerminalResponse",
    "ElicitationSchema",
    "KillTerminalRequest",
    "ReadTextFileRequest",
    "ReadTextFileResponse",
    "ReleaseTerminalRequest",
    "TerminalExitStatus",
    "TerminalOutputRequest",
    "TerminalOutputResponse",
    "WaitForTerminalExitRequest",
    "WaitForTerminalExitResponse",
    "WriteTextFileRequest",
]


class ReadTextFileRequest(WireModel):
    session_id: str
    path: str
    """Absolute."""
    line: int | None = None
    """1-based first line."""
    limit: int | None = None
    """Number of lines."""


class ReadTextFileResponse(WireModel):
    content: str


class WriteTextFileRequest(WireModel):
    session_id: str
    path: str
    content: str


class CreateTerminalRequest(WireModel):
    session_id: str
    command: str
    args: list[str] | None = None
    env: list[EnvVariable] | None = None
    cwd: str | None = None
    output_byte_limit: int | None = None


class CreateTerminalResponse(WireModel):
    terminal_id: str


class TerminalOutputRequest(WireModel):
    session_id: str
    terminal_id: str


class WaitForTerminalExitRequest(WireModel):
    session_id: str
    terminal_id: str


class KillTerminalRequest(WireModel):
    session_id: str
    terminal_id: str


class ReleaseTerminalRequest(WireModel):
    session_id: str
    terminal_id: str


class TerminalExitStatus(WireModel):
    exit_code: int | None = None
    signal: str | None = None


class TerminalOutputResponse(WireModel):
    output: str
    truncated: bool
    exit_status: TerminalExitStatus | None = None


class WaitForTerminalExitResponse(WireModel):
    exit_code: int | None = None
    signal: str | None = None


class ElicitationSchema(WireModel):
    """A restricted JSON Schema object; property schemas stay plain dicts (`{"type": "string", ...}`)."""

    type: Literal["object"] = "object"
    title: str | None = None
    description: str | None = None
    properties: dict[str, dict[str, Any]] = Field(default_factory=lambda: {})
    required: list[str] | None = None


class CreateElicitationRequest(WireModel):
    """Params of `elicitation/create`. Form mode: `requested_schema`; URL mode: `elicitation_id` + `url`.
    Scope: `session_id` (+ `tool_call_id`) or `request_id`. Only use a mode the client advertised."""

    message: str
    mode: Literal["form", "url"]
    requested_schema: ElicitationSchema | None = None
    elicitation_id: str | None = None
    url: str | None = None
    session_id: str | None = None
    tool_call_id: str | None = None
    request_id: RequestId = None


class CreateElicitationResponse(WireModel):
    """`action` is `accept` (with `content`), `decline` or `cancel`; other strings may appear."""

    action: str
    content: dict[str, Any] | None = None


class CompleteElicitationNotification(WireModel):
    elicitation_id: str
