"""The real acp-agent process against the fake HTTP server, through ACP, with each provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_conformance.fake_model import FakeServer, Reply
from tests.providers.sse_fixtures import fixture
from tests.reliability._reliability_support import agent_env, agent_process, initialized

pytestmark = [pytest.mark.anyio, pytest.mark.process]

KEY = "sk-test-e2e-0123456789"


def _sse(*events: dict[str, Any], done: bool = True) -> bytes:
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return body + (b"data: [DONE]\n\n" if done else b"")


def _chat_tool_call() -> bytes:
    call = {
        "index": 0,
        "id": "call_ls",
        "type": "function",
        "function": {"name": "list_dir", "arguments": ""},
    }
    return _sse(
        {
            "choices": [
                {"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}, "finish_reason": None}
            ]
        },
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"path": "."}'}}]},
                    "finish_reason": None,
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    )


def _chat_text(text: str) -> bytes:
    return _sse(
        {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}},
    )


async def _prompt(
    home: Path, project: Path, env: dict[str, str], text: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    async with agent_process(home, env) as agent:
        with anyio.fail_after(30):
            await initialized(agent)
            session = (await agent.call("session/new", {"cwd": str(project), "mcpServers": []}))["sessionId"]
            start = len(agent.notifications)
            answer = await agent.response(
                await agent.request(
                    "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
                )
            )
            updates = [
                n["params"]["update"]
                for n in agent.notifications[start:]
                if n.get("method") == "session/update"
            ]
            assert agent.violations == []
            return answer, updates


def _text(updates: list[dict[str, Any]]) -> str:
    return "".join(u["content"]["text"] for u in updates if u.get("sessionUpdate") == "agent_message_chunk")


async def test_chat_completions_runs_a_tool_round_trip_through_the_agent(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("hello")
    with FakeServer() as server:
        server.route(
            "POST",
            "/v1/chat/completions",
            Reply.sse(_chat_tool_call(), every=40),
            Reply.sse(_chat_text("The project holds a.txt."), every=17),
        )
        env = agent_env(
            tmp_path / "home",
            ACP_AGENT_PROVIDER="openai",
            ACP_AGENT_BASE_URL=server.url + "/v1",
            ACP_AGENT_MODEL="local-model",
            ACP_AGENT_API_KEY=KEY,
        )
        answer, updates = await _prompt(tmp_path / "home", project, env, "What is in the project?")
        # The turn's usage: what the server reported (the tool call's reply reported none).
        usage = {
            "totalTokens": 25,
            "inputTokens": 20,
            "outputTokens": 5,
            "cachedReadTokens": 0,
            "cachedWriteTokens": 0,
        }
        assert answer["result"] == {"stopReason": "end_turn", "usage": usage}
        assert _text(updates) == "The project holds a.txt."
        calls = [u for u in updates if u.get("sessionUpdate") == "tool_call"]
        assert calls and calls[0]["toolCallId"] == "call_ls"
        done = [
            u
            for u in updates
            if u.get("sessionUpdate") == "tool_call_update" and u.get("status") == "completed"
        ]
        assert done, "the list_dir call completed"
        posts = [r for r in server.requests if r.method == "POST"]  # the model list is a GET
        second = posts[1].json
        assert second["model"] == "local-model" and second["stream"] is True
        tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
        assert tool_messages[0]["tool_call_id"] == "call_ls" and "a.txt" in tool_messages[0]["content"]
        assert posts[0].headers["authorization"] == f"Bearer {KEY}"
    logs = list((tmp_path / "home").rglob("*"))
    assert all(KEY not in p.read_text(errors="replace") for p in logs if p.is_file()), (
        "the key never reaches disk"
    )


async def test_the_responses_api_streams_a_reply_through_the_agent(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with FakeServer() as server:
        server.route("POST", "/v1/responses", Reply.sse(fixture("responses_text.sse"), every=29))
        env = agent_env(
            tmp_path / "home",
            ACP_AGENT_PROVIDER="openai-responses",
            ACP_AGENT_BASE_URL=server.url + "/v1",
            ACP_AGENT_MODEL="gpt-test",
            ACP_AGENT_API_KEY=KEY,
        )
        answer, updates = await _prompt(tmp_path / "home", project, env, "Say hello.")
        # Responses' input_tokens include the cached ones, which PromptResponse.usage names apart.
        usage = {
            "totalTokens": 103,
            "inputTokens": 100,
            "outputTokens": 3,
            "cachedReadTokens": 64,
            "cachedWriteTokens": 0,
        }
        assert answer["result"] == {"stopReason": "end_turn", "usage": usage}
        assert _text(updates)
        posts = [r for r in server.requests if r.method == "POST"]
        assert posts[0].json["model"] == "gpt-test"


async def test_anthropic_messages_streams_a_reply_through_the_agent(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with FakeServer() as server:
        server.route("POST", "/v1/messages", Reply.sse(fixture("anthropic_basic.sse"), every=23))
        env = agent_env(
            tmp_path / "home",
            ACP_AGENT_PROVIDER="anthropic",
            ACP_AGENT_BASE_URL=server.url,
            ACP_AGENT_MODEL="claude-test",
            ACP_AGENT_API_KEY=KEY,
        )
        answer, updates = await _prompt(tmp_path / "home", project, env, "Say hello.")
        usage = {
            "totalTokens": 17,
            "inputTokens": 11,
            "outputTokens": 6,
            "cachedReadTokens": 0,
            "cachedWriteTokens": 0,
        }
        assert answer["result"] == {"stopReason": "end_turn", "usage": usage}
        assert _text(updates) == "Hello there!"
        posts = [r for r in server.requests if r.method == "POST"]
        assert posts[0].headers["x-api-key"] == KEY
        assert posts[0].json["model"] == "claude-test"


async def test_an_unreachable_endpoint_fails_the_prompt_with_a_message_a_person_can_act_on(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with FakeServer() as server:
        url = server.url
    env = agent_env(
        tmp_path / "home",
        ACP_AGENT_PROVIDER="openai",
        ACP_AGENT_BASE_URL=url + "/v1",
        ACP_AGENT_MODEL="m",
        ACP_AGENT_API_KEY=KEY,
    )
    answer, _ = await _prompt(tmp_path / "home", project, env, "hi")
    error = answer["error"]
    assert error["code"] == -32603 and error["data"]["errorKind"] == "transport_error"
    assert url in error["message"] and KEY not in json.dumps(error)
