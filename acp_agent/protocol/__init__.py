"""The ACP wire layer: JSON-RPC connection, error mapping, stdio streams and (lazily) the pydantic models.

`import acp_agent.protocol` does not import pydantic: the models (`acp_agent.protocol.models`, also
reachable as attributes of this package, e.g. `acp_agent.protocol.PromptRequest`) load on first access.
This package never imports `harness`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .connection import Connection, Handler, RequestContext, RequestId
from .errors import (
    AUTH_REQUIRED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    RESOURCE_NOT_FOUND,
    ConnectionClosedError,
    RpcError,
    error_from_exception,
)
from .handshake import ClientHandshake, parse_initialize

if TYPE_CHECKING:
    from . import models as models
    from .models import WireModel as WireModel
    from .models import dump as dump

__all__ = [
    "AUTH_REQUIRED",
    "ClientHandshake",
    "parse_initialize",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "REQUEST_CANCELLED",
    "RESOURCE_NOT_FOUND",
    "Connection",
    "ConnectionClosedError",
    "Handler",
    "RequestContext",
    "RequestId",
    "RpcError",
    "WireModel",
    "dump",
    "error_from_exception",
    "models",
]


def __getattr__(name: str) -> Any:
    # Lazy: the models cost pydantic's import (~60 ms) plus their class definitions.
    models = importlib.import_module(f"{__name__}.models")
    if name == "models":
        return models
    try:
        return getattr(models, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
