"""The per-session plug-in point: a ``SessionFactory`` turns a session's environment (cwd, roots, MCP
servers, client capabilities, the connection) into its tools, middleware and system prompt."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from .._early import advertised
from ..protocol.errors import RpcError
from ..protocol.models import TextContent

if TYPE_CHECKING:
    from harness import Message, Model, Options, ToolSource
    from harness.middleware import Middleware

    from ..protocol.connection import Connection
    from ..protocol.models import Notice, SessionUpdate, SystemPrompt
    from ._present import ToolView

__all__ = [
    "CommandOutcome",
    "PreparingFactory",
    "PromptStopped",
    "SessionControls",
    "SessionEnvironment",
    "SessionFactory",
    "SessionHandle",
    "SessionSetup",
    "ToolDisplay",
    "UsageSource",
    "default_factory",
]


class PromptStopped(Exception):
    """Raised by ``SessionSetup.before_prompt``: the prompt goes no further. The turn ends ``end_turn`` at
    once, with no model request and nothing of it saved (a prompt hook's ``"continue": false``)."""


@dataclass(frozen=True, slots=True)
class SessionEnvironment:
    """What a factory knows about the session it equips."""

    session_id: str
    cwd: Path
    additional_directories: tuple[Path, ...]
    mcp_servers: tuple[Mapping[str, Any], ...]
    """The supported servers as sent (stdio without ``type``, ``http``, ``sse``); unsupported kinds were
    already skipped with a logged warning."""
    client_capabilities: Mapping[str, Any]
    """``initialize``'s ``clientCapabilities`` as sent (``{}`` when omitted)."""
    connection: Connection
    home: Path
    spawn: Callable[[Callable[[], Awaitable[None]]], object] | None = None
    """Runs a coroutine function in the connection-wide task group (long-lived work: MCP servers)."""
    client_info: Mapping[str, Any] = field(default_factory=dict[str, Any])
    """``initialize``'s ``clientInfo`` as sent (``{}`` when omitted)."""
    routes: Any = None
    mcp_bridge: Any = None
    """The connection's MCP-over-ACP connections (``_mcp_acp.McpAcpBridge``), for ``acp`` servers."""
    system_prompt: tuple[str, str] | None = None
    """The client's system prompt for this session (``systemPrompt`` on new/load/resume/fork), as
    ``(mode, text)``: ``append`` or ``override`` (``with_client_prompt``)."""
    """The connection's provider routes (``_providers.ProviderRoutes``): a model the factory builds
    follows them (``routes.model(built, settings)``)."""

    @property
    def roots(self) -> tuple[Path, ...]:
        return (self.cwd, *self.additional_directories)

    def client_can(self, *path: str) -> bool:
        """``client_can("fs", "readTextFile")``: whether the client advertised that capability."""
        return advertised(self.client_capabilities, *path)


@dataclass(frozen=True, slots=True)
class ToolDisplay:
    """How tool calls are shown beyond their views: ``marks_running`` says a tool middleware sends
    ``in_progress`` when a call really starts (after approval), so the mapper does not send it when the
    input is complete."""

    marks_running: bool = False


class SessionHandle(Protocol):
    """What a session offers its factory's parts once it exists (``SessionControls.bind``)."""

    @property
    def id(self) -> str: ...

    async def send_update(self, update: SessionUpdate) -> None:
        """Send one ``session/update`` (after the session's opening response)."""
        ...

    async def send_notice(self, notice: Notice, fallback: str) -> None:
        """Advisory news: a ``notice`` where the client takes them, else ``fallback`` as the agent's
        message."""
        ...

    def cancel(self) -> None: ...

    def messages(self) -> list[Message]:
        """The conversation so far (``/compact`` summarises it)."""
        ...

    async def set_title(self, title: str) -> bool:
        """The user's title for the session (``/rename``), saved and told to the client."""
        ...

    def child_session(self, call_id: str) -> str | None:
        """The session of the sub-agent that call ``call_id`` runs, where the client takes
        ``subagent_update`` (the child's permission requests and questions go there); None otherwise."""
        ...

    async def child_waits(self, call_id: str, waiting: bool) -> None:
        """The sub-agent that call ``call_id`` runs waits on the user (``requires_action``), or runs again."""
        ...


@dataclass(frozen=True, slots=True)
class CommandOutcome:
    """A slash command's outcome: ``reply`` is shown as the agent's message (none when empty) and ends the turn;
    ``prompt`` (an expanded prompt command) goes to the model instead of the typed text."""

    reply: str | None = None
    prompt: str | None = None


class SessionControls(Protocol):
    """Modes, config options, slash commands and per-session model choice (``session/set_mode``,
    ``session/set_config_option``, ``available_commands_update``)."""

    def bind(self, session: SessionHandle) -> None: ...

    def modes(self) -> dict[str, Any] | None: ...

    def config_options(self) -> list[dict[str, Any]] | None: ...

    async def set_mode(self, mode_id: str) -> None: ...

    async def set_config_option(self, config_id: str, value: str | bool) -> list[dict[str, Any]]: ...

    async def opened(self) -> None:
        """After the opening response was written: send ``available_commands_update`` and the like."""
        ...

    async def client_followed_up(self) -> None:
        """The response to one of the client's follow-up requests (``set_config_option``, ``set_mode``)
        was written: the client surely knows the session now (Zed registers it only then)."""
        ...

    async def turn_starting(self) -> None: ...

    async def command(self, text: str) -> CommandOutcome | None:
        """``None`` when ``text`` is not a command of this session."""
        ...

    async def model(self, default: Callable[[], Awaitable[Model]]) -> Model: ...


@dataclass(slots=True)
class SessionSetup:
    """What a session runs with. ``aclose`` frees what the factory opened (MCP servers, processes)."""

    tools: ToolSource | None = None
    middleware: Sequence[Middleware] = ()
    system: str | None = None
    options: Options | None = None
    context: Any = None
    aclose: Callable[[], Awaitable[None]] | None = field(default=None)
    display: ToolDisplay | None = None
    controls: SessionControls | None = None
    views: Mapping[str, ToolView] | None = None
    """How the factory's own tools look, by tool name (others get a ``MetaView`` from their spec)."""
    before_prompt: Callable[[Message], Awaitable[Message]] | None = None
    """Each prompt (after a command's expansion), before the model sees it: the message to use instead
    (prompt hooks, a per-turn refresh of the system prompt). Cancelled with the turn; ``PromptStopped``
    ends the turn there."""
    ready: Callable[[], Awaitable[None]] | None = None
    """Awaited at the start of each prompt (cancelled with the turn): the part of the set-up the factory
    left for after the opening answer. What it raises (an ``RpcError``) is the prompt's answer."""
    usage: UsageSource | None = None
    """What the session's model requests used (``PromptResponse.usage``), when the factory counts it."""
    side_model: Callable[[], Awaitable[Model | None]] | None = None
    """The model for side work (a title, a summary): the configured small model, else the session's
    (None before its first turn chose it); its requests are counted in the session's usage."""
    title_model: Callable[[], Awaitable[Model | None]] | None = None
    """The model that writes the title after the first exchange (``_titles``; the side model, when
    model-written titles are on); None: the first prompt, cut short, stays the title."""


class UsageSource(Protocol):
    """The session's token usage: ``turn_started`` at each prompt, then ``turn_usage``, ACP's unstable
    ``Usage`` of the turn's model requests (every one: side requests too), None when none reported any."""

    async def turn_started(self) -> None: ...

    def turn_usage(self) -> dict[str, int] | None: ...


class SessionFactory(Protocol):
    async def __call__(self, env: SessionEnvironment) -> SessionSetup: ...


Prepared = TypeVar("Prepared")


@runtime_checkable
class PreparingFactory(Protocol[Prepared]):
    """A ``SessionFactory`` in two halves, so that opening a session costs one worker-thread hop: the
    session layer runs ``prepare`` (blocking: every file the set-up reads) in its own hop, beside its own
    file work (the roots' check, the new session's meta), then awaits ``finish`` with what it returned
    (on the event loop, no file work). ``__call__`` is both in turn. ``Prepared`` is the factory's own
    type: the session layer only hands it from one half to the other."""

    def prepare(self, env: SessionEnvironment) -> Prepared: ...

    async def finish(self, env: SessionEnvironment, prepared: Prepared) -> SessionSetup: ...


def default_system_prompt(env: SessionEnvironment) -> str:
    roots = "\n".join(f"- {r}" for r in env.roots)
    base, extra = with_client_prompt(
        "You are a coding agent working for a user in their editor. Be concise and precise.", env
    )
    return "\n\n".join([base, f"The project directories are:\n{roots}", *extra])


SYSTEM_PROMPT_MODES = ("append", "override")


def checked_system_prompt(value: SystemPrompt | None) -> tuple[str, str] | None:
    """A request's ``systemPrompt`` as ``(mode, text)``; ``RpcError`` (invalid params) for what this agent
    cannot apply (an unknown mode, no content, a block that is not text): the session is then not opened,
    as the schema requires."""
    if value is None:
        return None
    if value.mode not in SYSTEM_PROMPT_MODES:
        raise RpcError.invalid_params(
            f"invalid params: systemPrompt.mode: {value.mode!r} is not append or override"
        )
    if not value.content:
        raise RpcError.invalid_params("invalid params: systemPrompt.content: empty")

    texts: list[str] = []
    for block in value.content:
        match block:
            case TextContent(text=text):
                texts.append(text)
            case _:
                raise RpcError.invalid_params(
                    f"invalid params: systemPrompt.content: {block.type} blocks are not supported"
                )
    return value.mode, "\n\n".join(texts)


def with_client_prompt(base: str, env: SessionEnvironment) -> tuple[str, list[str]]:
    """The built-in instructions ``base`` as the client's system prompt leaves them (``override``: its
    text instead), and what goes after the rest of the system prompt (``append``: its text)."""
    match env.system_prompt:
        case ("override", text):
            return text, []
        case ("append", text):
            return base, [f"# Instructions from the editor\n\n{text}"]
        case _:
            return base, []


async def default_factory(env: SessionEnvironment) -> SessionSetup:
    """No tools yet: the file/shell tools and permissions plug in through a factory of their own."""
    return SessionSetup(tools=None, system=default_system_prompt(env), context=env)
