"""Transport behaviour: cancellation closes the stream, drops and refusals, timeouts, retries, listing."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

import anyio
import pytest

from acp_conformance.fake_model import Drop, FakeServer, Reply, Stall
from harness import ErrorKind, FinishReason, ModelError
from harness.model import Delta, Finish, Prompt, TextChunk
from harness.providers import (
    ChatCompletions,
    Messages,
    Responses,
    RetryModel,
    build_model,
    list_models,
)
from tests.providers.provider_support import LIMIT_S, drain, drain_until_error, prompt
from tests.providers.sse_fixtures import fixture

pytestmark = pytest.mark.anyio

CHAT = "/v1/chat/completions"
HEAD = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}\n\n'
)


async def wait_event(ev: Any) -> None:
    await anyio.to_thread.run_sync(ev.wait, LIMIT_S)
    assert ev.is_set()


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_cancelling_a_turn_while_the_server_is_silent_closes_the_http_stream(
    server: FakeServer,
) -> None:
    stall = Stall()
    server.route("POST", CHAT, Reply.sse(HEAD, then=[stall]))
    model = ChatCompletions(server.url + "/v1", "m")
    got: list[Delta] = []
    first = anyio.Event()

    async def consume() -> None:
        async for d in model.stream(prompt()):
            got.append(d)
            first.set()

    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await first.wait()
            await wait_event(stall.reached)
            tg.cancel_scope.cancel()
        await wait_event(stall.client_closed)
    assert got == [TextChunk("Hello")]
    await model.aclose()


async def test_cancel_before_any_byte_closes_the_connection(server: FakeServer) -> None:
    stall = Stall()
    server.route("POST", "/v1/messages", Reply(200, {"content-type": "text/event-stream"}, [stall]))
    model = Messages(server.url, "claude")
    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(drain, model, prompt())
            await wait_event(stall.reached)
            tg.cancel_scope.cancel()
        await wait_event(stall.client_closed)


async def test_a_connection_dropped_mid_stream_is_a_transport_error(server: FakeServer) -> None:
    server.route("POST", CHAT, Reply.sse(HEAD, then=[Drop()]))
    model = ChatCompletions(server.url + "/v1", "m")
    with anyio.fail_after(LIMIT_S):
        got, exc = await drain_until_error(model, prompt())
    assert got == [TextChunk("Hello")]
    assert isinstance(exc, ModelError) and exc.kind is ErrorKind.TRANSPORT_ERROR
    assert server.url in exc.message


async def test_a_body_ended_by_close_without_final_record_is_a_transport_error(server: FakeServer) -> None:
    server.route(
        "POST",
        "/v1/responses",
        Reply(
            200, {"content-type": "text/event-stream"}, [fixture("responses_truncated.sse")], chunked=False
        ),
    )
    model = Responses(server.url + "/v1", "m")
    with anyio.fail_after(LIMIT_S):
        _, exc = await drain_until_error(model, prompt())
    assert isinstance(exc, ModelError) and exc.kind is ErrorKind.TRANSPORT_ERROR


async def test_a_refused_connection_says_what_to_check(refused_port: int) -> None:
    port = refused_port
    model = build_model("openai", model="m", base_url=f"http://127.0.0.1:{port}/v1")
    with anyio.fail_after(LIMIT_S):
        _, exc = await drain_until_error(model, prompt())
    assert isinstance(exc, ModelError) and exc.kind is ErrorKind.TRANSPORT_ERROR
    assert exc.message == (
        f"model endpoint http://127.0.0.1:{port}/v1 refused the connection; check the server is running or set the base URL"
    )


async def test_a_server_silent_longer_than_the_idle_timeout_is_a_transport_error(server: FakeServer) -> None:
    stall = Stall()
    server.route("POST", CHAT, Reply.sse(HEAD, then=[stall]))
    model = ChatCompletions(server.url + "/v1", "m", idle_timeout=0.2)
    with anyio.fail_after(LIMIT_S):
        got, exc = await drain_until_error(model, prompt())
    stall.release.set()
    assert got == [TextChunk("Hello")]
    assert isinstance(exc, ModelError) and exc.kind is ErrorKind.TRANSPORT_ERROR
    assert "sent nothing for 0.2 s" in exc.message


async def test_the_pooled_connection_is_reused_across_calls(server: FakeServer) -> None:
    server.route("POST", CHAT, Reply.sse(fixture("chat_openai_text.sse")))
    model = ChatCompletions(server.url + "/v1", "m")
    with anyio.fail_after(LIMIT_S):
        for _ in range(3):
            assert (await drain(model, prompt()))[-1] == Finish(FinishReason.STOP)
    await model.aclose()
    assert len(server.requests) == 3


# -- retry --------------------------------------------------------------------------------------


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


async def test_retry_waits_retry_after_on_429_then_streams(server: FakeServer) -> None:
    rate = {"error": {"message": "Rate limit reached", "type": "tokens", "code": "rate_limit_exceeded"}}
    server.route(
        "POST",
        CHAT,
        Reply.json(429, rate, {"retry-after": "2"}),
        Reply.json(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        Reply.sse(fixture("chat_openai_text.sse")),
    )
    model = ChatCompletions(server.url + "/v1", "m")
    sleeps = Sleeps()
    retry = RetryModel(max_tries=3, base_delay=0.5, sleep=sleeps)
    with anyio.fail_after(LIMIT_S):
        got = [d async for d in retry.stream(prompt(), model.stream)]
    assert got[-1] == Finish(FinishReason.STOP)
    assert len(server.requests) == 3
    assert sleeps.waits[0] == 2.0
    assert 0.5 <= sleeps.waits[1] <= 1.0  # no header: base_delay * 2, with jitter


async def test_retry_gives_up_after_max_tries_with_the_last_error(server: FakeServer) -> None:
    server.route(
        "POST",
        CHAT,
        Reply.json(
            429, {"error": {"message": "slow down", "code": "rate_limit_exceeded"}}, {"retry-after-ms": "10"}
        ),
    )
    model = ChatCompletions(server.url + "/v1", "m")
    retry = RetryModel(max_tries=2, sleep=Sleeps())
    with anyio.fail_after(LIMIT_S), pytest.raises(ModelError) as info:
        async for _ in retry.stream(prompt(), model.stream):
            pass
    assert info.value.kind is ErrorKind.RATE_LIMITED
    assert len(server.requests) == 2


async def test_retry_does_not_retry_other_kinds_or_waits_beyond_max_delay(server: FakeServer) -> None:
    server.route(
        "POST",
        CHAT,
        Reply.json(
            429, {"error": {"message": "later", "code": "rate_limit_exceeded"}}, {"retry-after": "600"}
        ),
    )
    model = ChatCompletions(server.url + "/v1", "m")
    with anyio.fail_after(LIMIT_S), pytest.raises(ModelError):
        async for _ in RetryModel(sleep=Sleeps(), max_delay=60).stream(prompt(), model.stream):
            pass
    assert len(server.requests) == 1


async def test_retry_never_restarts_after_the_first_delta() -> None:
    calls = 0

    async def failing(_: Prompt) -> AsyncIterator[Delta]:
        nonlocal calls
        calls += 1
        yield TextChunk("partial")
        raise ModelError("overloaded", ErrorKind.RATE_LIMITED)

    got: list[Delta] = []
    with anyio.fail_after(LIMIT_S), pytest.raises(ModelError):
        async for d in RetryModel(sleep=Sleeps()).stream(prompt(), failing):
            got.append(d)
    assert calls == 1 and got == [TextChunk("partial")]


# -- listing and settings --------------------------------------------------------------------


async def test_list_models_reads_the_models_endpoint(server: FakeServer) -> None:
    server.route(
        "GET",
        "/v1/models",
        Reply.json(200, {"object": "list", "data": [{"id": "qwen3-8b", "object": "model"}, {"id": "gemma"}]}),
    )
    server.route(
        "GET",
        "/anthropic/v1/models",
        Reply.json(200, {"data": [{"id": "claude-sonnet-4-5", "type": "model"}]}),
    )
    with anyio.fail_after(LIMIT_S):
        assert await list_models("openai", base_url=server.url + "/v1") == ["qwen3-8b", "gemma"]
        assert await list_models("anthropic", base_url=server.url + "/anthropic", api_key="k") == [
            "claude-sonnet-4-5"
        ]
    assert server.requests[1].headers["x-api-key"] == "k"


async def test_list_models_is_empty_where_the_server_has_no_models_endpoint(server: FakeServer) -> None:
    with anyio.fail_after(LIMIT_S):
        assert await list_models("openai-responses", base_url=server.url + "/v1") == []


def test_the_factory_takes_explicit_arguments_and_reads_no_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, value in {
        "OPENAI_API_KEY": "sk-o",
        "ANTHROPIC_API_KEY": "sk-a",
        "ACP_AGENT_API_KEY": "sk-acp",
        "OPENAI_BASE_URL": "http://10.0.0.2:8000/v1/",
        "ACP_AGENT_BASE_URL": "http://10.0.0.3/v1",
    }.items():
        monkeypatch.setenv(name, value)
    openai = build_model("openai", model="m")
    assert openai.base_url == "https://api.openai.com/v1"  # the default, whatever the environment says
    assert openai._ep.api_key is None  # pyright: ignore[reportPrivateUsage]
    anthropic = build_model("anthropic", model="m", base_url="http://x/", api_key="explicit")
    assert anthropic.base_url == "http://x" and anthropic._ep.api_key == "explicit"  # pyright: ignore[reportPrivateUsage]
    assert "explicit" not in repr(anthropic)
    assert isinstance(build_model("openai-responses", model="m"), Responses)
    assert isinstance(build_model("anthropic", model="m"), Messages)


async def test_a_server_that_ignores_stream_and_answers_json_gets_an_actionable_error(
    server: FakeServer,
) -> None:
    server.route("POST", CHAT, Reply.json(200, {"id": "x", "object": "chat.completion", "choices": []}))
    model = ChatCompletions(server.url + "/v1", "m")
    with anyio.fail_after(LIMIT_S):
        _, exc = await drain_until_error(model, prompt())
    assert isinstance(exc, ModelError) and exc.kind is ErrorKind.MODEL_ERROR
    assert "not an event stream" in exc.message


def test_ollama_and_hosted_endpoints_refuse_continuation_by_default() -> None:
    from harness import HarnessUsageError

    assert ChatCompletions("http://127.0.0.1:11434/v1", "m").continuation == "unsupported"
    assert ChatCompletions("https://openrouter.ai/api/v1", "m").continuation == "unsupported"
    assert ChatCompletions("http://gpu-box:8000/v1", "m").continuation == "flags"
    with pytest.raises(HarnessUsageError, match="unknown provider"):
        build_model("script", model="m")


# -- a turn stopped between two records ------------------------------------------------------------


_Http = ChatCompletions | Messages | Responses


def _chat(url: str) -> _Http:
    return ChatCompletions(url + "/v1", "m")


def _messages(url: str) -> _Http:
    return Messages(url, "m", api_key="k")


def _responses(url: str) -> _Http:
    return Responses(url + "/v1", "m")


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize(
    ("path", "make", "head"),
    [
        (CHAT, _chat, "chat_truncated.sse"),
        ("/v1/messages", _messages, "anthropic_truncated.sse"),
        ("/v1/responses", _responses, "responses_truncated.sse"),
    ],
)
async def test_a_stream_closed_once_its_turn_was_stopped_is_dropped_not_read_to_its_end(
    server: FakeServer,
    monkeypatch: pytest.MonkeyPatch,
    path: str,
    make: Callable[[str], _Http],
    head: str,
) -> None:
    # A cancel that lands while the consumer handles a record (not while the stream waits for the next)
    # closes the stream from its ``yield``: the model may go on writing for seconds, so the stream must
    # not be read on (a drain that long would outlast the limit below), and closing it tells the server.
    monkeypatch.setattr("harness.providers._http._DRAIN_S", 60.0)
    stall = Stall()
    server.route("POST", path, Reply.sse(fixture(head), then=[stall]))
    model = make(server.url)
    p = prompt()
    with anyio.fail_after(LIMIT_S):
        stream = model.stream(p)
        assert isinstance(await stream.__anext__(), Delta)
        assert isinstance(stream, AsyncGenerator)
        await wait_event(stall.reached)
        p.cancel.set()  # as Run.cancel and Run.interrupt set the prompt's signal
        await stream.aclose()
        await wait_event(stall.client_closed)
    stall.release.set()
    await model.aclose()
