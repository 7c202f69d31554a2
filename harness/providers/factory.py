"""Build a provider by name, from explicit arguments only (the application resolves its configuration).

The providers, their classes and default base URLs are the records of ``harness.providers.registry``.
Nothing here reads the environment: the key and the URL are what the caller passes (a local server needs
no key). ``url_hint`` says, in the providers' error messages, how the user sets the URL.
"""

from __future__ import annotations

from typing import Any

from .._errors import HarnessUsageError
from ..model import Model
from . import registry
from ._http import HttpModel
from .model_info import ModelInfo

__all__ = ["build_model", "describe_models", "list_models"]


def build_model(
    provider: str,
    *,
    model: str,
    base_url: str | None = None,
    api_key: str | None = None,
    **kw: Any,
) -> HttpModel:
    """A provider by name (``base_url`` None: the provider's). Extra keywords go to the class
    (timeouts, ``url_hint``, ``continuation``…)."""
    spec = registry.get(provider)
    if spec is None:
        raise HarnessUsageError(f"unknown provider {provider!r}; choose one of {', '.join(registry.names())}")
    if not model:
        raise HarnessUsageError("a model name is needed")
    url = (base_url or spec.default_url).rstrip("/")
    built = spec.model_factory()(url, model, api_key or None, **kw)
    _: Model = built  # every provider's class implements the protocol
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
