"""The attacker's test bench for the trust and secrets suites: the real ``acp-agent`` process, a scripted
OpenAI-compatible model over HTTP issuing chosen tool calls, and a client that answers every permission
request as the test says (by default: rejects it).

- ``ScriptedModel``: a local HTTP server (``acp_conformance.fake_model``) answering
  ``/v1/chat/completions`` with the next scripted step (``tool(name, input)`` or ``text(...)``), streamed in
  the exact Chat Completions wire format; every request is recorded with its headers (``requests``).
- ``Client``: an ``AgentProcess`` that also answers the agent's own requests (``permission`` picks an
  option kind, ``reject_once`` by default) and keeps them (``requests_of``).
- ``client(home, env)``: spawns the agent; ``open_session`` / ``prompt`` drive it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from acp_conformance.fake_model import FakeServer, Recorded, Reply
from tests.reliability._reliability_support import AgentProcess, agent_env, agent_process, initialized

__all__ = [
    "KEY",
    "Client",
    "ScriptedModel",
    "agent_env",
    "client",
    "files_holding",
    "open_session",
    "prompt",
    "text",
    "tool",
]

KEY = "sk-test-USERS-OWN-KEY-0123456789"
"""The user's API key, as the environment gives it to the agent."""


def _sse(*events: dict[str, Any]) -> bytes:
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return body + b"data: [DONE]\n\n"


def tool(name: str, arguments: Mapping[str, Any], call_id: str = "call_1") -> bytes:
    """A streamed assistant turn that calls one tool."""
    call = {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}
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
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": json.dumps(arguments)}}]},
                    "finish_reason": None,
                }
            ]
        },
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    )


def text(words: str) -> bytes:
    """A streamed assistant turn that answers in text."""
    return _sse(
        {"choices": [{"index": 0, "delta": {"content": words}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    )


class ScriptedModel:
    """An OpenAI-compatible endpoint replaying ``steps`` (one per completion request; then "done")."""

    def __init__(self, *steps: bytes) -> None:
        self.steps = list(steps)
        self.server = FakeServer()

        def next_step(_request: Recorded) -> Reply:
            body = self.steps.pop(0) if self.steps else text("done")
            return Reply.sse(body)

        self.server.route("POST", "/v1/chat/completions", next_step)
        self.server.route("GET", "/v1/models", Reply.json(200, {"object": "list", "data": [{"id": "m"}]}))

    @property
    def url(self) -> str:
        return self.server.url + "/v1"

    @property
    def requests(self) -> list[Recorded]:
        return list(self.server.requests)

    def completions(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def __enter__(self) -> ScriptedModel:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.close()


def _reject(options: list[dict[str, Any]]) -> str:
    return next(o["optionId"] for o in options if o.get("kind") == "reject_once")


def choose(kind: str) -> Callable[[list[dict[str, Any]]], str]:
    """A permission policy picking the first option of ``kind`` (``allow_always``, ``allow_once``…)."""
    return lambda options: next(o["optionId"] for o in options if o.get("kind") == kind)


@dataclass
class Client(AgentProcess):
    """The client side: keeps the agent's requests and answers them (permissions by ``permission``)."""

    requests: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    permission: Callable[[list[dict[str, Any]]], str] = _reject
    _pending: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    _arrived: anyio.Event = field(default_factory=anyio.Event)

    def _check_message(self, message: dict[str, Any]) -> None:
        super()._check_message(message)
        if isinstance(message.get("method"), str) and "id" in message:
            self.requests.append(message)
            self._pending.append(message)
            self._arrived.set()

    def requests_of(self, method: str) -> list[dict[str, Any]]:
        return [r["params"] for r in self.requests if r["method"] == method]

    async def answer_requests(self) -> None:
        while True:
            await self._arrived.wait()
            self._arrived = anyio.Event()
            while self._pending:
                request = self._pending.pop(0)
                if request["method"] == "session/request_permission":
                    chosen = self.permission(request["params"]["options"])
                    reply: dict[str, Any] = {"outcome": {"outcome": "selected", "optionId": chosen}}
                    await self.send({"jsonrpc": "2.0", "id": request["id"], "result": reply})
                else:
                    error = {"code": -32601, "message": f"{request['method']} is not offered by this client"}
                    await self.send({"jsonrpc": "2.0", "id": request["id"], "error": error})

    def texts(self, session_id: str) -> str:
        """Every agent message chunk of the session, joined."""
        out: list[str] = []
        for message in self.notifications:
            params: dict[str, Any] = message.get("params") or {}
            update: dict[str, Any] = params.get("update") or {}
            if params.get("sessionId") == session_id and update.get("sessionUpdate") == "agent_message_chunk":
                content: dict[str, Any] = update.get("content") or {}
                out.append(str(content.get("text", "")))
        return "".join(out)


@asynccontextmanager
async def client(home: Path, env: Mapping[str, str]) -> AsyncGenerator[Client]:
    """The agent (``python -m acp_agent``) with ``env``, initialized; closed (and reaped) at the end."""
    async with (
        agent_process(home, env, keep_stdout=True, kind=Client) as agent,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(agent.answer_requests)
        with anyio.fail_after(60):
            await initialized(agent)
        yield agent
        tg.cancel_scope.cancel()


async def open_session(agent: Client, cwd: Path) -> str:
    with anyio.fail_after(60):
        return (await agent.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["sessionId"]


async def prompt(agent: Client, session_id: str, words: str = "go") -> dict[str, Any]:
    """One turn; returns the answer (result or error)."""
    with anyio.fail_after(90):
        request = await agent.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": words}]}
        )
        return await agent.response(request)


def files_holding(root: Path, needle: bytes) -> list[str]:
    """Every file under ``root`` whose bytes contain ``needle``."""
    return [
        str(p) for p in root.rglob("*") if p.is_file() and not p.is_symlink() and needle in p.read_bytes()
    ]
