"""Anthropic Messages against replayed streams, and the requests it sends (thinking round trip, prefill)."""

from __future__ import annotations

import anyio
import pytest

from acp_conformance.fake_model import FakeServer, Reply
from harness import (
    ErrorKind,
    FinishReason,
    Image,
    Message,
    ModelError,
    Options,
    Reasoning,
    Text,
    ToolCall,
    ToolResult,
    UnsupportedOptionError,
)
from harness.model import Finish, ReasoningChunk, TextChunk, ToolInput, ToolReady, ToolStart, UsageChunk
from harness.providers import Messages
from tests.providers.provider_support import LIMIT_S, drain, drain_until_error, prompt, weather_tool
from tests.providers.sse_fixtures import fixture

pytestmark = pytest.mark.anyio

PATH = "/v1/messages"
SIG = (
    "EvQBCkYICxgCKkAxhD4NUKFzudtZ6NzbZdEiBACIScTzqjPViM596iWLZIk4EFKYYBj3B6Ptl3b0dcQv/VeJBNbejNWIWRBn+KPNEgz6HWtKx7p+"
    "QRgKsEoaDGjsiqfht7gTRFYHiyIwD1VSmNqHxv3wy8KEMP+LYb/TC4UH3H97tuoaADARFFcA0phdfxnzKQxFnc9lwY+dKlzUsaKSUAFeu1bDL5ikZ"
    "J1vL0Fkz6JjoFke0L/wOJRIUDUlDUOFJ1tZ3ea7g6LGE/5hwuvWgLwewdcm64d+43l7F57XrOmqNd6flI2K/oPr/4yzNgvi/EhT6Ca17BgB"
)


async def run_fixture(server: FakeServer, name: str, every: int | None = 9) -> list[object]:
    server.route("POST", PATH, Reply.sse(fixture(name), every=every))
    model = Messages(server.url, "claude")
    with anyio.fail_after(LIMIT_S):
        return list(await drain(model, prompt()))


async def test_basic_text_with_ping_and_usage(server: FakeServer) -> None:
    assert await run_fixture(server, "anthropic_basic.sse") == [
        UsageChunk(11, None, 0, 0),
        TextChunk("Hello"),
        TextChunk(" there"),
        TextChunk("!"),
        UsageChunk(None, 6, None, None),
        Finish(FinishReason.STOP),
    ]


async def test_tool_use_after_text_with_empty_first_partial_json(server: FakeServer) -> None:
    t = "toolu_01NRLabsLyVHZPKxbKvkfSMn"
    assert await run_fixture(server, "anthropic_tool_use.sse") == [
        UsageChunk(377, None, 0, 0),
        TextChunk("I"),
        TextChunk("'ll check the current weather in Paris for you."),
        ToolStart(t, "get_weather"),
        ToolInput(t, '{"locati'),
        ToolInput(t, 'on": "P'),
        ToolInput(t, "ar"),
        ToolInput(t, 'is"}'),
        ToolReady(t, {"location": "Paris"}),
        UsageChunk(None, 65, None, None),
        Finish(FinishReason.TOOL_CALLS),
    ]


async def test_thinking_with_signature_then_redacted_thinking_then_text(server: FakeServer) -> None:
    assert await run_fixture(server, "anthropic_thinking.sse", every=64) == [
        UsageChunk(69, None, 0, 0),
        ReasoningChunk("The previous"),
        ReasoningChunk(" answer was 185."),
        ReasoningChunk(signature=SIG),
        ReasoningChunk(redacted="redacted-thinking-data"),
        TextChunk("925"),
        TextChunk(" / 5 = 185"),
        UsageChunk(69, 53, 0, 0),
        Finish(FinishReason.STOP),
    ]


async def test_llamacpp_empty_signature_is_kept(server: FakeServer) -> None:
    assert await run_fixture(server, "anthropic_llamacpp_thinking.sse") == [
        UsageChunk(5, None, 95, 0),
        ReasoningChunk("Hmm."),
        ReasoningChunk(signature=""),
        TextChunk("Ok"),
        UsageChunk(None, 7, None, None),
        Finish(FinishReason.STOP),
    ]


async def test_parallel_tool_use_with_cache_usage_overridden_by_message_delta(server: FakeServer) -> None:
    assert await run_fixture(server, "anthropic_parallel_tools_cache.sse") == [
        UsageChunk(43, None, 5000, 2000),
        ToolStart("toolu_A", "read_file"),
        ToolInput("toolu_A", '{"path":'),
        ToolInput("toolu_A", ' "a.txt"}'),
        ToolReady("toolu_A", {"path": "a.txt"}),
        ToolStart("toolu_B", "list_dir"),
        ToolReady("toolu_B", {}),
        UsageChunk(61, 40, 5000, 2000),
        Finish(FinishReason.TOOL_CALLS),
    ]


async def test_max_tokens_mid_tool_json_leaves_the_call_unready(server: FakeServer) -> None:
    got = await run_fixture(server, "anthropic_max_tokens_mid_tool.sse")
    assert not any(isinstance(d, ToolReady) for d in got)
    assert got[-1] == Finish(FinishReason.LENGTH)


async def test_refusal_and_pause_turn_stop_reasons(server: FakeServer) -> None:
    assert (await run_fixture(server, "anthropic_refusal.sse"))[-1] == Finish(FinishReason.REFUSAL)
    got = await run_fixture(server, "anthropic_pause_turn.sse")
    assert got == [UsageChunk(9, None, 0, 0), UsageChunk(None, 10, None, None), Finish(FinishReason.STOP)]


@pytest.mark.parametrize(
    ("name", "kind", "before"),
    [
        (
            "anthropic_overloaded_midstream.sse",
            ErrorKind.RATE_LIMITED,
            [UsageChunk(9, None, 0, 0), TextChunk("Hel")],
        ),
        ("anthropic_truncated.sse", ErrorKind.TRANSPORT_ERROR, [UsageChunk(9, None, 0, 0), TextChunk("Hel")]),
        (
            "anthropic_context_window.sse",
            ErrorKind.CONTEXT_TOO_LONG,
            [UsageChunk(199990, None, 0, 0), TextChunk("Partial"), UsageChunk(None, 10, None, None)],
        ),
    ],
)
async def test_errors_after_http_200_are_classified(
    server: FakeServer, name: str, kind: ErrorKind, before: list[object]
) -> None:
    server.route("POST", PATH, Reply.sse(fixture(name)))
    model = Messages(server.url, "claude")
    with anyio.fail_after(LIMIT_S):
        got, exc = await drain_until_error(model, prompt())
    assert got == before
    assert isinstance(exc, ModelError) and exc.kind is kind


async def test_request_sends_thinking_back_unchanged_tool_results_with_is_error_and_images(
    server: FakeServer,
) -> None:
    server.route("POST", PATH, Reply.sse(fixture("anthropic_basic.sse")))
    model = Messages(server.url, "claude-sonnet-4-5", api_key="sk-ant-xyz")
    msgs = [
        Message.user("Weather in Paris?"),
        Message.assistant(
            [
                Reasoning("I should call get_weather…", signature=SIG),
                Reasoning("", redacted="redacted-thinking-data"),
                Reasoning("unsigned reasoning from elsewhere"),
                Text("I'll check."),
                ToolCall("toolu_1", "get_weather", {"location": "Paris"}),
                ToolCall("toolu_2", "get_weather", {"location": "Nowhere"}),
            ]
        ),
        Message.user(
            [
                Text("also this"),
                ToolResult("toolu_1", (Text("15°C, cloudy"), Image(data="QUJD", media_type="image/png"))),
                ToolResult("toolu_2", (Text("ENOENT"),), error=True),
            ]
        ),
    ]
    knobs = {"anthropic": {"thinking": {"type": "enabled", "budget_tokens": 2048}}}
    with anyio.fail_after(LIMIT_S):
        await drain(
            model,
            prompt(
                *msgs,
                tools=[weather_tool()],
                options=Options(max_output_tokens=4096, temperature=0.5, provider=knobs, cache_ttl=None),
            ),
        )
    req = server.requests[0]
    assert req.headers["x-api-key"] == "sk-ant-xyz"
    assert req.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in req.headers
    assert req.json == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "system": "Be terse.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "I should call get_weather…", "signature": SIG},
                    {"type": "redacted_thinking", "data": "redacted-thinking-data"},
                    {"type": "text", "text": "I'll check."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "get_weather",
                        "input": {"location": "Paris"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_2",
                        "name": "get_weather",
                        "input": {"location": "Nowhere"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [
                            {"type": "text", "text": "15°C, cloudy"},
                            {
                                "type": "image",
                                "source": {"type": "base64", "media_type": "image/png", "data": "QUJD"},
                            },
                        ],
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": [{"type": "text", "text": "ENOENT"}],
                        "is_error": True,
                    },
                    {"type": "text", "text": "also this"},
                ],
            },
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather",
                "input_schema": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            }
        ],
        "stream": True,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
    }


async def test_resume_is_a_prefill_without_thinking_and_trailing_whitespace(server: FakeServer) -> None:
    server.route("POST", PATH, Reply.sse(fixture("anthropic_basic.sse")))
    model = Messages(server.url, "claude")
    p = prompt(
        Message.user("Count."),
        Message.assistant([Reasoning("x", signature="s"), Text("One. Four. ")]),
        continue_=True,
    )
    with anyio.fail_after(LIMIT_S):
        await drain(model, p)
    body = server.requests[0].json
    assert body["messages"][-1] == {"role": "assistant", "content": [{"type": "text", "text": "One. Four."}]}
    assert "thinking" not in body


async def test_resume_with_thinking_on_is_a_usage_error_naming_the_fallback() -> None:
    model = Messages("http://127.0.0.1:1", "claude")
    opts = Options(provider={"anthropic": {"thinking": {"type": "enabled", "budget_tokens": 1024}}})
    with pytest.raises(UnsupportedOptionError, match="appending the edit"):
        model.stream(prompt(Message.user("Hi"), Message.assistant("Hel"), options=opts, continue_=True))


async def test_thinking_disabled_by_knob_allows_resume_and_temperature() -> None:
    model = Messages("http://127.0.0.1:1", "claude")
    opts = Options(temperature=0.3, provider={"anthropic": {"thinking": {"type": "disabled"}}})
    body = model.build_request(
        prompt(Message.user("Hi"), Message.assistant("Hel"), options=opts, continue_=True)
    )
    assert body["temperature"] == 0.3
    assert body["thinking"] == {"type": "disabled"}
