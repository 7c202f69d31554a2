"""Build a provider from the agent's settings: ``--provider``, ``--base-url``, ``--model`` and keys.

| provider           | class                   | base URL default (or ``OPENAI_BASE_URL``)     | key, first set wins                      |
|--------------------|-------------------------|-----------------------------------------------|------------------------------------------|
| ``openai``           | ``ChatCompletions``       | ``https://api.openai.com/v1``                   | ACP_AGENT_API_KEY, OPENAI_API_KEY        |
| ``openai-responses`` | ``Responses``             | ``https://api.openai.com/v1``                   | ACP_AGENT_API_KEY, OPENAI_API_KEY        |
| ``anthropic``        | ``Messages``              | ``https://api.anthropic.com`` (no ``/v1``)        | ACP_AGENT_API_KEY, ANTHROPIC_API_KEY     |

An explicit ``base_url``/``api_key`` wins over the environment. A local server needs no key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import HarnessUsageError
from ..model import Model
from .anthropic import Messages
from .openai import ChatCompletions, Responses

__all__ = ["PROVIDERS", "ProviderSettings", "build_model", "list_models", "resolve"]

PROVIDERS = ("openai", "openai-responses", "anthropic")
OPENAI_URL = "https://api.openai.com/v1"
ANTHROPIC_URL = "https://api.anthropic.com"


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    provider: str
    base_url: str
    api_key: str | None
    url_env: str

    def __repr__(self) -> str:
        key = "set" if self.api_key else "unset"
        return f"ProviderSettings({self.provider!r}, base_url={self.base_url!r}, api_key={key})"


def resolve(
    provider: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ProviderSettings:
    """Settings from the arguments, then the environment, then the defaults."""
    env = os.environ if env is None else env
    if provider not in PROVIDERS:
        raise HarnessUsageError(f"unknown provider {provider!r}; choose one of {', '.join(PROVIDERS)}")
    if provider == "anthropic":
        url = base_url or ANTHROPIC_URL
        key = api_key or env.get("ACP_AGENT_API_KEY") or env.get("ANTHROPIC_API_KEY")
        url_env = "--base-url"
    else:
        url = base_url or env.get("OPENAI_BASE_URL") or OPENAI_URL
        key = api_key or env.get("ACP_AGENT_API_KEY") or env.get("OPENAI_API_KEY")
        url_env = "--base-url or OPENAI_BASE_URL"
    return ProviderSettings(provider, url.rstrip("/"), key or None, url_env)


def build_model(
    provider: str,
    *,
    model: str,
    base_url: str | None = None,
    api_key: str | None = None,
    env: Mapping[str, str] | None = None,
    **kw: Any,
) -> ChatCompletions | Responses | Messages:
    """A provider for ``--provider``. Extra keywords go to the class (timeouts, ``continuation``, …)."""
    if not model:
        raise HarnessUsageError("a model name is needed (--model)")
    s = resolve(provider, base_url=base_url, api_key=api_key, env=env)
    kw.setdefault("url_env", s.url_env)
    built: ChatCompletions | Responses | Messages
    if provider == "openai":
        built = ChatCompletions(s.base_url, model, s.api_key, **kw)
    elif provider == "openai-responses":
        built = Responses(s.base_url, model, s.api_key, **kw)
    else:
        built = Messages(s.base_url, model, s.api_key, **kw)
    _: Model = built  # the three implement the protocol
    return built


async def list_models(
    provider: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    env: Mapping[str, str] | None = None,
    **kw: Any,
) -> list[str]:
    """Model ids from the server's ``/models`` (``/v1/models`` for Anthropic); ``[]`` where it has none.

    Raises ``ModelError`` when the server cannot be reached or refuses the key.
    """
    m = build_model(provider, model="-", base_url=base_url, api_key=api_key, env=env, **kw)
    try:
        return await m.list_models()
    finally:
        await m.aclose()
