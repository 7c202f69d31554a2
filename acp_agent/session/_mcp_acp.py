"""MCP over ACP (UNSTABLE, ``mcpCapabilities.acp``), in its request-scoped shape (schema of SDK 2.4.0): an
``{"type": "acp", "name", "serverId"}`` server of ``session/new|load|resume`` is a tool source like the
stdio and HTTP ones, reached through the ACP connection.

``acp_transport`` is its transport for the ``mcp`` SDK's client (``harness.mcp.StreamConfig``): each
request of the SDK's client goes to the client as ``mcp/message {serverId, requestId, method, params}``
(``requestId`` made here, unique on the connection), and the answer's inner outcome (``{result}`` or
``{error}``: an MCP error in a successful ACP response) is the MCP answer; an ACP error (the binding or the
client failed) is an MCP error too. There is no connection to open or close. The provider's notifications
for an active request (progress, say) come from the client as ``mcp/message`` notifications naming the
``requestId`` (``McpAcpBridge`` routes them); the SDK client's own notifications have no carrier in this
shape and are dropped (a cancelled inner request is cancelled by the session's end instead).

What it trusts: the client, which runs the server; nothing more than an MCP server over stdio gets.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from ..protocol.errors import RpcError
from ..protocol.jsonvalue import as_object

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from ..protocol.connection import Connection

__all__ = ["McpAcpBridge", "acp_transport"]

log = logging.getLogger(__name__)


class McpAcpBridge:
    """The connection's active inner MCP requests, by ``requestId``: where the provider's notifications
    for each go (the SDK client of the session that sent it)."""

    def __init__(self) -> None:
        self._active: dict[str, tuple[str, MemoryObjectSendStream[Any]]] = {}
        self._count = 0

    def open(self, server_id: str, to_client: MemoryObjectSendStream[Any]) -> str:
        """A new inner request to ``server_id``: its ``requestId``."""
        self._count += 1
        request_id = f"mcp-{self._count}"
        self._active[request_id] = (server_id, to_client)
        return request_id

    def close(self, request_id: str) -> None:
        self._active.pop(request_id, None)

    async def notified(self, params: Any) -> None:
        """The provider's notification for an active request (the client's ``mcp/message`` notification)."""
        from mcp.shared.message import SessionMessage
        from mcp_types import jsonrpc_message_adapter

        p = as_object(params)
        active = self._active.get(str(p.get("requestId")))
        method = p.get("method")
        if active is None or active[0] != p.get("serverId") or not isinstance(method, str):
            log.debug("mcp/message notification for no active MCP request ignored")
            return
        message = _clean({"jsonrpc": "2.0", "method": method, "params": p.get("params")})
        try:
            await active[1].send(SessionMessage(jsonrpc_message_adapter.validate_python(message)))
        except (ValueError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.debug("mcp/message notification %s dropped", method)


def _clean(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if v is not None}


@asynccontextmanager
async def acp_transport(
    connection: Connection, bridge: McpAcpBridge, server_id: str
) -> AsyncGenerator[tuple[Any, Any]]:
    """The ``(read, write)`` streams of an MCP server the client runs (see the module docstring)."""
    from mcp.shared.message import SessionMessage

    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](16)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_pump, connection, bridge, server_id, read_send, write_recv, tg)
            try:
                yield read_recv, write_send
            finally:
                tg.cancel_scope.cancel()
    finally:
        for stream in (read_send, read_recv, write_send, write_recv):
            stream.close()


async def _pump(
    connection: Connection,
    bridge: McpAcpBridge,
    server_id: str,
    to_client: MemoryObjectSendStream[Any],
    messages: MemoryObjectReceiveStream[Any],
    tg: Any,
) -> None:
    """The SDK client's requests to the server, over ACP, each in a task of its own."""
    async for item in messages:
        message: dict[str, Any] = item.message.model_dump(by_alias=True, exclude_none=True, mode="json")
        if "method" in message and "id" in message:
            tg.start_soon(_forward, connection, bridge, server_id, to_client, message)
        else:
            log.debug(
                "MCP over ACP: %s has no carrier in the request-scoped shape; dropped", message.get("method")
            )


async def _forward(
    connection: Connection,
    bridge: McpAcpBridge,
    server_id: str,
    to_client: MemoryObjectSendStream[Any],
    message: dict[str, Any],
) -> None:
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    request_id = bridge.open(server_id, to_client)
    params = {"serverId": server_id, "requestId": request_id, "method": message["method"]}
    if message.get("params") is not None:
        params["params"] = message["params"]
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
    try:
        reply |= _inner_outcome(await connection.request("mcp/message", params))
    except RpcError as exc:  # the binding or the client failed: an MCP error for the SDK's call
        reply["error"] = _clean({"code": exc.code, "message": exc.message, "data": exc.data})
    except Exception as exc:  # the connection closed: the SDK's call fails rather than waits
        reply["error"] = {"code": -32603, "message": f"the client did not answer: {exc}"}
    finally:
        bridge.close(request_id)
    try:
        await to_client.send(SessionMessage(jsonrpc_message_adapter.validate_python(reply)))
    except (ValueError, anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass


def _inner_outcome(answer: Any) -> dict[str, Any]:
    """The MCP answer an ``mcp/message`` response carries: ``result`` (preferred when both are there), else
    the MCP ``error``; a malformed one is an error."""
    a = as_object(answer)
    if "result" in a:
        result = a["result"]
        return {"result": result if isinstance(result, dict) else {}}
    error = as_object(a.get("error"))
    if isinstance(error.get("code"), int) and isinstance(error.get("message"), str):
        return {
            "error": _clean({"code": error["code"], "message": error["message"], "data": error.get("data")})
        }
    return {
        "error": {"code": -32603, "message": "the client's mcp/message answer carried no result or error"}
    }
