"""Model providers over HTTP: OpenAI Chat Completions and Responses, Anthropic Messages.

``registry`` holds one record per provider (``ProviderSpec``): what an application reads to name, configure
and offer them; a provider's class is an ``HttpModel``. ``build_model`` makes one by provider name from explicit arguments; ``RetryModel`` retries
rate-limited calls.

Importing this package loads none of it: each name is imported at its first use (PEP 562), so reading the
registry does not load the HTTP client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from ._clients import keep_idle_clients
    from ._http import HttpModel
    from .anthropic import Messages
    from .factory import build_model, list_models
    from .openai import ChatCompletions, Responses
    from .registry import ProviderSpec
    from .retry import RetryModel

__getattr__ = lazy_exports(
    __name__,
    {
        ".openai": ("ChatCompletions", "Responses"),
        "._http": ("HttpModel",),
        ".anthropic": ("Messages",),
        ".registry": ("ProviderSpec",),
        ".retry": ("RetryModel",),
        ".factory": ("build_model", "list_models"),
        "._clients": ("keep_idle_clients",),
    },
)


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
