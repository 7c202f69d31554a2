"""The SDK ``Client`` of one connection to a server: its transport (stdio, Streamable HTTP or SSE), our
answers to the server's requests (roots, elicitation, its log messages, list changes), and tool listing.

``mcp`` is imported lazily, in a worker thread (``import_mcp``), when a server first starts.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio

from .. import __version__
from ._config import HttpConfig, ServerConfig, StdioConfig, StreamConfig
from ._elicit import Elicitation, ElicitationHandler, ElicitationReply
from ._errors import describe_exception
from ._stdio import StdioProcess, stdio_transport

if TYPE_CHECKING:
    import mcp_types
    from mcp import Client
    from mcp.client import ClientRequestContext

__all__ = ["PAGE_CAP", "ClientHooks", "HookSettings", "import_mcp", "list_tools", "new_client", "root_uris"]

_log = logging.getLogger("harness.mcp._server")  # one logger for all of a server's life

PAGE_CAP = 100  # pages of a listing read at most


async def import_mcp() -> None:
    """Import the SDK (about 1 s) in a worker thread so the event loop keeps serving."""
    if "mcp.client.client" not in sys.modules:
        await anyio.to_thread.run_sync(importlib.import_module, "mcp")


class HookSettings(Protocol):
    """The host's settings the hooks read when the server asks (``McpServer`` has them)."""

    @property
    def name(self) -> str: ...

    roots: Sequence[str | Path]
    elicitation_handler: ElicitationHandler | None


class ClientHooks:
    """Our side of the requests and notifications a server sends on one connection."""

    __slots__ = ("on_tools_changed", "settings")

    def __init__(self, settings: HookSettings, on_tools_changed: Callable[[], None]) -> None:
        self.settings = settings
        self.on_tools_changed = on_tools_changed

    async def on_message(self, message: Any) -> None:
        import mcp_types as types

        if isinstance(message, Exception):
            _log.debug(
                "MCP server %s: transport message: %s", self.settings.name, describe_exception(message)
            )
        elif isinstance(message, types.ToolListChangedNotification):
            self.on_tools_changed()

    async def on_log(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        level = {
            "debug": logging.DEBUG,
            "info": logging.INFO,
            "notice": logging.INFO,
            "warning": logging.WARNING,
        }
        _log.log(level.get(params.level, logging.ERROR), "[%s] %s", self.settings.name, params.data)

    async def on_roots(self, context: ClientRequestContext) -> mcp_types.ListRootsResult:
        import mcp_types as types

        roots = [
            types.Root(uri=uri, name=name)  # pyright: ignore[reportArgumentType]
            for uri, name in root_uris(self.settings.roots)
        ]
        return types.ListRootsResult(roots=roots)

    async def on_elicit(
        self, context: ClientRequestContext, params: mcp_types.ElicitRequestParams
    ) -> mcp_types.ElicitResult:
        import mcp_types as types

        name, handler = self.settings.name, self.settings.elicitation_handler
        if handler is None:
            return types.ElicitResult(action="decline")
        if isinstance(params, types.ElicitRequestURLParams):
            request = Elicitation(name, params.message, "url", url=params.url)
        else:
            request = Elicitation(name, params.message, "form", dict(params.requested_schema))
        try:
            reply = await handler(request)
        except Exception:
            _log.exception("the elicitation handler failed for MCP server %s", name)
            reply = ElicitationReply("cancel")
        content = dict(reply.content) if reply.action == "accept" and reply.content is not None else None
        return types.ElicitResult(action=reply.action, content=content)


def new_client(
    config: ServerConfig,
    hooks: ClientHooks,
    *,
    mode: Literal["legacy", "auto"],
    http_auth: Any,
    proc: StdioProcess | None,
    on_exit: Callable[[], None],
) -> Client:
    """A client over ``config``'s transport; a stdio server's process is told in ``proc``, and ``on_exit``
    is called if it ends on its own."""
    import mcp_types as types
    from mcp import Client

    transport: AbstractAsyncContextManager[Any]
    if isinstance(config, StdioConfig):
        assert proc is not None, "a stdio server's process is watched"
        transport = stdio_transport(config, proc, on_exit)
    elif isinstance(config, StreamConfig):
        transport = config.open()
    elif config.transport == "sse":
        from mcp.client.sse import sse_client

        transport = sse_client(config.url, headers=dict(config.headers), auth=http_auth)
    else:
        transport = _http_transport(config, http_auth)
    kwargs: dict[str, Any] = {}
    if hooks.settings.roots:
        kwargs["list_roots_callback"] = hooks.on_roots
    return Client(
        transport,
        mode=mode,
        client_info=types.Implementation(name="acp-agent", version=__version__),
        message_handler=hooks.on_message,
        logging_callback=hooks.on_log,
        elicitation_callback=hooks.on_elicit,
        **kwargs,
    )


async def list_tools(client: Client) -> list[mcp_types.Tool]:
    """Every page of ``tools/list`` (at most ``PAGE_CAP``)."""
    out: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(PAGE_CAP):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        out.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return out


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
