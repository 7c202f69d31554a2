"""ChatCompletions against replayed streams of each server flavour, and the exact requests it sends."""

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
from harness.providers import ChatCompletions
from tests.providers.provider_support import LIMIT_S, drain, drain_until_error, prompt, weather_tool
from tests.providers.sse_fixtures import fixture

pytestmark = pytest.mark.anyio

PATH = "/v1/chat/completions"


async def run_fixture(server: FakeServer, name: str, every: int | None = 11) -> list[object]:
    server.route("POST", PATH, Reply.sse(fixture(name), every=every))
    model = ChatCompletions(server.url + "/v1", "m")
    try:
        with anyio.fail_after(LIMIT_S):
            return list(await drain(model, prompt()))
    finally:
        await model.aclose()


async def test_openai_text_stream_yields_text_then_usage_with_cached_tokens_subtracted(
    server: FakeServer,
) -> None:
    assert await run_fixture(server, "chat_openai_text.sse", every=5) == [
        TextChunk("Grüße"),
        TextChunk(" aus Köln ☕"),
        TextChunk("."),
        UsageChunk(input=16, output=300, cache_read=1000, cache_write=0),
        Finish(FinishReason.STOP),
    ]


async def test_openai_length_finish_with_usage_after_it(server: FakeServer) -> None:
    assert await run_fixture(server, "chat_openai_length.sse") == [
        TextChunk('{"'),
        UsageChunk(79, 1, 0, 0),
        Finish(FinishReason.LENGTH),
    ]


async def test_openai_parallel_tool_calls_keyed_by_index(server: FakeServer) -> None:
    a, b = "call_JMW1whyEaYG438VE1OIflxA2", "call_DNYTawLBoN8fj3KN6qU9N1Ou"
    assert await run_fixture(server, "chat_openai_parallel_tools.sse") == [
        ToolStart(a, "GetWeatherArgs"),
        ToolInput(a, '{"ci'),
        ToolInput(a, 'ty": '),
        ToolInput(a, '"Edinburgh", '),
        ToolInput(a, '"units": "'),
        ToolInput(a, 'c"}'),
        ToolStart(b, "get_stock_price"),
        ToolInput(b, '{"ti'),
        ToolInput(b, 'cker": "AAPL"}'),
        ToolReady(a, {"city": "Edinburgh", "units": "c"}),
        ToolReady(b, {"ticker": "AAPL"}),
        UsageChunk(149, 60, 0, 0),
        Finish(FinishReason.TOOL_CALLS),
    ]


async def test_vllm_tool_call_whose_first_fragment_has_no_arguments(server: FakeServer) -> None:
    t = "chatcmpl-tool-ca99dda515524c6abe47d1ea22813507"
    assert await run_fixture(server, "chat_vllm_tool.sse") == [
        ToolStart(t, "run_command"),
        ToolInput(t, '{"command": "'),
        ToolInput(t, "ls"),
        ToolInput(t, '"}'),
        ToolReady(t, {"command": "ls"}),
        Finish(FinishReason.TOOL_CALLS),
    ]


async def test_vllm_reasoning_field_becomes_reasoning(server: FakeServer) -> None:
    assert await run_fixture(server, "chat_vllm_reasoning.sse") == [
        ReasoningChunk("Two plus"),
        ReasoningChunk(" two."),
        TextChunk("4"),
        UsageChunk(12, 8, 0, 0),
        Finish(FinishReason.STOP),
    ]


async def test_llamacpp_reasoning_content_tool_call_and_cached_usage(server: FakeServer) -> None:
    t = "v2dhUNilw8En9qFqCAHEz5Ow0GnQsclc"
    assert await run_fixture(server, "chat_llamacpp_tool.sse", every=3) == [
        ReasoningChunk("Need to list."),
        ToolStart(t, "run_command"),
        ToolInput(t, '{"'),
        ToolInput(t, "command"),
        ToolInput(t, '": "ls"}'),
        ToolReady(t, {"command": "ls"}),
        UsageChunk(63, 21, 400, 0),
        Finish(FinishReason.TOOL_CALLS),
    ]


async def test_ollama_whole_calls_in_one_delta_each_with_role_repeated(server: FakeServer) -> None:
    assert await run_fixture(server, "chat_ollama_parallel.sse") == [
        ToolStart("call_809l7n8f", "run_command"),
        ToolInput("call_809l7n8f", '{"command":"ls -la"}'),
        ToolStart("call_oqp1e2a1", "run_command"),
        ToolInput("call_oqp1e2a1", '{"command":"ls -la","cwd":"/path/to/directory"}'),
        ToolReady("call_809l7n8f", {"command": "ls -la"}),
        ToolReady("call_oqp1e2a1", {"command": "ls -la", "cwd": "/path/to/directory"}),
        Finish(FinishReason.TOOL_CALLS),
    ]


async def test_deepseek_usage_on_the_finish_chunk(server: FakeServer) -> None:
    assert await run_fixture(server, "chat_deepseek_reasoning.sse") == [
        ReasoningChunk("We"),
        ReasoningChunk(" add."),
        TextChunk("5"),
        UsageChunk(18, 219, 0, 0, 205),  # 205 of the 219 were reasoning
        Finish(FinishReason.STOP),
    ]


async def test_tabby_crlf_pings_and_usage_chunk_repeating_finish_reason_finish_once(
    server: FakeServer,
) -> None:
    assert await run_fixture(server, "chat_tabby_usage.sse", every=7) == [
        TextChunk("Hi"),
        TextChunk(" there"),
        UsageChunk(30, 2, 0, 0),
        Finish(FinishReason.STOP),
    ]


async def test_openrouter_comments_data_without_space_reasoning_objects_and_changing_ids(
    server: FakeServer,
) -> None:
    assert await run_fixture(server, "chat_openrouter.sse") == [
        ReasoningChunk("partA"),
        ReasoningChunk("partB"),
        ToolStart("chatcmpl-tool-a", "read"),
        ToolInput("chatcmpl-tool-a", '{"path":"README'),
        ToolInput("chatcmpl-tool-a", '.md"}'),
        ToolReady("chatcmpl-tool-a", {"path": "README.md"}),
        UsageChunk(50, 9, 0, 0),
        Finish(FinishReason.TOOL_CALLS),
    ]


async def test_raw_think_tags_in_content_split_across_chunks_become_reasoning(server: FakeServer) -> None:
    assert await run_fixture(server, "chat_think_tags.sse") == [
        ReasoningChunk("Let me see"),
        ReasoningChunk("."),
        TextChunk("It is 4."),
        Finish(FinishReason.STOP),
    ]


async def test_records_split_mid_line_and_mid_utf8_at_every_offset_parse_the_same(server: FakeServer) -> None:
    data = fixture("chat_openai_text.sse")
    first = data.index("ü".encode()) + 1  # inside the two bytes of ü
    server.route("POST", PATH, Reply.sse(data, split_at=[first, first + 40, first + 41]))
    model = ChatCompletions(server.url + "/v1", "m")
    with anyio.fail_after(LIMIT_S):
        got = await drain(model, prompt())
    await model.aclose()
    assert [d for d in got if isinstance(d, TextChunk)] == [
        TextChunk("Grüße"),
        TextChunk(" aus Köln ☕"),
        TextChunk("."),
    ]


async def test_in_band_server_error_without_done_is_a_transport_error(server: FakeServer) -> None:
    server.route("POST", PATH, Reply.sse(fixture("chat_llamacpp_midstream_error.sse")))
    model = ChatCompletions(server.url + "/v1", "m")
    with anyio.fail_after(LIMIT_S):
        got, exc = await drain_until_error(model, prompt())
    assert got == []
    assert isinstance(exc, ModelError) and exc.kind is ErrorKind.TRANSPORT_ERROR
    assert "failed to decode the batch" in exc.message


async def test_vllm_unwrapped_in_band_context_error_is_context_too_long(server: FakeServer) -> None:
    server.route("POST", PATH, Reply.sse(fixture("chat_vllm_unwrapped_error.sse")))
    model = ChatCompletions(server.url + "/v1", "m")
    with anyio.fail_after(LIMIT_S):
        _, exc = await drain_until_error(model, prompt())
    assert isinstance(exc, ModelError) and exc.kind is ErrorKind.CONTEXT_TOO_LONG


async def test_stream_ending_without_finish_or_done_is_a_transport_error(server: FakeServer) -> None:
    server.route("POST", PATH, Reply.sse(fixture("chat_truncated.sse")))
    model = ChatCompletions(server.url + "/v1", "m")
    with anyio.fail_after(LIMIT_S):
        got, exc = await drain_until_error(model, prompt())
    assert got == [TextChunk("Half")]
    assert isinstance(exc, ModelError) and exc.kind is ErrorKind.TRANSPORT_ERROR


async def test_tool_call_cut_by_length_is_not_marked_ready(server: FakeServer) -> None:
    env = '"id":"c","object":"chat.completion.chunk","created":1,"model":"m"'
    body = (
        'data: {ENV,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function",'
        '"function":{"name":"w","arguments":"{\\"ci"}}]},"finish_reason":null}]}\n\n'
        'data: {ENV,"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\ndata: [DONE]\n\n'
    ).replace("ENV", env)
    server.route("POST", PATH, Reply.sse(body.encode()))
    model = ChatCompletions(server.url + "/v1", "m")
    with anyio.fail_after(LIMIT_S):
        got = await drain(model, prompt())
    assert got == [ToolStart("call_1", "w"), ToolInput("call_1", '{"ci'), Finish(FinishReason.LENGTH)]


# -- requests ------------------------------------------------------------------------------------


def conversation() -> list[Message]:
    return [
        Message.user(
            [
                Text("What is in this picture, and the weather?"),
                Image(data="iVBORw0KGgo=", media_type="image/png"),
            ]
        ),
        Message.assistant(
            [
                Reasoning("User wants weather.", signature="sig-1"),
                Text("Checking."),
                ToolCall("call_1", "get_weather", {"city": "Paris"}),
                ToolCall("call_2", "get_weather", {"city": "Oslo"}),
            ]
        ),
        Message.user(
            [
                ToolResult("call_1", (Text("15°C"),)),
                ToolResult(
                    "call_2", (Text("unknown city"), Image(url="https://example.com/map.png")), error=True
                ),
            ]
        ),
    ]


async def test_request_body_carries_tools_tool_results_images_and_usage_option(server: FakeServer) -> None:
    server.route("POST", PATH, Reply.sse(fixture("chat_openai_text.sse")))
    model = ChatCompletions(server.url + "/v1", "qwen3", api_key="sk-local-123")
    p = prompt(
        *conversation(), tools=[weather_tool()], options=Options(max_output_tokens=256, temperature=0.2)
    )
    with anyio.fail_after(LIMIT_S):
        await drain(model, p)
    req = server.requests[0]
    assert req.path == PATH
    assert req.headers["authorization"] == "Bearer sk-local-123"
    assert req.json == {
        "model": "qwen3",
        "messages": [
            {"role": "system", "content": "Be terse."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in this picture, and the weather?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                ],
            },
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "15°C"},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: unknown city"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Images from the tool results above:"},
                    {"type": "image_url", "image_url": {"url": "https://example.com/map.png"}},
                ],
            },
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Current weather",
                    "parameters": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"],
                    },
                },
            }
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 256,
        "temperature": 0.2,
    }


async def test_reasoning_is_sent_back_as_reasoning_content_when_enabled(server: FakeServer) -> None:
    server.route("POST", PATH, Reply.sse(fixture("chat_openai_text.sse")))
    model = ChatCompletions(server.url + "/v1", "glm", send_reasoning=True)
    with anyio.fail_after(LIMIT_S):
        await drain(model, prompt(*conversation()))
    assistant = server.requests[0].json["messages"][2]
    assert assistant["reasoning_content"] == "User wants weather."


async def test_openai_gets_max_completion_tokens_and_knobs_merge_last() -> None:
    model = ChatCompletions("https://api.openai.com/v1", "gpt-5")
    p = prompt(
        options=Options(
            max_output_tokens=100,
            provider={"openai": {"reasoning_effort": "low", "stream": True, "max_completion_tokens": 50}},
        )
    )
    body = model.build_request(p)
    assert "max_tokens" not in body
    assert body["max_completion_tokens"] == 50
    assert body["reasoning_effort"] == "low"


async def test_continuation_sends_the_edit_last_with_vllm_flags(server: FakeServer) -> None:
    server.route("POST", PATH, Reply.sse(fixture("chat_openai_text.sse")))
    model = ChatCompletions(server.url + "/v1", "m")
    p = prompt(
        Message.user("Count to five."),
        Message.assistant([Reasoning("hm"), Text("One. Four.")]),
        continue_=True,
    )
    with anyio.fail_after(LIMIT_S):
        await drain(model, p)
    body = server.requests[0].json
    assert body["messages"][-1] == {"role": "assistant", "content": "One. Four."}
    assert body["continue_final_message"] is True
    assert body["add_generation_prompt"] is False


async def test_continuation_as_plain_prefill_for_llamacpp() -> None:
    model = ChatCompletions("http://127.0.0.1:8080/v1", "m", continuation="prefill")
    body = model.build_request(prompt(Message.user("Hi"), Message.assistant("Hel"), continue_=True))
    assert body["messages"][-1] == {"role": "assistant", "content": "Hel"}
    assert "continue_final_message" not in body and "add_generation_prompt" not in body


async def test_continuation_on_openai_is_a_usage_error_naming_the_fallback() -> None:
    model = ChatCompletions("https://api.openai.com/v1", "gpt-5")
    with pytest.raises(UnsupportedOptionError, match="appending the edit as a finished assistant message"):
        model.stream(prompt(Message.user("Hi"), Message.assistant("Hel"), continue_=True))
