"""Replies as real models send them, in each provider's wire format, for the real agent process.

``chat_call``/``chat_text`` stream Chat Completions chunks (llama.cpp, vLLM, Ollama and OpenAI write these),
``anthropic_call`` a Messages stream with a ``tool_use`` block whose ``input_json_delta`` carries the
model's raw arguments. ``robust_agent`` runs ``python -m acp_agent`` on a ``FakeServer``, allowing each
permission it asks for; ``sent_tool_results`` reads what reached the model in a later request.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_conformance.fake_model import FakeServer
from tests.acp.models._support import Agent
from tests.acp_client import spawned_agent

__all__ = [
    "RobustAgent",
    "anthropic_call",
    "anthropic_text",
    "chat_call",
    "chat_text",
    "posts",
    "robust_agent",
    "sent_tool_results",
]

KEY = "sk-robust-test-0123456789abcdef"


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def chat_call(name: str, arguments: str, call_id: str = "call_1", *, finish: str = "tool_calls") -> bytes:
    """One streamed tool call whose arguments text arrives in two pieces, exactly as the model wrote it."""
    half = len(arguments) // 2
    first = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
    return _sse(
        _chunk({"role": "assistant", "content": None, "tool_calls": [first]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[:half]}}]}),
        _chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[half:]}}]}),
        _chunk({}, finish),
        {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59}},
    )


def chat_text(text: str, *, finish: str = "stop", pieces: int = 3) -> bytes:
    """A text reply streamed in ``pieces`` chunks (a text call's markers may be cut between them)."""
    step = max(1, len(text) // pieces)
    chunks = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": text[i : i + step]}) for i in range(0, len(text), step)]
    chunks.append(_chunk({}, finish))
    chunks.append({"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59}})
    return _sse(*chunks)


def _anthropic(*events: tuple[str, dict[str, Any]]) -> bytes:
    return b"".join(f"event: {k}\ndata: {json.dumps({'type': k, **v})}\n\n".encode() for k, v in events)


def _message_start() -> tuple[str, dict[str, Any]]:
    message: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 50, "output_tokens": 1},
    }
    return ("message_start", {"message": message})


def anthropic_call(name: str, partial_json: str, call_id: str = "toolu_1") -> bytes:
    block: dict[str, Any] = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    half = len(partial_json) // 2
    return _anthropic(
        _message_start(),
        ("content_block_start", {"index": 0, "content_block": block}),
        (
            "content_block_delta",
            {"index": 0, "delta": {"type": "input_json_delta", "partial_json": partial_json[:half]}},
        ),
        (
            "content_block_delta",
            {"index": 0, "delta": {"type": "input_json_delta", "partial_json": partial_json[half:]}},
        ),
        ("content_block_stop", {"index": 0}),
        ("message_delta", {"delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}),
        ("message_stop", {}),
    )


def anthropic_text(text: str) -> bytes:
    return _anthropic(
        _message_start(),
        ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"index": 0}),
        ("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
        ("message_stop", {}),
    )


@dataclass
class RobustAgent(Agent):
    """The models suite's agent handle, with the project folder the replies work in."""

    project: Path


async def _allow(method: str, params: Any) -> Any:
    if method == "session/request_permission":
        allow = next(o["optionId"] for o in params["options"] if o.get("kind") == "allow_once")
        return {"outcome": {"outcome": "selected", "optionId": allow}}
    raise AssertionError(f"unexpected request {method}")


@asynccontextmanager
async def robust_agent(
    tmp: Path, server: FakeServer, *, provider: str = "openai", model: str = "local-model"
) -> AsyncGenerator[RobustAgent]:
    """The agent on ``server`` with a session open in ``tmp/project`` (created), every permission allowed."""
    project = tmp / "project"
    project.mkdir(exist_ok=True)
    user = tmp / "user"
    (user / ".config").mkdir(parents=True, exist_ok=True)
    env = {
        "HOME": str(user),
        "XDG_CONFIG_HOME": str(user / ".config"),
        "ACP_AGENT_PROVIDER": provider,
        "ACP_AGENT_BASE_URL": server.url + ("/v1" if provider.startswith("openai") else ""),
        "ACP_AGENT_MODEL": model,
        "ACP_AGENT_API_KEY": KEY,
    }
    home = tmp / "home"
    async with spawned_agent(home, project, env, on_request=_allow) as client:
        await client.initialize()
        session = await client.new_session(str(project))
        yield RobustAgent(client, session, home, project)


def posts(server: FakeServer) -> list[dict[str, Any]]:
    """The model requests' bodies (the model list is a GET)."""
    return [r.json for r in server.requests if r.method == "POST"]


def sent_tool_results(body: dict[str, Any]) -> list[str]:
    """The tool results a request carries, in either wire format, as text."""
    out: list[str] = []
    for m in body.get("messages", []):
        if m.get("role") == "tool":
            out.append(m["content"] if isinstance(m["content"], str) else json.dumps(m["content"]))
        elif isinstance(m.get("content"), list):
            for part in m["content"]:
                if part.get("type") == "tool_result":
                    c: Any = part.get("content")
                    items: list[dict[str, Any]] = [] if isinstance(c, str) else list(c or [])
                    out.append(c if isinstance(c, str) else "".join(str(x.get("text", "")) for x in items))
    return out
