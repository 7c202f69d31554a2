"""How MCP failures are told: the SDK's error codes we act on, one line for any exception, ``McpError``."""

from __future__ import annotations

__all__ = [
    "CONNECTION_CLOSED",
    "HTTP_SESSION_LOST",
    "REQUEST_TIMEOUT",
    "McpError",
    "describe_exception",
    "mcp_code",
]

CONNECTION_CLOSED = -32000
REQUEST_TIMEOUT = -32001
HTTP_SESSION_LOST = (-32600, -32603)  # "Session not found/terminated", "Server returned an error response"


class McpError(Exception):
    """An MCP operation other than a tool call failed (tool calls give error results instead)."""


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


def mcp_code(e: BaseException) -> int | None:
    """The JSON-RPC error code an SDK error carries, if any."""
    code = getattr(e, "code", None)
    return code if isinstance(code, int) else None


def _first_leaf(error: BaseException) -> BaseException:
    subs: tuple[BaseException, ...] = getattr(error, "exceptions", ())
    return _first_leaf(subs[0]) if subs else error
