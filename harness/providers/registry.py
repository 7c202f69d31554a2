"""The model providers, one record each (``ProviderSpec``): what every part of an application that names a
provider reads (its configuration's choices and variables, its set-up menu, its model lists, its thought
levels) and what ``harness.providers.factory.build_model`` builds from.

Adding a provider is a record here and the provider's own module: ``register(ProviderSpec(...))`` at run
time does the same (a plug-in, a test). Every provider here is reached over HTTP; an application's own
test providers (``script``) are not.

Standard library only, and the provider classes are named, not imported: an application reads this while it
resolves its configuration, before the HTTP client is loaded.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from ._http import HttpModel

__all__ = [
    "ProviderSpec",
    "by_protocol",
    "get",
    "key_variables",
    "names",
    "register",
    "specs",
    "unregister",
]

Wire = Literal["openai", "anthropic"]
"""The API families: OpenAI-compatible (Chat Completions, Responses) and Anthropic Messages."""
Factory = Callable[..., "HttpModel"]
"""``factory(base_url, model, api_key, **options)``: the provider's model (its class, an ``HttpModel``)."""


def _levels(**knobs: Mapping[str, Any]) -> Mapping[str, Mapping[str, Any]]:
    return MappingProxyType({"off": {}, **knobs})


# Without slots, eq or hash: building this class is on the path to an application's first answer.
@dataclass(frozen=True, eq=False)
class ProviderSpec:
    """One provider. ``name`` is what a configuration says (``provider = "openai"``).

    - ``factory``: the model class, as ``"module:Class"`` (imported at the first build: it loads the HTTP
      client) or a callable; called as ``factory(base_url, model, api_key, **options)``;
    - ``default_url``: the base URL when none is configured;
    - ``key_env``: the provider's own API-key variable (a secret for every application; None: none);
    - ``url_env``: a base-URL variable other tools share (``OPENAI_BASE_URL``), read after the config files;
    - ``protocol``: its API family (``Wire``): what an application may route it by (an endpoint speaking
      the same family) and the ``Options.provider`` key its knobs go under;
    - ``thinking``: the thought levels it offers, each with the ``Options.provider`` knobs that select it
      (empty: it offers none);
    - ``label`` and ``setup_rank``: its line in an interactive set-up's menu (lowest rank first)."""

    name: str
    label: str
    factory: str | Factory
    default_url: str
    key_env: str | None = None
    url_env: str | None = None
    protocol: Wire = "openai"
    thinking: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))
    setup_rank: int = 100

    def model_factory(self) -> Factory:
        """The callable that builds the model (importing the provider's module the first time)."""
        if not isinstance(self.factory, str):
            return self.factory
        module, _, attribute = self.factory.partition(":")
        built: Factory = getattr(importlib.import_module(module), attribute)
        return built


_OPENAI_URL: Final = "https://api.openai.com/v1"

_REGISTRY: dict[str, ProviderSpec] = {
    spec.name: spec
    for spec in (
        ProviderSpec(
            "openai",
            "OpenAI (Chat Completions)",
            "harness.providers.openai:ChatCompletions",
            _OPENAI_URL,
            key_env="OPENAI_API_KEY",
            url_env="OPENAI_BASE_URL",
            thinking=_levels(
                low={"reasoning_effort": "low"},
                medium={"reasoning_effort": "medium"},
                high={"reasoning_effort": "high"},
            ),
            setup_rank=1,
        ),
        ProviderSpec(
            "openai-responses",
            "OpenAI (Responses API)",
            "harness.providers.openai_responses:Responses",
            _OPENAI_URL,
            key_env="OPENAI_API_KEY",
            url_env="OPENAI_BASE_URL",
            thinking=_levels(
                low={"reasoning": {"effort": "low"}},
                medium={"reasoning": {"effort": "medium"}},
                high={"reasoning": {"effort": "high"}},
            ),
            setup_rank=2,
        ),
        ProviderSpec(
            "anthropic",
            "Anthropic (Claude)",
            "harness.providers.anthropic:Messages",
            "https://api.anthropic.com",  # no /v1: the class adds it
            key_env="ANTHROPIC_API_KEY",
            protocol="anthropic",
            thinking=_levels(
                low={"thinking": {"type": "enabled", "budget_tokens": 2048}},
                medium={"thinking": {"type": "enabled", "budget_tokens": 8192}},
                high={"thinking": {"type": "enabled", "budget_tokens": 24576}},
            ),
            setup_rank=0,
        ),
    )
}


def get(name: str | None) -> ProviderSpec | None:
    """The provider called ``name``; None when there is none (or ``name`` is None)."""
    return _REGISTRY.get(name) if name is not None else None


def names() -> tuple[str, ...]:
    """The providers' names, in registration order."""
    return tuple(_REGISTRY)


def specs() -> tuple[ProviderSpec, ...]:
    return tuple(_REGISTRY.values())


def by_protocol(protocol: str) -> ProviderSpec | None:
    """The first provider registered for ``protocol`` (the one a client's route of that type is built with)."""
    return next((s for s in _REGISTRY.values() if s.protocol == protocol), None)


def key_variables() -> tuple[str, ...]:
    """The providers' own API-key variables, each once."""
    return tuple(dict.fromkeys(s.key_env for s in _REGISTRY.values() if s.key_env))


def register(spec: ProviderSpec) -> None:
    """Add a provider; a name already registered is refused (``unregister`` it first)."""
    if spec.name in _REGISTRY:
        raise ValueError(f"a provider named {spec.name!r} is registered already")
    _REGISTRY[spec.name] = spec


def unregister(name: str) -> ProviderSpec | None:
    """Remove the provider called ``name``; the record removed, or None when there was none."""
    return _REGISTRY.pop(name, None)
