"""The conformance client's MCP server over ACP (UNSTABLE ``mcpCapabilities.acp``): a scenario declares it
in ``session/new`` as ``{"type": "acp", "name": "kit", "serverId": "kit-mcp"}`` and the agent reaches it
with ``mcp/message {serverId, requestId, method, params}`` requests, each answered with one inner MCP
outcome (``{"result": ...}`` or ``{"error": ...}``, schema ``MessageMcpResponse``).

The server serves both MCP eras, as an mcp 2.x server does: MCP 2026-07-28 (``server/discover``, the only
revision the SDKs' request-scoped binding speaks, then requests that each name their revision in
``_meta["io.modelcontextprotocol/protocolVersion"]``; results carry ``resultType`` and, for lists, the cache
hints) and the handshake era before it (``initialize``, ``ping``). It has one tool, ``echo``, whose result is
``KIT-MCP-ECHO:`` and its ``text`` argument, so a scenario can see the tool's answer reach the model. A
``server/discover`` at a revision it does not serve is the inner ``-32022`` with the ones it does; other
methods get the inner ``-32601``; an ``mcp/message`` to another ``serverId``, or without a ``requestId``,
is an outer ``-32602`` (the binding's failure, not the server's).
"""

from __future__ import annotations

from typing import Any

from .json_types import JsonObject, is_object

__all__ = ["KIT_MCP_SERVER", "KIT_MCP_SERVER_ID", "answer_mcp_message"]

KIT_MCP_SERVER_ID = "kit-mcp"
KIT_MCP_SERVER = {"type": "acp", "name": "kit", "serverId": KIT_MCP_SERVER_ID}
"""The ``McpServer`` entry a scenario puts in ``session/new``'s ``mcpServers``."""
_PROTOCOL = "2025-06-18"
_MODERN = "2026-07-28"
"""The MCP revision of ``server/discover`` (no handshake: each request names its revision)."""
_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
_INFO = {"name": "acp-conformance-kit", "version": "0.1.0"}
_UNSUPPORTED_VERSION = -32022
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


def _modern(params: JsonObject) -> bool:
    """Whether the request names a revision of MCP 2026-07-28's per-request envelope (else: handshake era)."""
    meta: Any = params.get("_meta")
    return is_object(meta) and isinstance(meta.get(_VERSION_KEY), str)


def _complete(result: dict[str, Any], params: JsonObject, *, listing: bool = False) -> dict[str, Any]:
    """``result`` as the request's era has it: a 2026-07-28 result says it is complete (a list adds its
    cache hints) and stamps the server's identity in ``_meta``; a handshake-era one is as is."""
    if not _modern(params):
        return result
    hints = {"ttlMs": 0, "cacheScope": "private"} if listing else {}
    return {
        **result,
        **hints,
        "resultType": "complete",
        "_meta": {"io.modelcontextprotocol/serverInfo": _INFO},
    }


def _discover(params: JsonObject) -> dict[str, Any]:
    meta: Any = params.get("_meta")
    requested = meta.get(_VERSION_KEY) if is_object(meta) else None
    if requested != _MODERN:
        return {
            "error": {
                "code": _UNSUPPORTED_VERSION,
                "message": f"the kit's MCP server does not serve MCP {requested!r}",
                "data": {
                    "supported": [_MODERN],
                    "requested": requested if isinstance(requested, str) else "",
                },
            }
        }
    result: dict[str, Any] = {"supportedVersions": [_MODERN], "capabilities": {"tools": {}}}
    return {"result": _complete(result, params, listing=True)}


def _inner(method: str, params: JsonObject) -> dict[str, Any]:
    match method:
        case "server/discover":
            return _discover(params)
        case "initialize":
            version = params.get("protocolVersion")
            return {
                "result": {
                    "protocolVersion": version if isinstance(version, str) else _PROTOCOL,
                    "capabilities": {"tools": {}},
                    "serverInfo": _INFO,
                }
            }
        case "ping":
            return {"result": _complete({}, params)}
        case "tools/list":
            return {"result": _complete({"tools": [_ECHO]}, params, listing=True)}
        case "tools/call":
            args: Any = params.get("arguments")
            text = args.get("text") if is_object(args) else None
            if params.get("name") != "echo" or not isinstance(text, str):
                return {"error": {"code": -32602, "message": "call echo with a text argument"}}
            content = [{"type": "text", "text": f"KIT-MCP-ECHO:{text}"}]
            return {"result": _complete({"content": content, "isError": False}, params)}
        case _:
            return {"error": {"code": -32601, "message": f"the kit's MCP server does not serve {method}"}}
