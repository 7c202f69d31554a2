"""Client-routed providers (UNSTABLE, ``agentCapabilities.providers``; RFD ``custom-llm-endpoint``):
``providers/list``, ``providers/set`` and ``providers/disable``.

This agent has one provider, ``main``: the configured model's endpoint (none with the ``script``
provider, which has no endpoint). It is ``required`` (the agent cannot work without it), so
``providers/disable`` refuses it with ``invalid_params``; an unknown id disables nothing and succeeds, as
the RFD says. With a ``small_model`` configured there is a second, ``small`` (``required: false``): the
side model's endpoint (main's unless routed); disabled, side work runs on the main model, and
``providers/set small`` enables it again on its route. ``providers/set`` replaces its protocol (``openai``: Chat Completions, or the Responses API
when that is what is configured; ``anthropic``: Messages), base URL and headers for the connection only:
``ProviderRoutes`` is held by the agent, never written anywhere, and every model this connection built
(the agent's, each session's, ``/model``'s) takes the route from its next request (``RoutedModel``).

What it trusts: the client chose the route, so the user's configured API key goes only where the user
configured it: to the same origin with the same protocol. A route elsewhere gets the client's headers
alone. The headers are secrets: never logged (the connection's debug log masks them), never stored,
never echoed (``providers/list`` says the protocol and a base URL without credentials or query).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

import anyio.to_thread

from ..model_setup import URL_HINT
from ..protocol.errors import RpcError
from ..protocol.models import ListProvidersResponse, ProviderCurrentConfig, ProviderInfo
from . import _harness

if TYPE_CHECKING:
    from harness import Model
    from harness.model import Delta, Prompt

    from ..model_setup import ModelSettings
    from ..protocol.connection import RequestContext
    from ..protocol.models import DisableProviderRequest, ListProvidersResponse, SetProviderRequest

__all__ = [
    "PROVIDER_ID",
    "SMALL_ID",
    "ProviderOwner",
    "ProviderRoutes",
    "RoutedModel",
    "disable_provider",
    "list_providers",
    "set_provider",
]

log = logging.getLogger(__name__)

PROVIDER_ID: Final = "main"
SMALL_ID: Final = "small"
"""The side model (``small_model``), optional: disabled, side work runs on ``main``."""


def _protocols() -> tuple[str, ...]:
    """The ACP ``LlmProtocol``s a route may take: those of the registry's providers."""
    return tuple(dict.fromkeys(spec.protocol for spec in _harness.registry.specs()))


def protocol_of(provider: str) -> str:
    """The ACP ``LlmProtocol`` of one of our HTTP providers."""
    spec = _harness.registry.get(provider)
    return spec.protocol if spec is not None else "openai"


@dataclass(frozen=True, slots=True)
class Route:
    api_type: str
    base_url: str
    headers: Mapping[str, str] = field(default_factory=dict[str, str], repr=False)


def route_secrets(route: Route) -> list[str]:
    """The credentials a route carries, by value: every header value, the user name and password of its
    URL and every query and fragment value (``?token=``, ``key=``), each also percent-decoded."""
    parts = urlsplit(route.base_url)
    raw = [*route.headers.values(), *parts.netloc.rpartition("@")[0].split(":", 1)]
    for part in (parts.query, parts.fragment):
        raw += [value for _name, value in parse_qsl(part, keep_blank_values=False)]
        raw += [piece.partition("=")[2] for piece in part.split("&")]
    return [form for value in raw if value for form in {value, unquote(value)}]


class ProviderRoutes:
    """The connection's routes by provider id (absent: as configured); ``versions`` count the changes;
    ``disabled``: the optional providers the client turned off (``small``: side work on ``main``).
    ``learn`` (the process's ``Secrets.add`` values, set by ``serve_stdio``) is told each route's
    credentials before anything can log them."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.versions: dict[str, int] = {}
        self.disabled: set[str] = set()
        self.learn: Callable[[list[str]], None] | None = None

    @property
    def route(self) -> Route | None:
        """``main``'s route."""
        return self.routes.get(PROVIDER_ID)

    @property
    def version(self) -> int:
        return self.versions.get(PROVIDER_ID, 0)

    def set(self, route: Route, provider_id: str = PROVIDER_ID) -> None:
        if self.learn is not None:
            self.learn(route_secrets(route))
        self.routes[provider_id] = route
        self.versions[provider_id] = self.versions.get(provider_id, 0) + 1
        self.disabled.discard(provider_id)

    def model(self, built: Model, settings: ModelSettings, provider_id: str = PROVIDER_ID) -> Model:
        """``built`` (from ``settings``), following this connection's route for ``provider_id`` from its
        next request."""
        if not settings.http:
            return built
        return RoutedModel(built, settings, self, provider_id)


class ProviderOwner(Protocol):
    """What the ``providers/*`` handlers use of the agent: its routes and the configured model's settings."""

    @property
    def routes(self) -> ProviderRoutes: ...

    @property
    def settings(self) -> ModelSettings: ...


class RoutedModel:
    """A model that is rebuilt on the route when the route changed since it was built."""

    def __init__(
        self, built: Model, settings: ModelSettings, routes: ProviderRoutes, provider_id: str = PROVIDER_ID
    ) -> None:
        self._model = built
        self._settings = settings
        self._routes = routes
        self._id = provider_id
        self._version = 0

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        if self._routes.versions.get(self._id, 0) == self._version:
            return self._model.stream(prompt)  # the hot path: no layer of ours while nothing changed
        return self._rerouted(prompt)

    async def _rerouted(self, prompt: Prompt) -> AsyncIterator[Delta]:
        routes = self._routes
        version, route = routes.versions.get(self._id, 0), routes.routes.get(self._id)
        if version != self._version and route is not None:
            self._model = await anyio.to_thread.run_sync(_build, self._settings, route)
            self._version = version
        inner = self._model.stream(prompt)
        try:
            async for delta in inner:
                yield delta
        finally:
            await _harness.close_stream(inner)


def _build(settings: ModelSettings, route: Route) -> Model:
    configured = str(settings.provider)
    provider = configured if protocol_of(configured) == route.api_type else _provider_for(route.api_type)
    spec = _harness.registry.get(configured)
    own = _origin(settings.base_url or (spec.default_url if spec is not None else ""))
    key = settings.api_key if provider == configured and _origin(route.base_url) == own else None
    log.info(
        "provider %s: routed by the client to %s (%s)", PROVIDER_ID, _shown_url(route.base_url), provider
    )
    return _harness.build_model(
        provider,
        model=str(settings.model),
        base_url=route.base_url,
        api_key=key,
        headers=dict(route.headers),
        url_hint=URL_HINT,
    )


def _provider_for(api_type: str) -> str:
    """The provider a route of ``api_type`` is built with: the first registered for that protocol."""
    spec = _harness.registry.by_protocol(api_type)
    return spec.name if spec is not None else "openai"


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme.lower(), (parts.hostname or "").lower(), parts.port


def _shown_url(url: str) -> str:
    """``url`` without credentials, query or fragment (what may be shown and logged)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


# --- the methods ------------------------------------------------------------------------------------


def _configured(agent: ProviderOwner) -> str | None:
    provider = agent.settings.provider
    return provider if agent.settings.http else None


async def list_providers(agent: ProviderOwner, req: Any, ctx: RequestContext) -> ListProvidersResponse:
    provider = _configured(agent)
    if provider is None:
        return ListProvidersResponse(providers=[])
    route = agent.routes.route
    if route is not None:
        current = ProviderCurrentConfig(api_type=route.api_type, base_url=_shown_url(route.base_url))
    else:
        spec = _harness.registry.get(provider)
        url = agent.settings.base_url or (spec.default_url if spec is not None else "")
        current = ProviderCurrentConfig(api_type=protocol_of(provider), base_url=_shown_url(url))
    supported = list(_protocols())
    info = ProviderInfo(provider_id=PROVIDER_ID, supported=supported, required=True, current=current)
    providers = [info]
    if agent.settings.small_model:  # the side model: as main's endpoint unless routed; disabled: null
        small = agent.routes.routes.get(SMALL_ID)
        if SMALL_ID in agent.routes.disabled:
            small_current = None
        elif small is not None:
            small_current = ProviderCurrentConfig(
                api_type=small.api_type, base_url=_shown_url(small.base_url)
            )
        else:
            small_current = current
        providers.append(
            ProviderInfo(
                provider_id=SMALL_ID, supported=list(supported), required=False, current=small_current
            )
        )
    return ListProvidersResponse(providers=providers)


async def set_provider(agent: ProviderOwner, req: SetProviderRequest, ctx: RequestContext) -> dict[str, Any]:
    if _configured(agent) is None or req.provider_id not in _ids(agent):
        raise RpcError.invalid_params(f"invalid params: providerId: unknown provider {req.provider_id!r}")
    protocols = _protocols()
    if req.api_type not in protocols:
        raise RpcError.invalid_params(
            f"invalid params: apiType: {req.api_type!r} is not supported; one of {', '.join(protocols)}"
        )
    if urlsplit(req.base_url).scheme not in ("http", "https") or not urlsplit(req.base_url).hostname:
        raise RpcError.invalid_params("invalid params: baseUrl: an http:// or https:// URL is needed")
    agent.routes.set(Route(req.api_type, req.base_url, dict(req.headers)), req.provider_id)
    return {}


async def disable_provider(
    agent: ProviderOwner, req: DisableProviderRequest, ctx: RequestContext
) -> dict[str, Any]:
    if req.provider_id == PROVIDER_ID and _configured(agent) is not None:
        raise RpcError.invalid_params(
            f"invalid params: providerId: {PROVIDER_ID!r} is required: the agent has no other model"
        )
    if req.provider_id == SMALL_ID and req.provider_id in _ids(agent):
        agent.routes.disabled.add(SMALL_ID)  # side work runs on main from the next request
    return {}  # an unknown provider: nothing to disable (idempotent, as the RFD says)


def _ids(agent: ProviderOwner) -> tuple[str, ...]:
    return (PROVIDER_ID, SMALL_ID) if agent.settings.small_model else (PROVIDER_ID,)
