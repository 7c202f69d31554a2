"""The SSE reader hands a provider the records of one read at a time: what precedes the stream's last
record in that read still reaches the consumer before the rest of the body is drained."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx2
import pytest

from harness.model import TextChunk
from harness.providers import ChatCompletions, Messages
from tests.providers.provider_support import LIMIT_S, prompt

pytestmark = pytest.mark.anyio

_CHAT = (
    b"".join(
        b'data: {"choices":[{"index":0,"delta":{"content":"%s"},"finish_reason":null}]}\n\n' % t
        for t in (b"a", b"b", b"c")
    )
    + b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)

_MESSAGES = (
    b'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"text","text":""}}\n\n'
    + b"".join(
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        b'"delta":{"type":"text_delta","text":"%s"}}\n\n' % t
        for t in (b"a", b"b", b"c")
    )
    + b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    b'"usage":{"output_tokens":3}}\n\n'
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
)


class _OneReadThenHeld(httpx2.AsyncByteStream):
    """The whole reply in one read, then the body stays open until ``release``."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.asked_for_more = False
        self.release = anyio.Event()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.body
        self.asked_for_more = True
        await self.release.wait()


def _model(provider: str, stream: _OneReadThenHeld) -> ChatCompletions | Messages:
    def reply(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=stream)

    transport = httpx2.MockTransport(reply)
    if provider == "openai":
        return ChatCompletions("http://model.test/v1", "m", "k", transport=transport)
    return Messages("http://model.test", "m", "k", transport=transport)


@pytest.mark.parametrize(("provider", "body"), [("openai", _CHAT), ("anthropic", _MESSAGES)])
async def test_the_text_read_with_the_last_record_reaches_the_consumer_before_the_body_is_drained(
    provider: str, body: bytes
) -> None:
    stream = _OneReadThenHeld(body)
    model = _model(provider, stream)
    texts: list[str] = []
    drained_before_first_text: bool | None = None
    try:
        with anyio.fail_after(LIMIT_S):
            async for delta in model.stream(prompt()):
                if isinstance(delta, TextChunk):
                    if drained_before_first_text is None:
                        drained_before_first_text = stream.asked_for_more
                        stream.release.set()
                    texts.append(delta.text)
    finally:
        await model.aclose()
    assert texts == ["a", "b", "c"]
    assert drained_before_first_text is False
