"""What a server's model list says of each model: context window, output limit, reasoning, images.

Each server says it its own way (the fields below are the ones their documentation and code send):

- vLLM, ``GET /v1/models``: ``max_model_len`` on each entry (``owned_by: "vllm"``), the window it serves.
- llama.cpp, ``GET /v1/models``: ``meta.n_ctx_train`` (what the model was trained for, ``owned_by:
  "llamacpp"``); the window it really runs is ``GET /props`` ``default_generation_settings.n_ctx`` (the
  ``--ctx-size`` per slot), which wins; ``modalities.vision`` says whether it takes images.
- OpenRouter, ``GET /api/v1/models``: ``context_length``, ``top_provider.max_completion_tokens``,
  ``architecture.input_modalities`` (``"image"``), ``supported_parameters`` (``"reasoning"``).
- Anthropic, ``GET /v1/models``: ``max_input_tokens`` and ``max_tokens``.
- LiteLLM's proxy: its ``/v1/models`` entries say nothing; ``GET /v1/model/info`` does:
  ``data[].model_name`` with ``model_info.max_input_tokens`` / ``max_output_tokens`` / ``supports_vision``
  / ``supports_reasoning``.
- Ollama: its OpenAI list says nothing (``owned_by: "library"`` for library models); ``POST /api/show``
  gives ``model_info."<arch>.context_length"`` (what the model supports), ``parameters`` (a Modelfile's
  ``num_ctx``, the window it runs at) and ``capabilities`` (``vision``, ``thinking``); ``GET /api/ps``
  gives a loaded model's ``context_length`` (the window it runs at now). Without either, Ollama runs a
  model at its small default (``OLLAMA_CONTEXT_LENGTH``, 4096 on most machines) and drops what does not
  fit silently: ``ModelInfo.default_window`` says so.

Recognising the server: the list's own fields (``max_model_len``, ``meta``, ``owned_by``); for a list that
says nothing, ``/v1/model/info`` answering LiteLLM's shape, then ``/api/version`` answering Ollama's
(never for the hosted APIs, whose lists or the built-in table say enough).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Final, Protocol
from urllib.parse import urlsplit

import anyio

from .._errors import ModelError
from ..model_info import SERVERS, ModelInfo, per_token_prices, positive
from ._common import obj

if TYPE_CHECKING:
    from ._clients import HttpConfig

__all__ = ["SERVERS", "ModelInfo", "ServerEndpoint", "describe_models", "parse_model_list"]

log = logging.getLogger(__name__)

_HOSTED: Final = ("api.openai.com", "api.anthropic.com", "openrouter.ai")
_OLLAMA_SHOW_AT_MOST: Final = 32
_PROBE_TIMEOUT_S: Final = 10.0
_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


class ServerEndpoint(Protocol):
    """What describing a server's models uses of its endpoint (``_http.Endpoint``: its model imports this
    module for ``describe_models``)."""

    @property
    def base_url(self) -> str: ...

    @property
    def http(self) -> HttpConfig: ...

    async def get_json(self, path: str, headers: Mapping[str, str]) -> Any:
        """``GET path``'s JSON; ``ModelError`` when it fails."""
        ...


def _entry(e: Mapping[str, Any]) -> ModelInfo:
    ident = str(e["id"])
    owned = str(e.get("owned_by") or "")
    meta = obj(e.get("meta"))
    if positive(e.get("max_model_len")) is not None:
        return ModelInfo(ident, positive(e["max_model_len"]), source="vLLM max_model_len", server="vllm")
    if meta or owned == "llamacpp":
        trained = positive(meta.get("n_ctx_train"))
        return ModelInfo(
            ident, trained, source="llama.cpp meta.n_ctx_train", server="llama.cpp", trained_window=trained
        )
    if positive(e.get("context_length")) is not None:
        arch = obj(e.get("architecture"))
        top = obj(e.get("top_provider"))
        modalities: Any = arch.get("input_modalities")
        params: Any = e.get("supported_parameters")
        is_router = bool(arch or top)
        return ModelInfo(
            ident,
            positive(e["context_length"]),
            positive(top.get("max_completion_tokens")),
            ("reasoning" in params) if isinstance(params, list) else None,
            ("image" in modalities) if isinstance(modalities, list) else None,
            source=f"{'OpenRouter ' if is_router else ''}context_length",
            server="openrouter" if is_router else None,
            prices=_openrouter_prices(obj(e.get("pricing"))),
        )
    if positive(e.get("max_input_tokens")) is not None:
        return ModelInfo(
            ident,
            positive(e["max_input_tokens"]),
            positive(e.get("max_tokens")),
            source="max_input_tokens",
            server="anthropic" if e.get("type") == "model" else None,
        )
    for key in ("context_window", "max_context_length"):
        if positive(e.get(key)) is not None:
            return ModelInfo(ident, positive(e[key]), source=key)
    return ModelInfo(ident, server="ollama" if owned == "library" else None)


def _openrouter_prices(
    pricing: Mapping[str, Any],
) -> tuple[float | None, float | None, float | None, float | None] | None:
    """OpenRouter's ``pricing`` (USD per token, as strings): prompt, completion, cache read and write."""
    return per_token_prices(
        pricing.get("prompt"),
        pricing.get("completion"),
        pricing.get("input_cache_read"),
        pricing.get("input_cache_write"),
    )


def parse_model_list(body: Any) -> list[ModelInfo]:
    """The entries of an OpenAI-style model list (``{"data": [...]}``) with what each says of itself."""
    data: Any = obj(body).get("data")
    if not isinstance(data, list):
        return []
    items: list[Any] = data  # pyright: ignore[reportUnknownVariableType]
    return [_entry(obj(m)) for m in items if obj(m).get("id")]


# --- asking the server more -------------------------------------------------------------------------


async def _json(ep: ServerEndpoint, url: str, headers: Mapping[str, str], body: Any = None) -> Any:
    """GET (or POST ``body``) ``url``; its JSON, or None when it fails in any way (a probe, not a call)."""
    import httpx2

    try:
        client = await ep.http.client()
        if body is None:
            response = await client.get(url, headers=dict(headers))
        else:
            response = await client.post(url, json=body, headers=dict(headers))
        if response.status_code >= 400:
            return None
        return response.json()
    except (httpx2.HTTPError, ValueError) as exc:
        log.debug("probing %s failed: %s", url, type(exc).__name__)
        return None


def _root(base_url: str) -> str:
    return re.sub(r"/(api/)?v1$", "", base_url)


async def _llamacpp(
    ep: ServerEndpoint, headers: Mapping[str, str], infos: list[ModelInfo]
) -> list[ModelInfo]:
    props = obj(await _json(ep, _root(ep.base_url) + "/props", headers))
    settings = obj(props.get("default_generation_settings"))
    n_ctx = positive(settings.get("n_ctx")) or positive(props.get("n_ctx"))
    vision: Any = obj(props.get("modalities")).get("vision")
    images = vision if isinstance(vision, bool) else None
    out: list[ModelInfo] = []
    for info in infos:
        if n_ctx is not None:
            info = replace(info, context_window=n_ctx, source="llama.cpp /props n_ctx")
        out.append(replace(info, images=images if info.images is None else info.images))
    return out


def _ollama_facts(info: ModelInfo, show: Mapping[str, Any], running: int | None) -> ModelInfo:
    model_info = obj(show.get("model_info"))
    arch = str(model_info.get("general.architecture") or "")
    trained = positive(model_info.get(f"{arch}.context_length")) if arch else None
    match = _NUM_CTX.search(str(show.get("parameters") or ""))
    num_ctx = int(match.group(1)) if match else None
    caps: Any = show.get("capabilities")
    capabilities: list[Any] = caps if isinstance(caps, list) else []  # pyright: ignore[reportUnknownVariableType]
    known = bool(capabilities)
    window, source = (
        (running, "Ollama /api/ps context_length")
        if running is not None
        else (num_ctx, "Ollama Modelfile num_ctx")
        if num_ctx is not None
        else (None, "")
    )
    return replace(
        info,
        context_window=window,
        source=source,
        server="ollama",
        trained_window=trained,
        default_window=window is None,
        images=("vision" in capabilities) if known else None,
        reasoning=("thinking" in capabilities) if known else None,
    )


async def _ollama(ep: ServerEndpoint, headers: Mapping[str, str], infos: list[ModelInfo]) -> list[ModelInfo]:
    root = _root(ep.base_url)
    running: dict[str, int] = {}
    for m in _list(obj(await _json(ep, root + "/api/ps", headers)).get("models")):
        size = positive(obj(m).get("context_length"))
        if size is not None:
            running[str(obj(m).get("name") or obj(m).get("model"))] = size
    shows: dict[str, dict[str, Any]] = {}
    limiter = anyio.CapacityLimiter(4)

    async def show(ident: str) -> None:
        async with limiter:
            shows[ident] = obj(await _json(ep, root + "/api/show", headers, {"model": ident}))

    async with anyio.create_task_group() as tg:
        for info in infos[:_OLLAMA_SHOW_AT_MOST]:
            tg.start_soon(show, info.id)
    return [
        _ollama_facts(i, shows[i.id], running.get(i.id)) if i.id in shows else replace(i, server="ollama")
        for i in infos
    ]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []  # pyright: ignore[reportUnknownVariableType]


def _litellm(body: Any, infos: list[ModelInfo]) -> list[ModelInfo] | None:
    """The facts of LiteLLM's ``/model/info`` answer, None when the answer is not LiteLLM's."""
    entries = [obj(e) for e in _list(obj(body).get("data"))]
    by_name: dict[str, dict[str, Any]] = {}
    for e in entries:
        if isinstance(e.get("model_name"), str) and "model_info" in e:
            by_name.setdefault(str(e["model_name"]), obj(e.get("model_info")))
    if not by_name:
        return None

    def flag(info: Mapping[str, Any], key: str) -> bool | None:
        value = info.get(key)
        return value if isinstance(value, bool) else None

    out: list[ModelInfo] = []
    for info in infos:
        mi = by_name.get(info.id)
        if mi is None:
            out.append(replace(info, server="litellm"))
            continue
        window = positive(mi.get("max_input_tokens")) or positive(mi.get("max_tokens"))
        out.append(
            ModelInfo(
                info.id,
                window,
                positive(mi.get("max_output_tokens")),
                flag(mi, "supports_reasoning"),
                flag(mi, "supports_vision"),
                source="LiteLLM model_info.max_input_tokens" if window else "",
                server="litellm",
                prices=per_token_prices(
                    mi.get("input_cost_per_token"),
                    mi.get("output_cost_per_token"),
                    mi.get("cache_read_input_token_cost"),
                    mi.get("cache_creation_input_token_cost"),
                ),
            )
        )
    return out


async def _probe(ep: ServerEndpoint, headers: Mapping[str, str], infos: list[ModelInfo]) -> list[ModelInfo]:
    servers = {i.server for i in infos}
    if "llama.cpp" in servers:
        return await _llamacpp(ep, headers, infos)
    if "ollama" in servers:
        return await _ollama(ep, headers, infos)
    if servers - {None} or any(i.context_window for i in infos):
        return infos  # the list said enough
    if (urlsplit(ep.base_url).hostname or "") in _HOSTED:
        return infos
    litellm = _litellm(await _json(ep, ep.base_url + "/model/info", headers), infos)
    if litellm is not None:
        return litellm
    version = obj(await _json(ep, _root(ep.base_url) + "/api/version", headers)).get("version")
    if isinstance(version, str):
        return await _ollama(ep, headers, infos)
    return infos


async def describe_models(ep: ServerEndpoint, headers: Mapping[str, str], path: str) -> list[ModelInfo]:
    """The server's models (``GET path``) and what it says of each, asking it more where its list is
    silent (see the module docstring); ``[]`` when it has no model list. Raises ``ModelError`` when the
    list cannot be had (unreachable, the key refused)."""
    try:
        body = await ep.get_json(path, headers)
    except ModelError as exc:
        if "not found" in exc.message:
            return []
        raise
    infos = parse_model_list(body)
    if not infos:
        return infos
    with anyio.move_on_after(_PROBE_TIMEOUT_S):
        return await _probe(ep, headers, infos)
    return infos
