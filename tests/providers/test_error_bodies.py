"""HTTP error bodies in the shapes gateways and local servers really send: SSE-framed JSON, an HTML page
from a proxy, plain text. The user sees the server's sentence, never the framing."""

from __future__ import annotations

import anyio
import pytest

from acp_conformance.fake_model import FakeServer, Reply
from harness import ErrorKind, ModelError
from harness.providers import ChatCompletions, Messages
from tests.providers.provider_support import LIMIT_S, drain_until_error, prompt

pytestmark = pytest.mark.anyio

# LiteLLM's proxy answers a failed streaming request with its error as one SSE record, then [DONE].
LITELLM_SSE = (
    b'data: {"error": {"message": "litellm.RateLimitError: RateLimitError: OpenAIException - '
    b'Rate limit reached for gpt-4o", "type": "throttling_error", "param": null, "code": "429"}}\n\n'
    b"data: [DONE]\n\n"
)


async def _error_of(server: FakeServer, reply: Reply, *, anthropic: bool = False) -> ModelError:
    if anthropic:
        model, path = Messages(server.url, "m"), "/v1/messages"
    else:
        model, path = ChatCompletions(server.url + "/v1", "m"), "/v1/chat/completions"
    server.route("POST", path, reply)
    with anyio.fail_after(LIMIT_S):
        _, exc = await drain_until_error(model, prompt())
    assert isinstance(exc, ModelError)
    return exc


async def test_an_sse_framed_error_body_becomes_the_servers_own_message(server: FakeServer) -> None:
    reply = Reply(429, {"content-type": "text/event-stream"}, [LITELLM_SSE])
    exc = await _error_of(server, reply)
    assert exc.kind is ErrorKind.RATE_LIMITED
    assert "Rate limit reached for gpt-4o" in exc.message
    assert "data:" not in exc.message and "[DONE]" not in exc.message and "{" not in exc.message


async def test_an_sse_framed_context_error_is_classified_by_its_message(server: FakeServer) -> None:
    body = (
        b'event: error\ndata: {"error": {"message": "This model\'s maximum context length is 8192 tokens. '
        b'However, your messages resulted in 9000 tokens.", "code": 400}}\r\n\r\ndata: [DONE]\r\n\r\n'
    )
    exc = await _error_of(server, Reply(400, {"content-type": "text/event-stream"}, [body]))
    assert exc.kind is ErrorKind.CONTEXT_TOO_LONG
    assert "maximum context length is 8192 tokens" in exc.message
    assert "data:" not in exc.message


async def test_a_json_error_sent_with_an_event_stream_content_type_is_read_as_json(
    server: FakeServer,
) -> None:
    body = b'{"error": {"message": "model \\"qwen3-coder\\" not found", "type": "not_found_error"}}'
    exc = await _error_of(server, Reply(404, {"content-type": "text/event-stream"}, [body]))
    assert 'model "qwen3-coder" not found' in exc.message
    assert "check the model name" in exc.message


async def test_a_proxys_html_error_page_becomes_its_title(server: FakeServer) -> None:
    page = (
        b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway"
        b"</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n"
    )
    exc = await _error_of(server, Reply(502, {"content-type": "text/html"}, [page], chunked=False))
    assert exc.kind is ErrorKind.TRANSPORT_ERROR
    assert "502 Bad Gateway" in exc.message
    assert "<" not in exc.message


async def test_an_anthropic_style_sse_error_body_keeps_the_providers_sentence(server: FakeServer) -> None:
    body = (
        b"event: error\n"
        b'data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}\n\n'
    )
    exc = await _error_of(server, Reply(529, {"content-type": "text/event-stream"}, [body]), anthropic=True)
    assert exc.kind is ErrorKind.RATE_LIMITED
    assert "(Overloaded)" in exc.message


async def test_an_empty_error_body_names_the_status(server: FakeServer) -> None:
    exc = await _error_of(server, Reply(500, {"content-type": "text/plain"}, [b""], chunked=False))
    assert "HTTP 500" in exc.message
