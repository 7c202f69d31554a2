"""``McpManager``: the MCP servers of one session, started together in the background."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import anyio
import anyio.abc

from .._errors import HarnessUsageError
from ._elicit import ElicitationHandler
from ._prompts import PromptInfo
from ._server import McpServer, McpTool
from ._status import ServerState, ServerStatus, StatusCallback

__all__ = ["McpManager"]


class McpManager:
    """The MCP servers of a session: a ``ToolSource`` over all of them, with their states.

    ``async with McpManager(servers, roots=[cwd], ...) as mcp:`` owns a task group; every server starts
    at once, concurrently, in the background (entering does not wait for them). Then:

    - ``await mcp.tools()`` (the ``ToolSource``): the tools of every server that has some, never waiting;
    - ``await mcp.wait_ready(timeout)``: before a prompt, waits only for servers still starting, bounded;
    - ``mcp.status(name)`` / ``mcp.states()``: ``starting | ready | failed | stopped`` and the cause;
    - ``on_status_change(state)``: called (synchronously, must not block) whenever a server's state changes;
    - ``mcp.add(server)`` (replaces a server of the same name: configs are merged by name),
      ``await mcp.remove(name)``; ``await mcp.prompts()`` and ``await mcp.get_prompt(server, name, args)``.

    The manager sets each server's ``roots``, ``elicitation_handler`` and ``on_status_change`` (the
    manager's own values win over the server's). Leaving the block closes every server (process groups
    included) within about 2 s.
    """

    def __init__(
        self,
        servers: Iterable[McpServer] = (),
        *,
        roots: Sequence[str | Path] = (),
        elicitation_handler: ElicitationHandler | None = None,
        on_status_change: StatusCallback | None = None,
    ) -> None:
        self.roots: Sequence[str | Path] = roots
        self.elicitation_handler = elicitation_handler
        self.on_status_change = on_status_change
        self._servers: dict[str, McpServer] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._closing = False
        for s in servers:
            if s.name in self._servers:
                raise HarnessUsageError(f"two MCP servers named {s.name!r}")
            self._servers[s.name] = s

    async def __aenter__(self) -> McpManager:
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        for s in self._servers.values():
            self._start(s)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
        tg, self._tg = self._tg, None
        if tg is not None:
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)

    async def aclose(self) -> None:
        """Close every server, concurrently; returns when all are gone (about 2 s at most)."""
        self._closing = True
        async with anyio.create_task_group() as tg:
            for s in self._servers.values():
                tg.start_soon(s.aclose)

    def _start(self, server: McpServer) -> None:
        assert self._tg is not None
        server.roots = self.roots
        if self.elicitation_handler is not None:
            server.elicitation_handler = self.elicitation_handler
        if self.on_status_change is not None:
            server.on_status_change = self.on_status_change
        server.start(self._tg)

    def add(self, server: McpServer) -> None:
        """Add a server (started at once when the manager runs); one of the same name is replaced."""
        if self._closing:
            raise HarnessUsageError("add() on a closed McpManager")
        old = self._servers.get(server.name)
        self._servers[server.name] = server
        if self._tg is not None:
            if old is not None:
                self._tg.start_soon(old.aclose)
            self._start(server)

    async def remove(self, name: str) -> None:
        server = self._servers.pop(name, None)
        if server is not None:
            await server.aclose()

    def servers(self) -> list[McpServer]:
        return list(self._servers.values())

    def get(self, name: str) -> McpServer | None:
        return self._servers.get(name)

    def status(self, name: str) -> ServerStatus:
        server = self._servers.get(name)
        if server is None:
            raise HarnessUsageError(f"no MCP server named {name!r}")
        return server.status

    def states(self) -> dict[str, ServerState]:
        """Every server's state by name (for ``_meta.mcpServers``)."""
        return {name: s.state for name, s in self._servers.items()}

    async def wait_ready(self, timeout: float) -> dict[str, ServerState]:
        """Wait (at most ``timeout`` s) for the servers still starting; return every server's state."""
        with anyio.move_on_after(timeout if timeout >= 0 else math.inf):
            async with anyio.create_task_group() as tg:
                for s in list(self._servers.values()):
                    if s.status == ServerStatus.STARTING:
                        tg.start_soon(s.wait_ready)
        return self.states()

    async def tools(self) -> Sequence[McpTool]:
        """Every server's tools (servers listed concurrently; names are unique across servers)."""
        results: dict[str, Sequence[McpTool]] = {}

        async def one(s: McpServer) -> None:
            results[s.name] = await s.tools()

        async with anyio.create_task_group() as tg:
            for s in self._servers.values():
                tg.start_soon(one, s)
        out: list[McpTool] = []
        seen: set[str] = set()
        for name in sorted(results):
            for t in results[name]:
                # Server names are unique and hashed into altered names, so this only drops a freak clash.
                if t.spec().name not in seen:
                    seen.add(t.spec().name)
                    out.append(t)
        return out

    async def prompts(self) -> list[PromptInfo]:
        """The prompts of every ready server (the ACP layer offers them as slash commands)."""
        out: list[PromptInfo] = []
        for s in self._servers.values():
            if s.status == ServerStatus.READY:
                out.extend(await s.prompts())
        return out

    async def get_prompt(self, server: str, name: str, arguments: dict[str, str] | None = None) -> str:
        s = self._servers.get(server)
        if s is None:
            raise HarnessUsageError(f"no MCP server named {server!r}")
        return await s.get_prompt(name, arguments)
