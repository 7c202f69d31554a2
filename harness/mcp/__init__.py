"""MCP servers as harness tool sources (stdio, Streamable HTTP, SSE), on the official ``mcp`` SDK.

``McpServer.stdio/http/sse(...)`` is one server; ``McpManager`` runs a session's servers together in the
background and reports their states. Tools are named ``mcp__<server>__<tool>``. Importing this package
does not import ``mcp`` (about 1 s): that happens in a worker thread when a server first starts.

Configs: ``load_mcp_config(path)`` reads a Claude-Desktop-style ``{"mcpServers": {...}}`` file;
``servers_from_acp(entries)`` converts the ``mcpServers`` of an ACP ``session/new``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._config import (
    HttpConfig,
    McpConfigError,
    ServerConfig,
    StdioConfig,
    StreamConfig,
    parse_acp_servers,
    parse_mcp_config,
    read_mcp_config,
    safe_env,
)
from ._elicit import Elicitation, ElicitationHandler, ElicitationReply, schema_defaults
from ._errors import McpError
from ._manager import McpManager
from ._names import assign_names, exposed_name
from ._prompts import PromptArgument, PromptInfo
from ._server import McpServer, McpTool
from ._status import ServerState, ServerStatus, StatusCallback

__all__ = [
    "Elicitation",
    "ElicitationHandler",
    "ElicitationReply",
    "HttpConfig",
    "McpConfigError",
    "McpError",
    "McpManager",
    "McpServer",
    "McpTool",
    "PromptArgument",
    "PromptInfo",
    "ServerConfig",
    "ServerState",
    "ServerStatus",
    "StatusCallback",
    "StdioConfig",
    "StreamConfig",
    "assign_names",
    "exposed_name",
    "load_mcp_config",
    "parse_acp_servers",
    "parse_mcp_config",
    "read_mcp_config",
    "safe_env",
    "schema_defaults",
    "servers_from_acp",
    "servers_from_config",
]


def servers_from_config(configs: Sequence[ServerConfig], **options: Any) -> list[McpServer]:
    """``McpServer``s for configs; ``options`` as for ``McpServer`` (timeouts, mode, ...)."""
    return [McpServer(c, **options) for c in configs]


def load_mcp_config(path: str | Path, **options: Any) -> list[McpServer]:
    """Servers of a Claude-Desktop-style config file (none when it does not exist). Blocking: from async
    code, call it in a worker thread. Raises ``McpConfigError`` for a malformed file."""
    return servers_from_config(read_mcp_config(path), **options)


def servers_from_acp(entries: Sequence[Mapping[str, Any]], **options: Any) -> list[McpServer]:
    """Servers of an ACP ``session/new`` (``load``, ``resume``) ``mcpServers`` list, as JSON dicts."""
    return servers_from_config(parse_acp_servers(entries), **options)
