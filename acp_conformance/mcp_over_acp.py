"""The conformance client's MCP server over ACP (UNSTABLE ``mcpCapabilities.acp``): a scenario declares it
in ``session/new`` as ``{"type": "acp", "name": "kit", "serverId": "kit-mcp"}`` and the agent reaches it
with ``mcp/message {serverId, requestId, method, params}`` requests, each answered with one inner MCP
outcome (``{"result": ...}`` or ``{"error": ...}``, schema ``MessageMcpResponse``).

The server is a handshake-era MCP server (``initialize``, ``tools/list``, ``tools/call``, ``ping``) with one
tool, ``echo``, whose result is ``KIT-MCP-ECHO:`` and its ``text`` argument, so a scenario can see the tool's
answer reach the model. ``server/discover`` (MCP 2026-07-28) and other methods get the inner ``-32601`` an
older server gives; an ``mcp/message`` to another ``serverId``, or without a ``requestId``, is an outer
``-32602`` (the binding's failure, not the server's).
"""

from __future__ import annotations

from typing import Any

from .json_types import JsonObject, is_object

__all__ = ["KIT_MCP_SERVER", "KIT_MCP_SERVER_ID", "answer_mcp_message"]

KIT_MCP_SERVER_ID = "kit-mcp"
KIT_MCP_SERVER = {"type": "acp", "name": "kit", "serverId": KIT_MCP_SERVER_ID}
"""The ``McpServer`` entry a scenario puts in ``session/new``'s ``mcpServers``."""
_PROTOCOL = "2025-06-18"
_ECHO = {
    "name": "echo",
    "description": "Answers KIT-MCP-ECHO: followed by the text it was given.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


def answer_mcp_message(params: Any) -> dict[str, Any]:
    """The reply (``result`` or ``error`` member) to an agent's ``mcp/message`` request."""
    p: JsonObject = params if is_object(params) else {}
    if p.get("serverId") != KIT_MCP_SERVER_ID:
        return {"error": {"code": -32602, "message": f"no MCP server {p.get('serverId')!r} on this client"}}
    if not isinstance(p.get("requestId"), str | int) or not isinstance(p.get("method"), str):
        return {"error": {"code": -32602, "message": "mcp/message needs a requestId and a method"}}
    inner: Any = p.get("params")
    return {"result": _inner(str(p["method"]), inner if is_object(inner) else {})}


def _inner(method: str, params: JsonObject) -> dict[str, Any]:
    match method:
        case "initialize":
            version = params.get("protocolVersion")
            return {
                "result": {
                    "protocolVersion": version if isinstance(version, str) else _PROTOCOL,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "acp-conformance-kit", "version": "0.1.0"},
                }
            }
        case "ping":
            return {"result": {}}
        case "tools/list":
            return {"result": {"tools": [_ECHO]}}
        case "tools/call":
            args: Any = params.get("arguments")
            text = args.get("text") if is_object(args) else None
            if params.get("name") != "echo" or not isinstance(text, str):
                return {"error": {"code": -32602, "message": "call echo with a text argument"}}
            return {
                "result": {"content": [{"type": "text", "text": f"KIT-MCP-ECHO:{text}"}], "isError": False}
            }
        case _:
            return {"error": {"code": -32601, "message": f"the kit's MCP server does not serve {method}"}}
