"""Through the real process: an SSE-framed error body becomes a clean message, an empty reply says so,
a failed turn writes its log line (at the default log level, the key redacted)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from acp_conformance.fake_model import FakeServer, Reply
from tests.acp.models._support import KEY, chat_text, models_agent, sse
from tests.providers.model_lists import route_vllm

pytestmark = [pytest.mark.anyio, pytest.mark.process]

LIMIT_S = 60


def _framed_error(message: str) -> Reply:
    body = sse({"error": {"message": message, "type": "invalid_request_error", "param": None, "code": "400"}})
    return Reply(400, {"content-type": "text/event-stream"}, [body])


async def test_an_sse_framed_error_body_reaches_the_editor_as_the_servers_sentence(tmp_path: Path) -> None:
    with FakeServer() as server:
        route_vllm(server, "qwen3-coder", 40960)
        server.route(
            "POST",
            "/v1/chat/completions",
            _framed_error("litellm.BadRequestError: the model qwen3-coder does not support tools"),
        )
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "qwen3-coder") as agent:
                answer = await agent.prompt("hi")
        message = answer["error"]["message"]
        assert "the model qwen3-coder does not support tools" in message
        assert "data:" not in message and "[DONE]" not in message and '{"' not in message


async def test_a_failed_turn_writes_one_log_line_with_the_session_kind_and_message(tmp_path: Path) -> None:
    with FakeServer() as server:
        route_vllm(server, "qwen3-coder", 40960)
        # The server echoes the key: the log line must not.
        server.route("POST", "/v1/chat/completions", _framed_error(f"Incorrect API key provided: {KEY}"))
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "qwen3-coder") as agent:
                answer = await agent.prompt("hi")
                session = agent.session
        log = agent.stderr()
    assert "error" in answer
    lines = [line for line in log.splitlines() if "turn failed" in line]
    assert len(lines) == 1, log
    assert f"session {session}: turn failed (model_error)" in lines[0]
    assert "Incorrect API key provided" in lines[0] and "WARNING" in lines[0]
    assert KEY not in log


async def test_an_empty_reply_says_the_model_returned_no_text(tmp_path: Path) -> None:
    with FakeServer() as server:
        route_vllm(server, "qwen3-coder", 40960)
        server.route("POST", "/v1/chat/completions", Reply.sse(chat_text("", 300)))
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "qwen3-coder") as agent:
                answer = await agent.prompt("hi")
                assert answer["result"]["stopReason"] == "end_turn"
                assert agent.text().strip() == "The model returned no text."


async def test_an_empty_reply_cut_at_the_output_limit_names_the_finish_reason(tmp_path: Path) -> None:
    with FakeServer() as server:
        route_vllm(server, "qwen3-coder", 40960)
        server.route("POST", "/v1/chat/completions", Reply.sse(chat_text("", 300, finish="length")))
        with anyio.fail_after(LIMIT_S):
            async with models_agent(tmp_path, server, "qwen3-coder") as agent:
                answer = await agent.prompt("hi")
                assert answer["result"]["stopReason"] == "max_tokens"
                assert agent.text().strip() == (
                    "The model returned no text; finish reason: length "
                    "(it reached its output limit before writing any)."
                )
