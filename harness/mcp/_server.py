"""One MCP server as a harness ``ToolSource``: its tools and calls, its prompts (``McpServer``), each tool
(``McpTool``). Keeping it connected (started, supervised, restarted) is ``_lifecycle``'s half.

``mcp`` is imported lazily, in a worker thread, when a server first starts: ``import harness.mcp`` stays light.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import ValidationError

from .._call import Call
from .._tools import Result, ToolSpec
from ._client import list_tools
from ._config import HttpConfig, StdioConfig
from ._convert import result_of, tool_spec
from ._errors import (
    CONNECTION_CLOSED,
    HTTP_SESSION_LOST,
    REQUEST_TIMEOUT,
    McpError,
    describe_exception,
    mcp_code,
)
from ._lifecycle import Connection, ServerLifecycle
from ._names import assign_names
from ._prompts import PromptInfo, list_prompts, prompt_text

if TYPE_CHECKING:
    import mcp_types

__all__ = ["McpServer", "McpTool"]

_log = logging.getLogger(__name__)


class McpTool:
    """A tool of an MCP server, named ``mcp__<server>__<tool>`` for the model."""

    __slots__ = ("_server", "_spec", "original_name")

    def __init__(self, server: McpServer, spec: ToolSpec, original_name: str) -> None:
        self._server = server
        self._spec = spec
        self.original_name = original_name

    def spec(self) -> ToolSpec:
        return self._spec

    @property
    def server(self) -> McpServer:
        return self._server

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        return await self._server.call_tool(self.original_name, input, progress=call.progress)

    def __repr__(self) -> str:
        return f"McpTool({self._spec.name!r})"


class McpServer(ServerLifecycle[McpTool]):
    """An MCP server used as a ``ToolSource``.

    Make one with ``McpServer.stdio(...)``, ``.http(...)`` or ``.sse(...)``. Run it either with
    ``async with server:`` (starts it and waits until it is ready or failed, bounded by
    ``connect_timeout``), or inside a task group the caller owns: ``server.start(tg)`` then
    ``await server.aclose()``; ``McpManager`` does the latter for several servers.

    ``tools()`` never waits for a connection: it lists the tools (re-read only after the server said its
    list changed), or the last known ones while the server (re)starts. A call to a failed server
    restarts it first, with backoff (``restart_delays`` after consecutive start failures; at once after
    a crash of a server that was ready). Faults become error results naming the server and the cause.

    Host hooks (settable until start): ``roots`` (paths or ``file://`` URIs answered to ``roots/list``),
    ``elicitation_handler`` (async, ``Elicitation -> ElicitationReply``; without one elicitation is
    declined), ``on_status_change`` (sync, called with the new ``ServerState``; must not block).
    Sampling is not offered to servers.
    """

    # -- construction ---------------------------------------------------------------------------------

    @classmethod
    def stdio(
        cls,
        name: str,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        **options: Any,
    ) -> McpServer:
        """A server run as a child process (its env: ``env`` on top of a minimal safe base)."""
        cfg = StdioConfig(name, command, tuple(args), dict(env or {}), str(cwd) if cwd is not None else None)
        return cls(cfg, **options)

    @classmethod
    def http(cls, name: str, url: str, headers: Mapping[str, str] | None = None, **options: Any) -> McpServer:
        """A server reached over Streamable HTTP."""
        return cls(HttpConfig(name, url, dict(headers or {}), "http"), **options)

    @classmethod
    def sse(cls, name: str, url: str, headers: Mapping[str, str] | None = None, **options: Any) -> McpServer:
        """A server reached over the deprecated HTTP+SSE transport."""
        return cls(HttpConfig(name, url, dict(headers or {}), "sse"), **options)

    # -- tools ----------------------------------------------------------------------------------------

    def _set_tools(self, listing: Sequence[mcp_types.Tool]) -> None:
        names = assign_names((self.name, t.name) for t in listing)
        self._tools = [
            McpTool(self, tool_spec(self.name, t, names[(self.name, t.name)]), t.name) for t in listing
        ]

    async def tools(self) -> Sequence[McpTool]:
        """The server's tools; never waits for a (re)start. Re-read when the server said they changed."""
        if self._tg is None or self._stopping.is_set():
            return list(self._tools) if self._started and not self._stopping.is_set() else []
        conn = self._conn
        if conn is None or conn.dead:
            if anyio.current_time() >= self._retry_at:
                self._connect()
            return list(self._tools)
        client = conn.client
        if client is not None and (self._stale or self._relist_always):
            self._stale = False
            try:
                with anyio.fail_after(self.call_timeout):
                    listing = await list_tools(client)
            except Exception as e:
                self._stale = True
                if isinstance(e, TimeoutError) or mcp_code(e) == CONNECTION_CLOSED:
                    self._fail(conn, self._cause(conn, e))
                _log.warning("MCP server %s: tools/list failed: %s", self.name, describe_exception(e))
            else:
                self._set_tools(listing)
        return list(self._tools)

    # -- calls ----------------------------------------------------------------------------------------

    async def call_tool(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        progress: Callable[[Any], Awaitable[None]] | None = None,
        timeout: float | None = None,
    ) -> Result:
        """Call ``tool`` (the server's own name); failures of any kind are error results.
        Cancelling the calling task sends the server an MCP cancellation and returns at once."""
        conn = await self._usable()
        if isinstance(conn, str):
            return Result.failure(conn)
        client = conn.client
        assert client is not None
        limit = timeout if timeout is not None else self.call_timeout
        done = False
        report = progress

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if not done and report is not None:
                await report({"progress": progress, "total": total, "message": message})

        from mcp import MCPError

        try:
            r = await client.call_tool(
                tool, dict(arguments), read_timeout_seconds=limit, progress_callback=on_progress
            )
        except MCPError as e:
            if e.code == CONNECTION_CLOSED:
                await self._await_exit(conn)
            return self._call_error(conn, tool, e, limit)
        except (RuntimeError, ValidationError) as e:
            return Result.failure(f"MCP server `{self.name}`: `{tool}` returned an invalid result: {e}")
        except Exception as e:
            cause = self._cause(conn, e)
            self._fail(conn, cause)
            return Result.failure(
                f"MCP server `{self.name}` failed during `{tool}`: {cause}. It will be restarted on next use."
            )
        finally:
            done = True
        return result_of(self.name, tool, r, max_chars=self.max_result_chars)

    def _call_error(self, conn: Connection, tool: str, e: Any, limit: float) -> Result:
        code: int = e.code
        is_http = isinstance(self.config, HttpConfig)
        if code == REQUEST_TIMEOUT:
            if conn.client is not None and not conn.probing and self._tg is not None:
                conn.probing = True
                self._tg.start_soon(self._probe, conn)
            garbage = conn.proc.describe_garbage() if conn.proc is not None else ""
            return Result.failure(
                f"MCP server `{self.name}` did not answer `{tool}` within {limit:g} s; "
                f"the call was cancelled{garbage}"
            )
        if code == CONNECTION_CLOSED or (is_http and code in HTTP_SESSION_LOST):
            if conn.proc is not None and conn.proc.returncode is not None:
                cause = f"the server process {conn.proc.describe_exit()}"
            elif is_http:
                cause = f"the HTTP session was lost ({e.message})"
            else:
                cause = self._cause(conn, e)
            self._fail(conn, cause)
            again = "reconnected" if is_http else "restarted"
            return Result.failure(
                f"MCP server `{self.name}` failed during `{tool}`: {cause}. It will be {again} on next use."
            )
        return Result.failure(f"MCP server `{self.name}`: `{tool}` failed: {e.message} (error {code})")

    async def _probe(self, conn: Connection) -> None:
        """After a timeout: a server that does not answer ``tools/list`` either is restarted on next use."""
        client = conn.client
        try:
            if client is None:
                return
            with anyio.fail_after(min(5.0, self.call_timeout)):
                await list_tools(client)
        except TimeoutError:
            self._fail(conn, "it stopped answering (a call timed out, then tools/list did too)")
        except Exception as e:
            if mcp_code(e) == CONNECTION_CLOSED:
                await self._await_exit(conn)
                self._fail(conn, self._cause(conn, e))
        finally:
            conn.probing = False

    # -- prompts (slash commands) ---------------------------------------------------------------------

    async def prompts(self) -> list[PromptInfo]:
        """The server's prompts ([] when it has none, is not ready, or fails to list them)."""
        conn = self._conn
        client = conn.client if conn is not None else None
        if client is None or client.server_capabilities.prompts is None:
            return []
        try:
            with anyio.fail_after(self.call_timeout):
                return await list_prompts(client, self.name)
        except Exception as e:
            _log.warning("MCP server %s: prompts/list failed: %s", self.name, describe_exception(e))
            return []

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> str:
        """The prompt's messages as text (resources and images described), for expanding a slash command.
        Raises ``McpError`` when the server is not available or refuses."""
        conn = await self._usable()
        if isinstance(conn, str):
            raise McpError(conn)
        assert conn.client is not None
        try:
            with anyio.fail_after(self.call_timeout):
                r = await conn.client.get_prompt(name, dict(arguments or {}))
        except Exception as e:
            raise McpError(
                f"MCP server `{self.name}`: prompt `{name}` failed: {describe_exception(e)}"
            ) from e
        return prompt_text(r)
