"""A provider inside a real Run: retry on 529, a tool round trip, thinking kept with its signature."""

from __future__ import annotations

import anyio
import pytest

from acp_conformance.fake_model import FakeServer, Reply
from harness import EndReason, Message, Reasoning, Run, Tools, tool
from harness.providers import Messages, RetryModel
from tests.providers.provider_support import LIMIT_S
from tests.providers.sse_fixtures import fixture

pytestmark = pytest.mark.anyio


@tool
async def get_weather(location: str) -> str:
    """Current weather."""
    return f"15°C in {location}"


async def test_a_run_retries_overload_calls_the_tool_and_sends_the_result_back(server: FakeServer) -> None:
    server.route(
        "POST",
        "/v1/messages",
        Reply.json(
            529,
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            {"retry-after": "0"},
        ),
        Reply.sse(fixture("anthropic_tool_use.sse")),
        Reply.sse(fixture("anthropic_thinking.sse")),
    )
    run = Run(Messages(server.url, "claude"), Tools(get_weather), system="sys", middleware=[RetryModel()])
    with anyio.fail_after(LIMIT_S):
        async with run.turn(Message.user("Weather in Paris?")) as events:
            async for _ in events:
                pass
    ended = run.ended()
    assert ended is not None and ended.reason is EndReason.DONE
    assert len(server.requests) == 3
    assert server.requests[2].json["messages"][2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_01NRLabsLyVHZPKxbKvkfSMn",
                "content": [{"type": "text", "text": "15°C in Paris"}],
                "cache_control": {"type": "ephemeral"},  # the last message: where the cache is written
            }
        ],
    }
    last = ended.appended[-1]
    assert [p for p in last.parts if isinstance(p, Reasoning)][1] == Reasoning(
        "", redacted="redacted-thinking-data"
    )
    assert last.text == "925 / 5 = 185"
