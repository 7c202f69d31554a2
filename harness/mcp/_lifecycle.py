"""A server's life, the half of ``McpServer`` that keeps it connected: started in a task group, one
``Connection`` at a time, failed with a cause, restarted with backoff, closed with its process group.

The other half (``_server``) is what the host uses: the tools, the calls, the prompts.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, Self, TypeVar

import anyio
import anyio.abc

from .._errors import HarnessUsageError
from ._client import ClientHooks, import_mcp, list_tools, new_client
from ._config import ServerConfig, StdioConfig
from ._elicit import ElicitationHandler
from ._errors import describe_exception
from ._status import ServerState, ServerStatus, StatusCallback
from ._stdio import StdioProcess

if TYPE_CHECKING:
    import mcp_types
    from mcp import Client

__all__ = ["CLOSE_TIMEOUT", "Connection", "ServerLifecycle"]

_log = logging.getLogger("harness.mcp._server")  # one logger for all of a server's life

CLOSE_TIMEOUT = 1.8  # a closing server gets this long before its connection is cancelled


class Connection:
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


ToolT = TypeVar("ToolT")


class ServerLifecycle(Generic[ToolT]):
    """Start, supervise and close one server; ``McpServer`` adds tools, calls and prompts (``ToolT``: its
    tool type, which this half only counts)."""

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
        self.mode: Literal["legacy", "auto"] = mode
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
        self._conn: Connection | None = None
        self._tools: list[ToolT] = []
        self._stale = True
        self._relist_always = False
        self._failures = 0
        self._retry_at = 0.0
        self._own_tg: anyio.abc.TaskGroup | None = None

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

    async def __aenter__(self) -> Self:
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

    # -- one connection -------------------------------------------------------------------------------

    def _connect(self) -> Connection:
        assert self._tg is not None
        conn = Connection()
        self._conn = conn
        self._set_state(ServerStatus.STARTING)
        self._tg.start_soon(self._run_connection, conn, name=f"mcp connection {self.name}")
        return conn

    def _fail(self, conn: Connection, cause: str) -> None:
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

    async def _run_connection(self, conn: Connection) -> None:
        cause: str | None = None
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self.connect_timeout) as scope:
                conn.scope = scope
                async with AsyncExitStack() as stack:
                    client = await stack.enter_async_context(self._client(conn))
                    self._stale = False
                    listing = await list_tools(client)
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
            # A cancellation inside the group goes on; the first real error in it is the cause.
            rest = eg.split(Exception)[0]
            cause = self._cause(conn, rest) if rest is not None else None
            raise
        finally:
            conn.client = None
            if not conn.stop.is_set() or cause is not None:
                self._fail(conn, cause or self._cause(conn, None))
            conn.settled.set()
            conn.closed.set()

    def _cause(self, conn: Connection, exc: BaseException | None) -> str:
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

    def _client(self, conn: Connection) -> Client:
        cfg = self.config
        proc = conn.proc = StdioProcess(cfg.name) if isinstance(cfg, StdioConfig) else None

        def on_exit() -> None:
            assert proc is not None
            self._fail(conn, f"the server process {proc.describe_exit()}")

        hooks = ClientHooks(self, lambda: self._tools_changed(conn))
        return new_client(cfg, hooks, mode=self.mode, http_auth=self.http_auth, proc=proc, on_exit=on_exit)

    def _tools_changed(self, conn: Connection) -> None:
        if conn is self._conn:
            self._stale = True

    async def _listen(self, client: Client, conn: Connection) -> None:
        try:
            async with client.listen(tools_list_changed=True) as sub:
                async for _ in sub:
                    self._tools_changed(conn)
        except Exception as e:
            # Without a change stream the listing is re-read at every step.
            _log.info("MCP server %s: no tools/list_changed stream (%s)", self.name, describe_exception(e))
            self._relist_always = True

    def _set_tools(self, listing: Sequence[mcp_types.Tool]) -> None:
        """Make the tools of a fresh listing (``McpServer`` does)."""
        raise NotImplementedError

    async def _usable(self) -> Connection | str:
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

    async def _await_exit(self, conn: Connection) -> None:
        """After "connection closed" from a stdio server, let its exit be seen (for the exit code)."""
        if conn.proc is not None:
            with anyio.move_on_after(0.5):
                await conn.proc.exited.wait()
