"""Model providers over HTTP: OpenAI Chat Completions and Responses, Anthropic Messages.

``registry`` holds one record per provider (``ProviderSpec``): what an application reads to name, configure
and offer them; a provider's class is an ``HttpModel``. ``build_model`` makes one by provider name from explicit arguments; ``RetryModel`` retries
rate-limited calls.

Importing this package loads none of it: each name is imported at its first use (PEP 562), so reading the
registry does not load the HTTP client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._clients import keep_idle_clients
    from ._http import HttpModel
    from .anthropic import Messages
    from .factory import build_model, list_models
    from .openai import ChatCompletions, Responses
    from .registry import ProviderSpec
    from .retry import RetryModel

_LAZY: dict[str, str] = {
    "ChatCompletions": ".openai",
    "HttpModel": "._http",
    "Messages": ".anthropic",
    "ProviderSpec": ".registry",
    "Responses": ".openai",
    "RetryModel": ".retry",
    "build_model": ".factory",
    "keep_idle_clients": "._clients",
    "list_models": ".factory",
}


__all__ = [
    "ChatCompletions",
    "HttpModel",
    "Messages",
    "ProviderSpec",
    "Responses",
    "RetryModel",
    "build_model",
    "keep_idle_clients",
    "list_models",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
