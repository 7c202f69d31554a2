"""HTTP errors before the stream, per server and status, classified into the harness kinds."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from acp_conformance.fake_model import FakeServer, Reply
from harness import ErrorKind, ModelError
from harness.model import Model
from harness.providers import ChatCompletions, Messages, Responses
from tests.providers.provider_support import LIMIT_S, drain_until_error, prompt

pytestmark = pytest.mark.anyio

CTX = ErrorKind.CONTEXT_TOO_LONG
RATE = ErrorKind.RATE_LIMITED
TRANSPORT = ErrorKind.TRANSPORT_ERROR
MODEL = ErrorKind.MODEL_ERROR

CASES: list[tuple[str, str, int, Any, dict[str, str], ErrorKind, float | None]] = [
    # (id, api, status, body, headers, kind, retry_after)
    (
        "openai-context",
        "chat",
        400,
        {
            "error": {
                "message": "This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
        {},
        CTX,
        None,
    ),
    (
        "llamacpp-context",
        "chat",
        400,
        {
            "error": {
                "code": 400,
                "message": "request (13392 tokens) exceeds the available context size (8192 tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": 13392,
                "n_ctx": 8192,
            }
        },
        {},
        CTX,
        None,
    ),
    (
        "vllm-context",
        "chat",
        400,
        {
            "error": {
                "message": "This model's maximum context length is 3 tokens. However, your request has 8 input tokens. Please reduce the length of the input messages. (parameter=input_tokens, value=8)",
                "type": "BadRequestError",
                "param": "input_tokens",
                "code": 400,
            }
        },
        {},
        CTX,
        None,
    ),
    (
        "vllm-old-context",
        "chat",
        400,
        {
            "object": "error",
            "message": "This model's maximum context length is 6048 tokens. However, you requested 6616 tokens (568 in the messages, 6048 in the completion). Please reduce the length of the messages or completion.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
        {},
        CTX,
        None,
    ),
    (
        "tabby-context",
        "chat",
        400,
        {
            "error": {
                "message": "Prompt length 9000 exceeds the available context size of 8192 tokens",
                "type": "invalid_request_error",
                "param": None,
                "code": "context_length_exceeded",
            }
        },
        {},
        CTX,
        None,
    ),
    (
        "ollama-context",
        "chat",
        400,
        {
            "error": {
                "message": "the prompt is longer than the context length currently available to the model; shorten the prompt",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        },
        {},
        CTX,
        None,
    ),
    (
        "deepseek-context",
        "chat",
        400,
        {
            "error": {
                "message": "This model's maximum context length is 131072 tokens. However, you requested 131134 tokens (122942 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_request_error",
            }
        },
        {},
        CTX,
        None,
    ),
    (
        "openai-429-retry-after-ms",
        "chat",
        429,
        {
            "error": {
                "message": "Rate limit reached for 10KTPM-200RPM in organization org-x on tokens per min. Limit: 10000 / min. Please try again in 6ms.",
                "type": "tokens",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        },
        {"retry-after-ms": "6", "retry-after": "1"},
        RATE,
        0.006,
    ),
    (
        "openai-quota",
        "chat",
        429,
        {
            "error": {
                "message": "You exceeded your current quota, please check your plan and billing details.",
                "type": "insufficient_quota",
                "param": None,
                "code": "insufficient_quota",
            }
        },
        {},
        MODEL,
        None,
    ),
    (
        "openai-401",
        "chat",
        401,
        {
            "error": {
                "message": "Incorrect API key provided: sk-PMafP***E873.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        },
        {},
        MODEL,
        None,
    ),
    (
        "openai-max-tokens-unsupported",
        "chat",
        400,
        {
            "error": {
                "message": "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
                "type": "invalid_request_error",
                "param": "max_tokens",
                "code": "unsupported_parameter",
            }
        },
        {},
        MODEL,
        None,
    ),
    (
        "llamacpp-loading",
        "chat",
        503,
        {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}},
        {},
        RATE,
        None,
    ),
    (
        "ollama-busy",
        "chat",
        503,
        {
            "error": {
                "message": "server busy, please try again.  maximum pending requests exceeded",
                "type": "api_error",
                "param": None,
                "code": None,
            }
        },
        {},
        RATE,
        None,
    ),
    (
        "ollama-not-found",
        "chat",
        404,
        {
            "error": {
                "message": 'model "x" not found, try pulling it first',
                "type": "not_found_error",
                "param": None,
                "code": None,
            }
        },
        {},
        MODEL,
        None,
    ),
    (
        "openrouter-502",
        "chat",
        502,
        {"error": {"code": 502, "message": "Provider returned error", "metadata": {}}},
        {},
        TRANSPORT,
        None,
    ),
    ("plain-text-500", "chat", 500, b"Internal Server Error", {}, TRANSPORT, None),
    ("tabby-fastapi-422", "chat", 422, {"detail": "field required"}, {}, MODEL, None),
    (
        "responses-context-400",
        "responses",
        400,
        {
            "error": {
                "message": "Your input exceeds the context window of this model.",
                "type": "invalid_request_error",
                "param": "input",
                "code": "context_length_exceeded",
            }
        },
        {},
        CTX,
        None,
    ),
    (
        "anthropic-context",
        "anthropic",
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "prompt is too long: 208310 tokens > 200000 maximum",
            },
            "request_id": "req_011CVQe1dLrGNMJyE1ghG1av",
        },
        {},
        CTX,
        None,
    ),
    (
        "anthropic-context-max-tokens",
        "anthropic",
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000, decrease input length or `max_tokens` and try again",
            },
        },
        {},
        CTX,
        None,
    ),
    (
        "anthropic-413",
        "anthropic",
        413,
        {
            "type": "error",
            "error": {
                "type": "request_too_large",
                "message": "Request exceeds the maximum allowed number of bytes.",
            },
        },
        {},
        CTX,
        None,
    ),
    (
        "anthropic-429",
        "anthropic",
        429,
        {
            "type": "error",
            "error": {
                "type": "rate_limit_error",
                "message": "Number of request tokens has exceeded your per-minute rate limit",
            },
        },
        {"retry-after": "7"},
        RATE,
        7.0,
    ),
    (
        "anthropic-529",
        "anthropic",
        529,
        {"type": "error", "error": {"details": None, "type": "overloaded_error", "message": "Overloaded"}},
        {},
        RATE,
        None,
    ),
    (
        "anthropic-401",
        "anthropic",
        401,
        {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}},
        {},
        MODEL,
        None,
    ),
    (
        "anthropic-billing",
        "anthropic",
        402,
        {"type": "error", "error": {"type": "billing_error", "message": "credit balance too low"}},
        {},
        MODEL,
        None,
    ),
    (
        "anthropic-prefill-unsupported",
        "anthropic",
        400,
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "This model does not support assistant message prefill. The conversation must end with a user message.",
            },
        },
        {"x-should-retry": "false"},
        MODEL,
        None,
    ),
    (
        "anthropic-504",
        "anthropic",
        504,
        {"type": "error", "error": {"type": "timeout_error", "message": "Request timed out"}},
        {},
        TRANSPORT,
        None,
    ),
]


def make(api: str, server: FakeServer, key: str | None = None) -> tuple[Model, str]:
    if api == "chat":
        return ChatCompletions(server.url + "/v1", "m", api_key=key), "/v1/chat/completions"
    if api == "responses":
        return Responses(server.url + "/v1", "m", api_key=key), "/v1/responses"
    return Messages(server.url, "m", api_key=key), "/v1/messages"


@pytest.mark.parametrize(
    ("api", "status", "body", "headers", "kind", "retry_after"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
async def test_error_status_is_classified(
    server: FakeServer,
    api: str,
    status: int,
    body: Any,
    headers: dict[str, str],
    kind: ErrorKind,
    retry_after: float | None,
) -> None:
    model, path = make(api, server)
    server.route("POST", path, Reply.json(status, body, headers))
    with anyio.fail_after(LIMIT_S):
        got, exc = await drain_until_error(model, prompt())
    assert got == []
    assert isinstance(exc, ModelError)
    assert exc.kind is kind, exc.message
    assert exc.retry_after == (pytest.approx(retry_after) if retry_after is not None else None)
    assert server.url in exc.message


async def test_an_api_key_echoed_by_the_server_never_reaches_the_message(server: FakeServer) -> None:
    key = "sk-proj-SECRET0123456789"
    model, path = make("chat", server, key)
    server.route(
        "POST",
        path,
        Reply.json(
            401, {"error": {"message": f"Incorrect API key provided: {key}.", "code": "invalid_api_key"}}
        ),
    )
    with anyio.fail_after(LIMIT_S):
        _, exc = await drain_until_error(model, prompt())
    assert isinstance(exc, ModelError)
    assert key not in exc.message and key not in repr(exc) and key not in repr(model)
    assert "check the API key" in exc.message
