"""One HTTP client per endpoint and event loop, shared by the models (sessions) that talk to it; the
certificate store is never loaded for an ``http://`` endpoint."""

from __future__ import annotations

import socket
import threading
from collections.abc import Sequence

import anyio
import pytest

from acp_conformance.fake_model import FakeServer, Reply
from harness.model import TextChunk
from harness.providers import (
    ChatCompletions,
    Messages,
    _clients,  # pyright: ignore[reportPrivateUsage]
)
from harness.providers._clients import shared_clients
from tests.providers.provider_support import LIMIT_S, drain, prompt

pytestmark = pytest.mark.anyio

CHAT = "/v1/chat/completions"
STREAM = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}\n\n'
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b"data: [DONE]\n\n"
)


def _text(deltas: Sequence[object]) -> str:
    return "".join(d.text for d in deltas if isinstance(d, TextChunk))


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_models_of_one_endpoint_share_one_client_until_the_last_closes(server: FakeServer) -> None:
    server.route("POST", CHAT, Reply.sse(STREAM))
    first = ChatCompletions(server.url + "/v1", "m")
    second = ChatCompletions(server.url + "/v1/", "other-model")  # same origin, another model
    with anyio.fail_after(LIMIT_S):
        assert _text(await drain(first, prompt())) == "Hello"
        assert _text(await drain(second, prompt())) == "Hello"
        assert shared_clients() == 1
        await first.aclose()
        assert shared_clients() == 1  # the other model still holds it, and still streams
        assert _text(await drain(second, prompt())) == "Hello"
        await second.aclose()
    assert shared_clients() == 0


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_later_model_reuses_the_open_connection(server: FakeServer) -> None:
    server.route("POST", CHAT, Reply.sse(STREAM))
    keep = ChatCompletions(server.url + "/v1", "m")
    later = ChatCompletions(server.url + "/v1", "m")
    with anyio.fail_after(LIMIT_S):
        await drain(keep, prompt())
        # The provider stops at the last record; closing its stream (the generator's finalizer) reads
        # the body's end, so the connection goes back to the pool.
        await anyio.wait_all_tasks_blocked()
        await drain(later, prompt())
        await later.aclose()
        await keep.aclose()
    ports = {r.headers.get("host") for r in server.requests}
    assert len(server.requests) == 2 and len(ports) == 1
    # Both requests came over one keep-alive connection: the server accepted one connection only.
    assert len(server._threads) == 1  # pyright: ignore[reportPrivateUsage]


async def test_different_endpoints_get_different_clients() -> None:
    with FakeServer() as a, FakeServer() as b:
        a.route("POST", CHAT, Reply.sse(STREAM))
        b.route("POST", "/v1/messages", Reply.json(500, {"error": {"message": "no"}}))
        chat = ChatCompletions(a.url + "/v1", "m")
        anthropic = Messages(b.url, "m")
        with anyio.fail_after(LIMIT_S):
            await drain(chat, prompt())
            with pytest.raises(Exception):  # noqa: B017  # any error: only the client count matters here
                await drain(anthropic, prompt())
            assert shared_clients() == 2
            await chat.aclose()
            await anthropic.aclose()
        assert shared_clients() == 0


async def test_an_http_endpoint_never_loads_the_certificate_store(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def forbidden() -> object:
        raise AssertionError("the certificate store was loaded for an http:// endpoint")

    monkeypatch.setattr(_clients, "_verified_context", forbidden)
    server.route("POST", CHAT, Reply.sse(STREAM))
    model = ChatCompletions(server.url + "/v1", "m")
    with anyio.fail_after(LIMIT_S):
        assert _text(await drain(model, prompt())) == "Hello"
        await model.aclose()


async def test_an_https_endpoint_loads_the_certificate_store_once_and_verifies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []
    real = _clients._verified_context  # pyright: ignore[reportPrivateUsage]

    def counted() -> object:
        calls.append(1)
        return real()

    monkeypatch.setattr(_clients, "_verified_context", counted)
    # A TCP server that closes each connection at once: the TLS handshake fails, after the context was built.
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def refuse() -> None:
            for _ in range(2):
                conn, _ = listener.accept()
                conn.close()

        closer = threading.Thread(target=refuse, daemon=True)
        closer.start()
        models = [ChatCompletions(f"https://127.0.0.1:{port}/v1", "m", connect_timeout=2) for _ in range(2)]
        with anyio.fail_after(LIMIT_S):
            for model in models:
                with pytest.raises(Exception):  # noqa: B017  # the handshake cannot succeed
                    await drain(model, prompt())
            for model in models:
                await model.aclose()
        closer.join(LIMIT_S)
    assert calls == [1]


async def test_an_application_may_keep_an_idle_client_open_for_the_next_model(
    server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_clients, "_keep_idle", True)
    server.route("POST", CHAT, Reply.sse(STREAM))
    with anyio.fail_after(LIMIT_S):
        lister = ChatCompletions(server.url + "/v1", "m")
        await drain(lister, prompt())
        await anyio.wait_all_tasks_blocked()
        await lister.aclose()
        assert shared_clients() == 1  # kept: the next model reuses it and its connection
        later = ChatCompletions(server.url + "/v1", "m")
        await drain(later, prompt())
        await later.aclose()
    assert len(server._threads) == 1  # pyright: ignore[reportPrivateUsage]
