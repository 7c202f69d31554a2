"""Responses against replayed streams, and the stateless requests it sends."""

from __future__ import annotations

import json

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
from harness.providers import Responses
from tests.providers.provider_support import LIMIT_S, drain, drain_until_error, prompt, weather_tool
from tests.providers.sse_fixtures import fixture

pytestmark = pytest.mark.anyio

PATH = "/v1/responses"
SIG = json.dumps(
    {"id": "rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9", "encrypted_content": "gAAAAABpPDIV-full"},
    separators=(",", ":"),
)


async def run_fixture(server: FakeServer, name: str) -> list[object]:
    server.route("POST", PATH, Reply.sse(fixture(name), every=17))
    model = Responses(server.url + "/v1", "m")
    with anyio.fail_after(LIMIT_S):
        return list(await drain(model, prompt()))


async def test_text_stream_with_cached_usage(server: FakeServer) -> None:
    assert await run_fixture(server, "responses_text.sse") == [
        TextChunk("Got"),
        TextChunk(" it"),
        UsageChunk(36, 3, 64, 0),
        Finish(FinishReason.STOP),
    ]


async def test_reasoning_summaries_encrypted_content_and_function_call_by_item_id(server: FakeServer) -> None:
    c = "call_AB6AaRZ1FYZB2RwS6A5vbdqn"
    assert await run_fixture(server, "responses_reasoning_tool.sse") == [
        ReasoningChunk("**Calcul"),
        ReasoningChunk("ating**"),
        ReasoningChunk("\n\n"),
        ReasoningChunk("Add first."),
        ReasoningChunk(signature=SIG),
        ToolStart(c, "calculator"),
        ToolInput(c, '{"'),
        ToolInput(c, "a"),
        ToolInput(c, '":12,"b":7,"op":"add"}'),
        ToolReady(c, {"a": 12, "b": 7, "op": "add"}),
        UsageChunk(134, 28, 0, 0),
        Finish(FinishReason.TOOL_CALLS),
    ]


async def test_parallel_calls_with_interleaved_argument_deltas(server: FakeServer) -> None:
    assert await run_fixture(server, "responses_parallel_tools.sse") == [
        ToolStart("call_a", "weather"),
        ToolStart("call_b", "weather"),
        ToolInput("call_b", '{"city":"Oslo"}'),
        ToolInput("call_a", '{"city":"Paris"}'),
        ToolReady("call_a", {"city": "Paris"}),
        ToolReady("call_b", {"city": "Oslo"}),
        UsageChunk(40, 20, 0, 0),
        Finish(FinishReason.TOOL_CALLS),
    ]


async def test_incomplete_for_max_output_tokens_finishes_length(server: FakeServer) -> None:
    assert await run_fixture(server, "responses_incomplete.sse") == [
        TextChunk("Once upon"),
        UsageChunk(10, 100, 0, 0),
        Finish(FinishReason.LENGTH),
    ]


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("responses_error_quota.sse", ErrorKind.MODEL_ERROR),
        ("responses_error_overloaded_flat.sse", ErrorKind.RATE_LIMITED),
        ("responses_failed_context.sse", ErrorKind.CONTEXT_TOO_LONG),
        ("responses_truncated.sse", ErrorKind.TRANSPORT_ERROR),
    ],
)
async def test_in_band_errors_failures_and_truncation_are_classified(
    server: FakeServer, name: str, kind: ErrorKind
) -> None:
    server.route("POST", PATH, Reply.sse(fixture(name)))
    model = Responses(server.url + "/v1", "m")
    with anyio.fail_after(LIMIT_S):
        _, exc = await drain_until_error(model, prompt())
    assert isinstance(exc, ModelError) and exc.kind is kind, exc


async def test_request_replays_reasoning_calls_and_outputs_by_call_id(server: FakeServer) -> None:
    server.route("POST", PATH, Reply.sse(fixture("responses_text.sse")))
    model = Responses(server.url + "/v1", "gpt-5.1", api_key="sk-x")
    msgs = [
        Message.user([Text("12+7, then *3"), Image(data="AAAA", media_type="image/jpeg")]),
        Message.assistant(
            [
                Reasoning("**Calculating**", signature=SIG),
                Reasoning("from another provider"),
                ToolCall("call_AB6AaRZ1FYZB2RwS6A5vbdqn", "calculator", {"a": 12, "b": 7, "op": "add"}),
            ]
        ),
        Message.user([ToolResult("call_AB6AaRZ1FYZB2RwS6A5vbdqn", (Text("19"),))]),
        Message.assistant("It is 19; now times 3."),
        Message.user([ToolResult("call_x", (Text("bad op"),), error=True)]),
    ]
    with anyio.fail_after(LIMIT_S):
        await drain(model, prompt(*msgs, tools=[weather_tool()], options=Options(max_output_tokens=2048)))
    body = server.requests[0].json
    assert body == {
        "model": "gpt-5.1",
        "instructions": "Be terse.",
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "12+7, then *3"},
                    {"type": "input_image", "image_url": "data:image/jpeg;base64,AAAA"},
                ],
            },
            {
                "type": "reasoning",
                "id": "rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9",
                "summary": [{"type": "summary_text", "text": "**Calculating**"}],
                "encrypted_content": "gAAAAABpPDIV-full",
            },
            {
                "type": "function_call",
                "call_id": "call_AB6AaRZ1FYZB2RwS6A5vbdqn",
                "name": "calculator",
                "arguments": '{"a": 12, "b": 7, "op": "add"}',
            },
            {"type": "function_call_output", "call_id": "call_AB6AaRZ1FYZB2RwS6A5vbdqn", "output": "19"},
            {"role": "assistant", "content": "It is 19; now times 3."},
            {"type": "function_call_output", "call_id": "call_x", "output": "Error: bad op"},
        ],
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Current weather",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            }
        ],
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "stream": True,
        "max_output_tokens": 2048,
    }


async def test_resume_is_a_usage_error_naming_the_fallback() -> None:
    model = Responses("http://127.0.0.1:1/v1", "m")
    with pytest.raises(UnsupportedOptionError, match="appending the edit"):
        model.stream(prompt(Message.user("Hi"), Message.assistant("Hel"), continue_=True))
