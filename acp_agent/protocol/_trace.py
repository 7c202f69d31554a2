"""The debug trace of the connection's traffic: each line clipped, and never one that carries credentials.

Nothing is formatted unless the ``acp_agent.protocol`` logger is at debug. An incoming line is judged on its
decoded value (an escaped key name, ``"h\\u0065aders"``, is still ``headers``): ``providers/set``'s and an MCP
server's headers and env are secrets the log never holds.
"""

from __future__ import annotations

import logging
from typing import Any, Final, cast

from ._jsonrpc import clip

__all__ = ["trace_in", "trace_out"]

_log = logging.getLogger("acp_agent.protocol")

_LOG_LIMIT: Final = 2048
_SECRET_KEYS: Final = frozenset({"headers", "env", "authorization", "apikey", "api_key", "token"})


def trace_in(line: bytes, decoded: Any) -> None:
    """The debug trace of an incoming line that decoded to ``decoded``."""
    if not _log.isEnabledFor(logging.DEBUG):
        return
    if _holds_secrets(decoded):
        _log.debug("<- (%d bytes holding headers, not logged)", len(line))
    else:
        _log.debug("<- %s", clip(line[: _LOG_LIMIT + 1].decode("utf-8", "replace")))


def trace_out(data: bytes) -> None:
    """The debug trace of an outgoing line."""
    if _log.isEnabledFor(logging.DEBUG):
        _log.debug("-> %s", clip(data[: _LOG_LIMIT + 1].decode("utf-8", "replace").rstrip("\n")))


def _holds_secrets(value: Any, depth: int = 0) -> bool:
    """Whether a decoded message carries credentials: providers/set, or a key named for them anywhere."""
    if depth > 32:
        return True  # too deep to look through: not logged
    if isinstance(value, dict):
        items = cast(dict[Any, Any], value)
        if items.get("method") == "providers/set":
            return True
        return any(str(k).lower() in _SECRET_KEYS or _holds_secrets(v, depth + 1) for k, v in items.items())
    if isinstance(value, list):
        return any(_holds_secrets(v, depth + 1) for v in cast(list[Any], value))
    return False
