"""One MCP server as a harness ``ToolSource``: its connection (supervised, restarted), tools and calls.

``mcp`` is imported lazily, in a worker thread, when a server first starts: ``import harness.mcp`` stays light.
"""

from __future__ import annotations

import importlib
import logging
import math
import os
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.abc

from .._call import Call
from .._errors import HarnessUsageError
from .._tools import Result, ToolSpec
from ._config import HttpConfig, ServerConfig, StdioConfig
from ._convert import hints_of, result_of
from ._elicit import Elicitation, ElicitationHandler, ElicitationReply
from ._names import assign_names
from ._stdio import StdioProcess, stdio_transport

if TYPE_CHECKING:
    import mcp_types
    from mcp import Client
    from mcp.client import ClientRequestContext

__all__ = [
    "McpServer",
    "McpTool",
    "PromptArgument",
    "PromptInfo",
    "ServerState",
    "ServerStatus",
    "StatusCallback",
]

_log = logging.getLogger(__name__)

CLOSE_TIMEOUT = 1.8  # a closing server gets this long before its connection is cancelled
_PAGE_CAP = 100
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001
_HTTP_SESSION_LOST = (-32600, -32603)  # "Session not found/terminated", "Server returned an error response"


class ServerStatus(StrEnum):
    STOPPED = "stopped"  # not started yet, or closed
    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class ServerState:
    """A server's state as the user should see it; ``cause`` says why it failed."""

    name: str
    status: ServerStatus
    cause: str | None = None
    tools: int = 0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "status": self.status.value, "tools": self.tools}
        if self.cause is not None:
            d["cause"] = self.cause
        return d


StatusCallback = Callable[[ServerState], None]


@dataclass(frozen=True, slots=True)
class PromptArgument:
    name: str
    description: str | None = None
    required: bool = False


@dataclass(frozen=True, slots=True)
class PromptInfo:
    """A server's prompt (the ACP layer offers these as slash commands)."""

    server: str
    name: str
    description: str | None = None
    arguments: tuple[PromptArgument, ...] = ()


async def import_mcp() -> None:
    """Import the SDK (about 1 s) in a worker thread so the event loop keeps serving."""
    if "mcp.client.client" not in sys.modules:
        await anyio.to_thread.run_sync(importlib.import_module, "mcp")


def describe_exception(error: BaseException) -> str:
    """One line naming the first real error of a (possibly nested) exception group."""
    exc: BaseException = _first_leaf(error)
    from mcp import MCPError

    if isinstance(exc, MCPError):
        return exc.message or f"MCP error {exc.code}"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _first_leaf(error: BaseException) -> BaseException:
    subs: tuple[BaseException, ...] = getattr(error, "exceptions", ())
    return _first_leaf(subs[0]) if subs else error


class _Connection:
    """One attempt at a live session with the server; a restart makes a new one."""

    __slots__ = ("client", "closed", "dead", "probing", "proc", "scope", "settled", "stop", "was_ready")

    def __init__(self) -> None:
        self.client: Client | None = None
        self.settled = anyio.Event()  # ready, or failed
        self.closed = anyio.Event()  # its task has ended
        self.stop = anyio.Event()
        self.dead = False
        self.was_ready = False
        self.probing = False
        self.proc: StdioProcess | None = None
        self.scope: anyio.CancelScope | None = None


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


class McpServer:
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

    def __init__(
        self,
        config: ServerConfig,
        *,
        call_timeout: float = 60.0,
        connect_timeout: float = 60.0,
        mode: Literal["legacy", "auto"] = "legacy",
        max_result_chars: int = 100_000,
        restart_delays: Sequence[float] = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0),
        roots: Sequence[str | Path] = (),
        elicitation_handler: ElicitationHandler | None = None,
        on_status_change: StatusCallback | None = None,
        http_auth: Any = None,
    ) -> None:
        if call_timeout <= 0 or connect_timeout <= 0:
            raise HarnessUsageError("timeouts must be positive")
        if not restart_delays:
            raise HarnessUsageError("restart_delays needs at least one delay")
        self.config = config
        self.call_timeout = call_timeout
        self.connect_timeout = connect_timeout
        self.mode = mode
        self.max_result_chars = max_result_chars
        self.restart_delays = tuple(restart_delays)
        self.roots: Sequence[str | Path] = roots
        self.elicitation_handler = elicitation_handler
        self.on_status_change = on_status_change
        self.http_auth = http_auth  # an httpx2.Auth (e.g. mcp's OAuthClientProvider) for http/sse servers
        self._state = ServerState(config.name, ServerStatus.STOPPED)
        self._tg: anyio.abc.TaskGroup | None = None
        self._started = False
        self._stopping = anyio.Event()
        self._stopped = anyio.Event()
        self._serving = anyio.Event()  # set once the first connection began, or the server stopped
        self._conn: _Connection | None = None
        self._tools: list[McpTool] = []
        self._stale = True
        self._relist_always = False
        self._failures = 0
        self._retry_at = 0.0
        self._own_tg: anyio.abc.TaskGroup | None = None

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

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def state(self) -> ServerState:
        return self._state

    @property
    def status(self) -> ServerStatus:
        return self._state.status

    def __repr__(self) -> str:
        return f"McpServer({self.name!r}, {self.config.transport}, {self._state.status.value})"

    # -- lifecycle ------------------------------------------------------------------------------------

    def start(self, task_group: anyio.abc.TaskGroup) -> None:
        """Start in the background, in ``task_group``; ``aclose()`` (or cancelling the group) ends it."""
        if self._started:
            raise HarnessUsageError(f"MCP server {self.name!r} was already started")
        self._started = True
        self._set_state(ServerStatus.STARTING)
        task_group.start_soon(self._serve, name=f"mcp server {self.name}")

    async def wait_ready(self, timeout: float | None = None) -> ServerState:
        """Wait until the server is ready or has failed (at most ``timeout`` s); return its state."""
        with anyio.move_on_after(math.inf if timeout is None else timeout):
            await self._serving.wait()
            conn = self._conn
            if conn is not None:
                await conn.settled.wait()
        return self._state

    async def aclose(self) -> None:
        """End the server (its process group included); returns when it is gone, within about 2 s."""
        self._stopping.set()
        if self._started:
            with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT + 1.0):
                await self._stopped.wait()

    async def __aenter__(self) -> McpServer:
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._own_tg = tg
        self.start(tg)
        await self.wait_ready(self.connect_timeout + 1.0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
        tg, self._own_tg = self._own_tg, None
        if tg is not None:
            await tg.__aexit__(None, None, None)

    async def _serve(self) -> None:
        try:
            await import_mcp()
            async with anyio.create_task_group() as tg:
                self._tg = tg
                if not self._stopping.is_set():
                    self._connect()
                self._serving.set()
                await self._stopping.wait()
                conn = self._conn
                if conn is not None:
                    conn.stop.set()
                    with anyio.move_on_after(CLOSE_TIMEOUT):
                        await conn.closed.wait()
                tg.cancel_scope.cancel()
        finally:
            self._tg = None
            self._conn = None
            self._set_state(ServerStatus.STOPPED)
            self._stopped.set()
            self._serving.set()

    def _set_state(self, status: ServerStatus, cause: str | None = None) -> None:
        new = ServerState(self.name, status, cause, len(self._tools) if status == ServerStatus.READY else 0)
        if new == self._state:
            return
        self._state = new
        if status == ServerStatus.FAILED:
            _log.warning("MCP server %s failed: %s", self.name, cause)
        else:
            _log.info("MCP server %s is %s", self.name, status.value)
        if self.on_status_change is not None:
            try:
                self.on_status_change(new)
            except Exception:
                _log.exception("on_status_change raised for MCP server %s", self.name)

    def _connect(self) -> _Connection:
        assert self._tg is not None
        conn = _Connection()
        self._conn = conn
        self._set_state(ServerStatus.STARTING)
        self._tg.start_soon(self._run_connection, conn, name=f"mcp connection {self.name}")
        return conn

    def _fail(self, conn: _Connection, cause: str) -> None:
        """Mark ``conn`` dead (its task closes it) and the server failed, with the restart time."""
        if conn.dead:
            return
        conn.dead = True
        conn.stop.set()
        conn.settled.set()
        if conn is not self._conn or self._stopping.is_set():
            return
        now = anyio.current_time()
        if conn.was_ready:
            self._failures = 0
            self._retry_at = now
        else:
            self._failures += 1
            self._retry_at = now + self.restart_delays[min(self._failures, len(self.restart_delays)) - 1]
        self._set_state(ServerStatus.FAILED, cause)

    async def _run_connection(self, conn: _Connection) -> None:
        cause: str | None = None
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout) as scope:
                conn.scope = scope
                async with AsyncExitStack() as stack:
                    client = await stack.enter_async_context(self._client(conn))
                    self._stale = False
                    listing = await self._list_tools(client)
                    scope.deadline = math.inf
                    conn.client = client
                    conn.was_ready = True
                    self._failures = 0
                    self._set_tools(listing)
                    self._set_state(ServerStatus.READY)
                    conn.settled.set()
                    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

                    if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                        tg = await stack.enter_async_context(anyio.create_task_group())
                        tg.start_soon(self._listen, client, conn)
                    await conn.stop.wait()
            if scope.cancelled_caught and not conn.stop.is_set():
                cause = f"it did not start within {self.connect_timeout:g} s"
        except Exception as e:
            cause = self._cause(conn, e)
        except BaseExceptionGroup as eg:
            rest = eg.split(Exception)[0]
            cause = self._cause(conn, rest) if rest is not None else None
            raise
        finally:
            conn.client = None
            if not conn.stop.is_set() or cause is not None:
                self._fail(conn, cause or self._cause(conn, None))
            conn.settled.set()
            conn.closed.set()

    def _cause(self, conn: _Connection, exc: BaseException | None) -> str:
        proc = conn.proc
        if proc is not None and proc.returncode is not None:
            return f"the server process {proc.describe_exit()}"
        if exc is None:
            return "the connection ended"
        text = describe_exception(exc)
        if proc is not None:
            text += proc.describe_garbage()
            if proc.stderr_tail:
                text += f"; stderr: {proc.stderr_tail[-1][:300]}"
        return text

    def _client(self, conn: _Connection) -> Client:
        import mcp_types as types
        from mcp import Client

        from .. import __version__

        cfg = self.config
        transport: AbstractAsyncContextManager[Any]
        if isinstance(cfg, StdioConfig):
            proc = conn.proc = StdioProcess(cfg.name)
            transport = stdio_transport(
                cfg, proc, lambda: self._fail(conn, f"the server process {proc.describe_exit()}")
            )
        elif cfg.transport == "sse":
            from mcp.client.sse import sse_client

            transport = sse_client(cfg.url, headers=dict(cfg.headers), auth=self.http_auth)
        else:
            transport = _http_transport(cfg, self.http_auth)

        async def on_message(message: Any) -> None:
            await self._on_message(conn, message)

        kwargs: dict[str, Any] = {}
        if self.roots:
            kwargs["list_roots_callback"] = self._on_roots
        return Client(
            transport,
            mode=self.mode,
            client_info=types.Implementation(name="acp-agent", version=__version__),
            message_handler=on_message,
            logging_callback=self._on_log,
            elicitation_callback=self._on_elicit,
            **kwargs,
        )

    async def _listen(self, client: Client, conn: _Connection) -> None:
        try:
            async with client.listen(tools_list_changed=True) as sub:
                async for _ in sub:
                    if conn is self._conn:
                        self._stale = True
        except Exception as e:
            # Without a change stream the listing is re-read at every step.
            _log.info("MCP server %s: no tools/list_changed stream (%s)", self.name, describe_exception(e))
            self._relist_always = True

    # -- callbacks from the server --------------------------------------------------------------------

    async def _on_message(self, conn: _Connection, message: Any) -> None:
        import mcp_types as types

        if isinstance(message, Exception):
            _log.debug("MCP server %s: transport message: %s", self.name, describe_exception(message))
        elif isinstance(message, types.ToolListChangedNotification) and conn is self._conn:
            self._stale = True

    async def _on_log(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        level = {
            "debug": logging.DEBUG,
            "info": logging.INFO,
            "notice": logging.INFO,
            "warning": logging.WARNING,
        }
        _log.log(level.get(params.level, logging.ERROR), "[%s] %s", self.name, params.data)

    async def _on_roots(self, context: ClientRequestContext) -> mcp_types.ListRootsResult:
        import mcp_types as types

        roots = [
            types.Root(uri=uri, name=name)  # pyright: ignore[reportArgumentType]
            for uri, name in root_uris(self.roots)
        ]
        return types.ListRootsResult(roots=roots)

    async def _on_elicit(
        self, context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        import mcp_types as types

        handler = self.elicitation_handler
        if handler is None:
            return types.ElicitResult(action="decline")
        if isinstance(params, types.ElicitRequestURLParams):
            request = Elicitation(self.name, params.message, "url", url=params.url)
        else:
            request = Elicitation(self.name, params.message, "form", dict(params.requested_schema))
        try:
            reply = await handler(request)
        except Exception:
            _log.exception("the elicitation handler failed for MCP server %s", self.name)
            reply = ElicitationReply("cancel")
        content = dict(reply.content) if reply.action == "accept" and reply.content is not None else None
        return types.ElicitResult(action=reply.action, content=content)

    # -- tools ----------------------------------------------------------------------------------------

    async def _list_tools(self, client: Client) -> list[mcp_types.Tool]:
        out: list[mcp_types.Tool] = []
        cursor: str | None = None
        for _ in range(_PAGE_CAP):
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            out.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return out

    def _set_tools(self, listing: Sequence[mcp_types.Tool]) -> None:
        names = assign_names((self.name, t.name) for t in listing)
        tools: list[McpTool] = []
        for t in listing:
            schema: dict[str, Any] = dict(t.input_schema or {})
            if schema.get("type") != "object":
                schema["type"] = "object"
            meta: dict[str, Any] = {"mcp_server": self.name, "mcp_tool": t.name}
            if t.title:
                meta["title"] = t.title
            spec = ToolSpec(
                names[(self.name, t.name)],
                t.description or t.title or "",
                schema,
                hints_of(t.annotations),
                meta,
            )
            tools.append(McpTool(self, spec, t.name))
        self._tools = tools

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
                    listing = await self._list_tools(client)
            except Exception as e:
                self._stale = True
                if isinstance(e, TimeoutError) or _mcp_code(e) == _CONNECTION_CLOSED:
                    self._fail(conn, self._cause(conn, e))
                _log.warning("MCP server %s: tools/list failed: %s", self.name, describe_exception(e))
            else:
                self._set_tools(listing)
        return list(self._tools)

    # -- calls ----------------------------------------------------------------------------------------

    async def _usable(self) -> _Connection | str:
        """The live connection (restarting a failed server when its backoff is over), or why there is none."""
        if not self._started or self._stopping.is_set():
            return f"MCP server `{self.name}` is not running"
        await self._serving.wait()  # started an instant ago: _serve may still be importing mcp
        if self._tg is None:
            return f"MCP server `{self.name}` is not running"
        conn = self._conn
        if conn is None or conn.dead:
            wait = self._retry_at - anyio.current_time()
            if wait > 0:
                return (
                    f"MCP server `{self.name}` is unavailable: {self._state.cause} "
                    f"(next restart attempt in {math.ceil(wait)} s)"
                )
            conn = self._connect()
        await conn.settled.wait()
        if conn.client is None or conn.dead:
            return f"MCP server `{self.name}` failed to start: {self._state.cause}"
        return conn

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
        from pydantic import ValidationError

        try:
            r = await client.call_tool(
                tool, dict(arguments), read_timeout_seconds=limit, progress_callback=on_progress
            )
        except MCPError as e:
            if e.code == _CONNECTION_CLOSED:
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

    def _call_error(self, conn: _Connection, tool: str, e: Any, limit: float) -> Result:
        code: int = e.code
        is_http = isinstance(self.config, HttpConfig)
        if code == _REQUEST_TIMEOUT:
            if conn.client is not None and not conn.probing and self._tg is not None:
                conn.probing = True
                self._tg.start_soon(self._probe, conn)
            garbage = conn.proc.describe_garbage() if conn.proc is not None else ""
            return Result.failure(
                f"MCP server `{self.name}` did not answer `{tool}` within {limit:g} s; "
                f"the call was cancelled{garbage}"
            )
        if code == _CONNECTION_CLOSED or (is_http and code in _HTTP_SESSION_LOST):
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

    async def _probe(self, conn: _Connection) -> None:
        """After a timeout: a server that does not answer ``tools/list`` either is restarted on next use."""
        client = conn.client
        try:
            if client is None:
                return
            with anyio.fail_after(min(5.0, self.call_timeout)):
                await self._list_tools(client)
        except TimeoutError:
            self._fail(conn, "it stopped answering (a call timed out, then tools/list did too)")
        except Exception as e:
            if _mcp_code(e) == _CONNECTION_CLOSED:
                await self._await_exit(conn)
                self._fail(conn, self._cause(conn, e))
        finally:
            conn.probing = False

    async def _await_exit(self, conn: _Connection) -> None:
        """After "connection closed" from a stdio server, let its exit be seen (for the exit code)."""
        if conn.proc is not None:
            with anyio.move_on_after(0.5):
                await conn.proc.exited.wait()

    # -- prompts (slash commands) ---------------------------------------------------------------------

    async def prompts(self) -> list[PromptInfo]:
        """The server's prompts ([] when it has none, is not ready, or fails to list them)."""
        conn = self._conn
        client = conn.client if conn is not None else None
        if client is None or client.server_capabilities.prompts is None:
            return []
        out: list[PromptInfo] = []
        try:
            with anyio.fail_after(self.call_timeout):
                cursor: str | None = None
                for _ in range(_PAGE_CAP):
                    page = await client.list_prompts(cursor=cursor, cache_mode="refresh")
                    for p in page.prompts:
                        args = tuple(
                            PromptArgument(a.name, a.description, bool(a.required)) for a in p.arguments or ()
                        )
                        out.append(PromptInfo(self.name, p.name, p.description, args))
                    cursor = page.next_cursor
                    if cursor is None:
                        break
        except Exception as e:
            _log.warning("MCP server %s: prompts/list failed: %s", self.name, describe_exception(e))
            return []
        return out

    async def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> str:
        """The prompt's messages as text (resources and images described), for expanding a slash command.
        Raises ``McpError`` when the server is not available or refuses."""
        import mcp_types as types

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
        texts: list[str] = []
        for m in r.messages:
            c = m.content
            if isinstance(c, types.TextContent):
                texts.append(c.text)
            elif isinstance(c, types.EmbeddedResource) and isinstance(c.resource, types.TextResourceContents):
                texts.append(c.resource.text)
        return "\n\n".join(texts)


def root_uris(roots: Sequence[str | Path]) -> list[tuple[str, str | None]]:
    """``(file:// URI, name)`` of each root (a path, relative to the cwd, or a URI already)."""
    out: list[tuple[str, str | None]] = []
    for r in roots:
        if isinstance(r, str) and r.startswith("file://"):
            out.append((r, None))
        else:
            p = Path(os.path.abspath(r))
            out.append((p.as_uri(), p.name or None))
    return out


class McpError(Exception):
    """An MCP operation other than a tool call failed (tool calls give error results instead)."""


def _mcp_code(e: BaseException) -> int | None:
    code = getattr(e, "code", None)
    return code if isinstance(code, int) else None


@asynccontextmanager
async def _http_transport(cfg: HttpConfig, auth: Any) -> AsyncGenerator[Any]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(
            headers=dict(cfg.headers),
            timeout=httpx2.Timeout(30.0, read=300.0),
            follow_redirects=True,
            auth=auth,
        ) as http,
        streamable_http_client(cfg.url, http_client=http) as streams,
    ):
        yield streams
