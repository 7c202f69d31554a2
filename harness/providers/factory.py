"""Build a provider by name, from explicit arguments only (the application resolves its configuration).

| provider             | class                 | default base URL                            |
|----------------------|-----------------------|---------------------------------------------|
| ``openai``           | ``ChatCompletions``   | ``https://api.openai.com/v1``               |
| ``openai-responses`` | ``Responses``         | ``https://api.openai.com/v1``               |
| ``anthropic``        | ``Messages``          | ``https://api.anthropic.com`` (no ``/v1``)  |

Nothing here reads the environment: the key and the URL are what the caller passes (a local server needs
no key). ``url_hint`` says, in the providers' error messages, how the user sets the URL.
"""

from __future__ import annotations

from typing import Any, Final

from .._errors import HarnessUsageError
from ..model import Model
from .anthropic import Messages
from .model_info import ModelInfo
from .openai import ChatCompletions, Responses

__all__ = ["DEFAULT_URLS", "PROVIDERS", "build_model", "describe_models", "list_models"]

PROVIDERS: Final = ("openai", "openai-responses", "anthropic")
OPENAI_URL: Final = "https://api.openai.com/v1"
ANTHROPIC_URL: Final = "https://api.anthropic.com"
DEFAULT_URLS: Final = {"openai": OPENAI_URL, "openai-responses": OPENAI_URL, "anthropic": ANTHROPIC_URL}


def build_model(
    provider: str,
    *,
    model: str,
    base_url: str | None = None,
    api_key: str | None = None,
    **kw: Any,
) -> ChatCompletions | Responses | Messages:
    """A provider by name (``base_url`` None: the provider's). Extra keywords go to the class
    (timeouts, ``url_hint``, ``continuation``…)."""
    if provider not in PROVIDERS:
        raise HarnessUsageError(f"unknown provider {provider!r}; choose one of {', '.join(PROVIDERS)}")
    if not model:
        raise HarnessUsageError("a model name is needed")
    url = (base_url or DEFAULT_URLS[provider]).rstrip("/")
    key = api_key or None
    built: ChatCompletions | Responses | Messages
    if provider == "openai":
        built = ChatCompletions(url, model, key, **kw)
    elif provider == "openai-responses":
        built = Responses(url, model, key, **kw)
    else:
        built = Messages(url, model, key, **kw)
    _: Model = built  # the three implement the protocol
    return built


async def list_models(
    provider: str, *, base_url: str | None = None, api_key: str | None = None, **kw: Any
) -> list[str]:
    """Model ids from the server's ``/models`` (``/v1/models`` for Anthropic); ``[]`` where it has none.

    Raises ``ModelError`` when the server cannot be reached or refuses the key.
    """
    m = build_model(provider, model="-", base_url=base_url, api_key=api_key, **kw)
    try:
        return await m.list_models()
    finally:
        await m.aclose()


async def describe_models(
    provider: str, *, base_url: str | None = None, api_key: str | None = None, **kw: Any
) -> list[ModelInfo]:
    """The server's models with what it says of each (``harness.providers.model_info``); ``[]`` where
    it has no model list. Raises ``ModelError`` when the server cannot be reached or refuses the key."""
    m = build_model(provider, model="-", base_url=base_url, api_key=api_key, **kw)
    try:
        return await m.describe_models()
    finally:
        await m.aclose()
