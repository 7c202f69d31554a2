"""The per-session plug-in point: a ``SessionFactory`` turns a session's environment (cwd, roots, MCP
servers, client capabilities, the connection) into its tools, middleware and system prompt."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from harness import ModelMiddleware, Options, ToolMiddleware, ToolSource

    from ..protocol.connection import Connection

__all__ = ["SessionEnvironment", "SessionFactory", "SessionSetup", "default_factory"]


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

    @property
    def roots(self) -> tuple[Path, ...]:
        return (self.cwd, *self.additional_directories)

    def client_can(self, *path: str) -> bool:
        """``client_can("fs", "readTextFile")``: whether the client advertised that capability."""
        node: Any = self.client_capabilities
        for key in path:
            if not isinstance(node, Mapping):
                return False
            mapping: Mapping[str, Any] = node  # pyright: ignore[reportUnknownVariableType]
            node = mapping.get(key)
        return node is not None and node is not False


@dataclass(slots=True)
class SessionSetup:
    """What a session runs with. ``aclose`` frees what the factory opened (MCP servers, processes)."""

    tools: ToolSource | None = None
    middleware: Sequence[ModelMiddleware | ToolMiddleware] = ()
    system: str | None = None
    options: Options | None = None
    context: Any = None
    aclose: Callable[[], Awaitable[None]] | None = field(default=None)


class SessionFactory(Protocol):
    async def __call__(self, env: SessionEnvironment) -> SessionSetup: ...


def default_system_prompt(env: SessionEnvironment) -> str:
    roots = "\n".join(f"- {r}" for r in env.roots)
    return (
        "You are a coding agent working for a user in their editor. Be concise and precise.\n"
        f"The project directories are:\n{roots}"
    )


async def default_factory(env: SessionEnvironment) -> SessionSetup:
    """No tools yet: the file/shell tools and permissions plug in through a factory of their own."""
    return SessionSetup(tools=None, system=default_system_prompt(env), context=env)
