"""JSON-RPC / ACP error codes, the `RpcError` exception, and the one mapping from any exception to the
error object sent on the wire (`error_from_exception`).

Mapping rules:
- `RpcError` -> itself;
- `pydantic.ValidationError` -> `-32602` with a short message naming the first bad field
  (`invalid params: sessionId: field required`), never a pydantic dump or URL;
- anything else -> `-32603` `internal error`; the traceback goes to the log only.

This module does not import pydantic (it is checked for lazily).
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Final, cast

__all__ = [
    "AUTH_REQUIRED",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "RESOURCE_NOT_FOUND",
    "ConnectionClosedError",
    "RpcError",
    "error_from_exception",
]

_log = logging.getLogger("acp_agent.protocol")

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
REQUEST_CANCELLED: Final = -32800
AUTH_REQUIRED: Final = -32000
RESOURCE_NOT_FOUND: Final = -32002


class RpcError(Exception):
    """A JSON-RPC error: raise it from a handler to answer with this error, or catch it from
    `Connection.request` when the peer answered with an error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def __repr__(self) -> str:
        return f"RpcError({self.code}, {self.message!r}, data={self.data!r})"

    def to_dict(self) -> dict[str, Any]:
        """The JSON-RPC `error` member."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_dict(cls, error: Any) -> RpcError:
        """Build from a peer's `error` member; tolerates malformed ones."""
        if isinstance(error, dict):
            fields = cast(dict[str, Any], error)
            code = fields.get("code")
            message = fields.get("message")
            data = fields.get("data")
            return cls(
                code if isinstance(code, int) and not isinstance(code, bool) else INTERNAL_ERROR,
                message if isinstance(message, str) else "unknown error",
                data,
            )
        return cls(INTERNAL_ERROR, "malformed error response", error)

    @classmethod
    def parse_error(cls, message: str = "parse error") -> RpcError:
        return cls(PARSE_ERROR, message)

    @classmethod
    def invalid_request(cls, message: str = "invalid request") -> RpcError:
        return cls(INVALID_REQUEST, message)

    @classmethod
    def method_not_found(cls, method: str) -> RpcError:
        return cls(METHOD_NOT_FOUND, f"method not found: {method}", {"method": method})

    @classmethod
    def invalid_params(cls, message: str, data: Any = None) -> RpcError:
        return cls(INVALID_PARAMS, message, data)

    @classmethod
    def internal_error(cls, message: str = "internal error") -> RpcError:
        return cls(INTERNAL_ERROR, message)

    @classmethod
    def request_cancelled(cls, message: str = "request cancelled") -> RpcError:
        return cls(REQUEST_CANCELLED, message)

    @classmethod
    def auth_required(cls, message: str = "Authentication required") -> RpcError:
        """`-32000`; Zed opens its auth UI on it (and shows any other message as the description)."""
        return cls(AUTH_REQUIRED, message)

    @classmethod
    def not_found(cls, message: str = "resource not found", *, uri: str | None = None) -> RpcError:
        """`-32002`, also used for unknown session ids."""
        return cls(RESOURCE_NOT_FOUND, message, {"uri": uri} if uri is not None else None)


class ConnectionClosedError(RpcError):
    """Raised by `Connection.request` when the connection ended before the peer answered."""

    def __init__(self, message: str = "connection closed") -> None:
        super().__init__(INTERNAL_ERROR, message)


_OBJECT_TYPES: Final = frozenset({"model_type", "model_attributes_type", "dict_type"})
_MAX_MESSAGE: Final = 300


def _short_validation_message(exc: Any) -> str:
    errors: list[dict[str, Any]] = exc.errors(include_url=False, include_input=False, include_context=False)
    if not errors:
        return "invalid params"
    first = errors[0]
    loc = ".".join(str(part) for part in first.get("loc", ()))
    kind = first.get("type", "")
    if kind == "missing":
        text = "field required"
    elif kind in _OBJECT_TYPES:
        text = "expected an object"
    else:
        text = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
        text = text[:1].lower() + text[1:]
    message = f"invalid params: {loc}: {text}" if loc else f"invalid params: {text}"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more)"
    return message[:_MAX_MESSAGE]


def _single_leaf(exc: BaseException) -> BaseException:
    """Unwrap exception groups holding exactly one exception (task groups wrap handler errors)."""
    leaf: BaseException = exc
    while isinstance(leaf, BaseExceptionGroup):
        inner = cast(tuple[BaseException, ...], leaf.exceptions)
        if len(inner) != 1:
            break
        leaf = inner[0]
    return leaf  # pyright: ignore[reportUnknownVariableType]


def error_from_exception(exc: BaseException) -> RpcError:
    """Map any exception raised while handling a request to the error to answer with."""
    leaf = _single_leaf(exc)
    if isinstance(leaf, RpcError):
        return leaf
    pydantic_core = sys.modules.get("pydantic_core")
    if pydantic_core is not None and isinstance(leaf, pydantic_core.ValidationError):
        return RpcError(INVALID_PARAMS, _short_validation_message(leaf))
    _log.error("internal error while handling a request", exc_info=leaf)
    return RpcError(INTERNAL_ERROR, "internal error")
