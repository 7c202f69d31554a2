"""What each server's model list says of its models, read from fake servers answering in their shapes."""

from __future__ import annotations

import anyio
import pytest

from acp_conformance.fake_model import FakeServer, Reply
from harness.providers.factory import describe_models
from harness.providers.model_info import ModelInfo, parse_model_list
from tests.providers.model_lists import (
    route_litellm,
    route_llamacpp,
    route_ollama,
    route_openrouter,
    route_vllm,
)
from tests.providers.provider_support import LIMIT_S

pytestmark = pytest.mark.anyio


async def _describe(server: FakeServer, base: str = "/v1", provider: str = "openai") -> list[ModelInfo]:
    with anyio.fail_after(LIMIT_S):
        return await describe_models(provider, base_url=server.url + base, api_key="k-123456")


async def test_vllm_max_model_len_is_the_window(server: FakeServer) -> None:
    route_vllm(server, "Qwen/Qwen3-Coder-30B", 40960)
    [info] = await _describe(server)
    assert (info.id, info.context_window, info.server) == ("Qwen/Qwen3-Coder-30B", 40960, "vllm")
    assert info.source == "vLLM max_model_len"
    assert [r.path for r in server.requests] == ["/v1/models"], "a list that says enough asks no more"


async def test_llamacpp_props_n_ctx_wins_over_the_trained_context(server: FakeServer) -> None:
    route_llamacpp(server, "qwen3-coder", n_ctx=65536, n_ctx_train=262144)
    [info] = await _describe(server)
    assert (info.context_window, info.trained_window, info.server) == (65536, 262144, "llama.cpp")
    assert info.source == "llama.cpp /props n_ctx" and info.images is False


async def test_llamacpp_without_props_falls_back_to_n_ctx_train(server: FakeServer) -> None:
    route_llamacpp(server, "qwen3-coder", n_ctx=None, n_ctx_train=32768)
    [info] = await _describe(server)
    assert (info.context_window, info.source) == (32768, "llama.cpp meta.n_ctx_train")


async def test_openrouter_context_length_and_completion_limit(server: FakeServer) -> None:
    route_openrouter(server, "qwen/qwen3-coder", 262144, 65536)
    [info] = await _describe(server, "/api/v1")
    assert (info.context_window, info.max_output_tokens) == (262144, 65536)
    assert (info.images, info.reasoning, info.server) == (False, False, "openrouter")


async def test_litellm_model_info_gives_the_gateway_aliases_their_window(server: FakeServer) -> None:
    route_litellm(server, "my-gateway/gpt", 128000, 16384)
    [info] = await _describe(server)
    assert (info.context_window, info.max_output_tokens, info.images) == (128000, 16384, True)
    assert info.server == "litellm" and info.source == "LiteLLM model_info.max_input_tokens"
    assert server.requests[1].headers["authorization"] == "Bearer k-123456"


async def test_ollama_default_window_is_flagged_and_the_trained_one_kept(server: FakeServer) -> None:
    route_ollama(server, "qwen3-coder:30b")
    [info] = await _describe(server)
    assert info.server == "ollama" and info.default_window
    assert (info.context_window, info.trained_window) == (None, 262144)
    shows = [r.json for r in server.requests if r.path == "/api/show"]
    assert shows == [{"model": "qwen3-coder:30b"}]


async def test_ollama_modelfile_num_ctx_is_the_window(server: FakeServer) -> None:
    route_ollama(server, "qwen3-coder:30b", num_ctx=32768)
    [info] = await _describe(server)
    assert (info.context_window, info.default_window) == (32768, False)
    assert info.source == "Ollama Modelfile num_ctx"


async def test_ollama_running_context_length_wins(server: FakeServer) -> None:
    route_ollama(server, "qwen3-coder:30b", num_ctx=32768, running=8192)
    [info] = await _describe(server)
    assert (info.context_window, info.source) == (8192, "Ollama /api/ps context_length")


async def test_ollama_is_recognised_by_its_version_endpoint_when_its_list_says_nothing(
    server: FakeServer,
) -> None:
    route_ollama(server, "me/coder:7b")
    server.route(
        "GET",
        "/v1/models",
        Reply.json(
            200, {"object": "list", "data": [{"id": "me/coder:7b", "object": "model", "owned_by": "me"}]}
        ),
    )
    server.route("GET", "/api/version", Reply.json(200, {"version": "0.12.6"}))
    [info] = await _describe(server)
    assert info.server == "ollama" and info.default_window


async def test_an_unknown_server_costs_two_probes_and_says_nothing(server: FakeServer) -> None:
    server.route("GET", "/v1/models", Reply.json(200, {"data": [{"id": "m", "owned_by": "someone"}]}))
    [info] = await _describe(server)
    assert info == ModelInfo("m")
    assert [r.path for r in server.requests] == ["/v1/models", "/v1/model/info", "/api/version"]


def test_anthropic_list_entries_give_input_and_output_limits() -> None:
    body = {
        "data": [
            {
                "type": "model",
                "id": "claude-sonnet-4-5",
                "display_name": "Claude Sonnet 4.5",
                "created_at": "2025-09-29T00:00:00Z",
                "max_input_tokens": 200000,
                "max_tokens": 64000,
            }
        ]
    }
    [info] = parse_model_list(body)
    assert (info.context_window, info.max_output_tokens, info.server) == (200000, 64000, "anthropic")


def test_a_cached_info_reads_back_as_it_was() -> None:
    info = ModelInfo("q", 4096, None, None, True, "Ollama /api/ps context_length", "ollama", 262144, True)
    assert ModelInfo.from_dict(info.to_dict()) == info
    assert ModelInfo.from_dict({"id": 3}) is None
