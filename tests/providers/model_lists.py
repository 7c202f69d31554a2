"""Model lists as vLLM, llama.cpp, OpenRouter, LiteLLM and Ollama answer them (their documented shapes),
routed on a ``FakeServer`` for the provider and agent tests."""

from __future__ import annotations

from typing import Any

from acp_conformance.fake_model import FakeServer, Reply

__all__ = [
    "route_litellm",
    "route_llamacpp",
    "route_ollama",
    "route_openrouter",
    "route_vllm",
]


def _list(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"object": "list", "data": list(entries)}


def route_vllm(server: FakeServer, model: str, max_model_len: int) -> None:
    entry = {
        "id": model,
        "object": "model",
        "created": 1733000000,
        "owned_by": "vllm",
        "root": model,
        "parent": None,
        "max_model_len": max_model_len,
        "permission": [{"id": "modelperm-1", "object": "model_permission", "allow_sampling": True}],
    }
    server.route("GET", "/v1/models", Reply.json(200, _list(entry)))


def route_llamacpp(server: FakeServer, model: str, n_ctx: int | None, n_ctx_train: int = 262144) -> None:
    entry = {
        "id": model,
        "object": "model",
        "created": 1733000000,
        "owned_by": "llamacpp",
        "meta": {
            "vocab_type": 2,
            "n_vocab": 151936,
            "n_ctx_train": n_ctx_train,
            "n_embd": 2048,
            "n_params": 30532122624,
            "size": 18556682240,
        },
    }
    server.route("GET", "/v1/models", Reply.json(200, _list(entry)))
    if n_ctx is not None:
        props = {
            "default_generation_settings": {"n_ctx": n_ctx, "params": {"n_predict": -1}},
            "total_slots": 1,
            "model_path": f"/models/{model}.gguf",
            "modalities": {"vision": False, "audio": False},
            "build_info": "b6100-abcdef",
        }
        server.route("GET", "/props", Reply.json(200, props))


def route_openrouter(server: FakeServer, model: str, context_length: int, max_completion: int) -> None:
    entry = {
        "id": model,
        "canonical_slug": model,
        "name": "Qwen: Qwen3 Coder",
        "created": 1753230546,
        "description": "A coding model.",
        "context_length": context_length,
        "architecture": {
            "modality": "text->text",
            "input_modalities": ["text"],
            "output_modalities": ["text"],
            "tokenizer": "Qwen3",
            "instruct_type": None,
        },
        "pricing": {"prompt": "0.0000002", "completion": "0.0000008"},
        "top_provider": {
            "context_length": context_length,
            "max_completion_tokens": max_completion,
            "is_moderated": False,
        },
        "per_request_limits": None,
        "supported_parameters": ["max_tokens", "temperature", "tools", "tool_choice"],
    }
    server.route("GET", "/api/v1/models", Reply.json(200, {"data": [entry]}))


def route_litellm(server: FakeServer, model: str, max_input: int, max_output: int) -> None:
    server.route(
        "GET",
        "/v1/models",
        Reply.json(200, _list({"id": model, "object": "model", "created": 1677610602, "owned_by": "openai"})),
    )
    info = {
        "model_name": model,
        "litellm_params": {"model": "openai/gpt-4o", "merge_reasoning_content_in_choices": False},
        "model_info": {
            "id": "0b6d2f7c",
            "db_model": False,
            "key": "gpt-4o",
            "max_tokens": max_output,
            "max_input_tokens": max_input,
            "max_output_tokens": max_output,
            "litellm_provider": "openai",
            "mode": "chat",
            "supports_vision": True,
            "supports_reasoning": False,
            "supports_function_calling": True,
        },
    }
    server.route("GET", "/v1/model/info", Reply.json(200, {"data": [info]}))


def route_ollama(
    server: FakeServer, model: str, *, num_ctx: int | None = None, running: int | None = None
) -> None:
    server.route(
        "GET",
        "/v1/models",
        Reply.json(
            200, _list({"id": model, "object": "model", "created": 1751000000, "owned_by": "library"})
        ),
    )
    parameters = "temperature 0.7\ntop_k 20" + (f"\nnum_ctx {num_ctx}" if num_ctx else "")
    show = {
        "modelfile": "FROM qwen3-coder:30b",
        "parameters": parameters,
        "template": "{{ .Prompt }}",
        "details": {"format": "gguf", "family": "qwen3moe", "parameter_size": "30.5B"},
        "model_info": {
            "general.architecture": "qwen3moe",
            "general.parameter_count": 30532122624,
            "qwen3moe.context_length": 262144,
            "qwen3moe.embedding_length": 2048,
        },
        "capabilities": ["completion", "tools"],
    }
    server.route("POST", "/api/show", Reply.json(200, show))
    loaded = [{"name": model, "model": model, "size": 19000000000, "context_length": running}]
    server.route("GET", "/api/ps", Reply.json(200, {"models": loaded if running else []}))
