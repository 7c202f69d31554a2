"""MCP over ACP (UNSTABLE, ``mcpCapabilities.acp``; RFD ``mcp-over-acp``): an ``{"type": "acp", "name",
"serverId"}`` server of ``session/new|load|resume`` is a tool source like the stdio and HTTP ones, reached
through the ACP connection.

``acp_transport`` is its transport for the ``mcp`` SDK's client (``harness.mcp.StreamConfig``): it asks
the client ``mcp/connect {serverId}`` for a ``connectionId``, carries each message of the SDK's client
as ``mcp/message {connectionId, method, params}`` (a request's answer is the MCP result, an ACP error
its MCP error), and ends with ``mcp/disconnect`` when the session's servers close. The server's own
requests and notifications come from the client as ``mcp/message`` (``McpAcpBridge``, one per ACP
connection, finds the connection by its id): they reach the SDK's client as if the server had written
them, so elicitation goes through the session's handler and sampling is refused by the SDK (this agent
offers no sampling), and the SDK's answer goes back as the answer of the client's request.

What it trusts: the client, which runs the server; nothing more than an MCP server over stdio gets.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import anyio

from ..protocol.errors import RpcError
from ..protocol.jsonvalue import as_object

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from ..protocol.connection import Connection, RequestContext
    from ._agent import AcpAgent

__all__ = ["McpAcpBridge", "acp_transport", "mcp_message"]

log = logging.getLogger(__name__)

_DISCONNECT_TIMEOUT: Final = 5.0


@dataclass(eq=False)
class _Link:
    """One open MCP-over-ACP connection: where the server's messages go, its requests awaiting answers."""

    to_client: MemoryObjectSendStream[Any]
    waiting: dict[str, anyio.Event] = field(default_factory=dict[str, anyio.Event])
    answers: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    count: int = 0


class McpAcpBridge:
    """The connection's MCP-over-ACP connections by ``connectionId``."""

    def __init__(self) -> None:
        self._links: dict[str, _Link] = {}

    def add(self, connection_id: str, link: _Link) -> None:
        self._links[connection_id] = link

    def remove(self, connection_id: str) -> None:
        self._links.pop(connection_id, None)

    def _link(self, params: Any) -> tuple[_Link, dict[str, Any]]:
        p: dict[str, Any] = params if isinstance(params, dict) else {}  # pyright: ignore[reportUnknownVariableType]
        link = self._links.get(str(p.get("connectionId")))
        if link is None or not isinstance(p.get("method"), str):
            raise RpcError.invalid_params("invalid params: connectionId: no such MCP connection")
        return link, p

    async def request(self, params: Any) -> Any:
        """The server's request (the client's ``mcp/message`` request): the SDK client's answer."""
        from mcp.shared.message import SessionMessage
        from mcp_types import jsonrpc_message_adapter

        link, p = self._link(params)
        link.count += 1
        local = f"acp-{link.count}"
        done = link.waiting[local] = anyio.Event()
        message = {"jsonrpc": "2.0", "id": local, "method": p["method"], "params": p.get("params")}
        try:
            await link.to_client.send(
                SessionMessage(jsonrpc_message_adapter.validate_python(_clean(message)))
            )
            await done.wait()
        finally:
            link.waiting.pop(local, None)
        answer = link.answers.pop(local)
        if "error" in answer:
            error: dict[str, Any] = answer["error"]
            raise RpcError(
                int(error.get("code", -32603)), str(error.get("message", "MCP error")), error.get("data")
            )
        return answer.get("result", {})

    async def notified(self, params: Any) -> None:
        """The server's notification (the client's ``mcp/message`` notification)."""
        from mcp.shared.message import SessionMessage
        from mcp_types import jsonrpc_message_adapter

        try:
            link, p = self._link(params)
        except RpcError:
            log.debug("mcp/message notification for no MCP connection ignored")
            return
        message = {"jsonrpc": "2.0", "method": p["method"], "params": p.get("params")}
        try:
            await link.to_client.send(
                SessionMessage(jsonrpc_message_adapter.validate_python(_clean(message)))
            )
        except (ValueError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.debug("mcp/message notification %s dropped", p["method"])


def _clean(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if v is not None}


async def mcp_message(agent: AcpAgent, params: Any, ctx: RequestContext) -> Any:
    """``mcp/message`` from the client: a request of an MCP server it runs."""
    return await agent.mcp_bridge.request(params)


@asynccontextmanager
async def acp_transport(
    connection: Connection, bridge: McpAcpBridge, server_id: str
) -> AsyncGenerator[tuple[Any, Any]]:
    """The ``(read, write)`` streams of an MCP server the client runs (see the module docstring)."""
    from mcp.shared.message import SessionMessage

    answer = as_object(await connection.request("mcp/connect", {"serverId": server_id}))
    connection_id = answer.get("connectionId")
    if not isinstance(connection_id, str) or not connection_id:
        raise RpcError.internal_error("mcp/connect answered no connectionId")
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](16)
    link = _Link(read_send)
    bridge.add(connection_id, link)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_pump, connection, connection_id, link, write_recv, tg)
            try:
                yield read_recv, write_send
            finally:
                tg.cancel_scope.cancel()
    finally:
        bridge.remove(connection_id)
        for stream in (read_send, read_recv, write_send, write_recv):
            stream.close()
        with anyio.CancelScope(shield=True), anyio.move_on_after(_DISCONNECT_TIMEOUT):
            try:
                await connection.request("mcp/disconnect", {"connectionId": connection_id})
            except Exception as exc:
                log.debug("mcp/disconnect %s: %s", connection_id, exc)


async def _pump(
    connection: Connection,
    connection_id: str,
    link: _Link,
    messages: MemoryObjectReceiveStream[Any],
    tg: Any,
) -> None:
    """The SDK client's messages to the server, over ACP."""
    async for item in messages:
        message: dict[str, Any] = item.message.model_dump(by_alias=True, exclude_none=True, mode="json")
        if "method" in message and "id" in message:
            tg.start_soon(_forward, connection, connection_id, link, message)
        elif "method" in message:
            params = {
                "connectionId": connection_id,
                "method": message["method"],
                "params": message.get("params"),
            }
            await connection.notify("mcp/message", _clean(params))
        else:  # the SDK's answer to one of the server's requests
            local = str(message.get("id"))
            waiting = link.waiting.get(local)
            if waiting is not None:
                link.answers[local] = message
                waiting.set()


async def _forward(connection: Connection, connection_id: str, link: _Link, message: dict[str, Any]) -> None:
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    params = {"connectionId": connection_id, "method": message["method"], "params": message.get("params")}
    reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
    try:
        reply["result"] = await connection.request("mcp/message", _clean(params)) or {}
    except RpcError as exc:
        reply["error"] = _clean({"code": exc.code, "message": exc.message, "data": exc.data})
    except Exception as exc:  # the connection closed: the SDK's call fails rather than waits
        reply["error"] = {"code": -32603, "message": f"the client did not answer: {exc}"}
    try:
        await link.to_client.send(SessionMessage(jsonrpc_message_adapter.validate_python(reply)))
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass
