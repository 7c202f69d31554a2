"""The real ``acp-agent`` process against the conformance kit's fake model server (OpenAI Chat
Completions), in a project folder and a user folder of the test's making; what reached the model is read
back from the requests."""

from __future__ import annotations

import itertools
import json
import subprocess
from collections.abc import AsyncGenerator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from acp_conformance.fake_model import FakeServer, Reply
from tests.reliability._reliability_support import AgentProcess, agent_env, agent_process, initialized

__all__ = ["Project", "calls", "project_agent", "text", "told", "user_messages"]

KEY = "sk-test-instructions-0123456789"
LIMIT_S = 30


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def text(reply: str) -> Reply:
    """A streamed text reply."""
    return Reply.sse(
        _sse(
            {
                "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": reply}, "finish_reason": None}
                ]
            },
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ),
        every=37,
    )


_replies = itertools.count()


def calls(*items: tuple[str, dict[str, Any]], id: str | None = None) -> Reply:
    """A streamed reply calling tools, with ids ``<id>_0``, ``<id>_1``, … (``id`` unique by default)."""
    prefix = id or f"call{next(_replies)}"
    deltas = [
        {
            "index": i,
            "id": f"{prefix}_{i}",
            "type": "function",
            "function": {"name": n, "arguments": json.dumps(a)},
        }
        for i, (n, a) in enumerate(items)
    ]
    return Reply.sse(
        _sse(
            {
                "choices": [
                    {"index": 0, "delta": {"role": "assistant", "tool_calls": deltas}, "finish_reason": None}
                ]
            },
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        ),
        every=41,
    )


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


@dataclass
class Project:
    """A running agent with one session in ``cwd``; ``server`` is the fake model server. The agent's
    permission requests are answered with ``choose(params)`` (an option id; allow once by default) and kept
    in ``asked``."""

    agent: AgentProcess
    server: FakeServer
    session: str
    cwd: Path
    asked: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    choose: Callable[[dict[str, Any]], str] = lambda params: "allow_once"

    def bodies(self) -> list[dict[str, Any]]:
        """The JSON body of every model request so far."""
        return [r.json for r in self.server.requests if r.method == "POST"]

    def updates(self) -> list[dict[str, Any]]:
        return [
            n["params"]["update"] for n in self.agent.notifications if n.get("method") == "session/update"
        ]

    async def prompt(self, prompt: str) -> dict[str, Any]:
        with anyio.fail_after(LIMIT_S):
            answer = await self.agent.response(
                await self.agent.request(
                    "session/prompt",
                    {"sessionId": self.session, "prompt": [{"type": "text", "text": prompt}]},
                )
            )
        assert self.agent.violations == []
        return answer


def system_of(body: dict[str, Any]) -> str:
    first = body["messages"][0]
    assert first["role"] == "system", first
    return str(first["content"])


def tool_messages(body: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def _without_context(content: Any) -> Any:
    if isinstance(content, str) and content.startswith("<context>\n"):
        return content.split("\n</context>\n\n", 1)[1]
    return content


def user_messages(body: dict[str, Any]) -> list[Any]:
    """The user messages' content, without the context the agent tells in front of a prompt."""
    return [_without_context(m["content"]) for m in body["messages"] if m["role"] == "user"]


def told(body: dict[str, Any]) -> str:
    """Everything the request tells of the session's context: the system prompt, then each context part
    in front of a prompt (the environment, what changed since)."""
    contexts = [
        str(m["content"]).split("\n</context>\n\n", 1)[0]
        for m in body["messages"]
        if m["role"] == "user" and str(m["content"]).startswith("<context>\n")
    ]
    return "\n\n".join([system_of(body), *contexts])


@asynccontextmanager
async def project_agent(
    tmp: Path,
    replies: Sequence[Reply],
    *,
    cwd: Path | None = None,
    mode: str | None = None,
    environ: dict[str, str] | None = None,
    started_in_project: bool = False,
) -> AsyncGenerator[Project]:
    """The agent (a real process) with its model at the fake server, ``HOME`` and ``XDG_CONFIG_HOME``
    in ``tmp/user``, and a session in ``cwd`` (default ``tmp/project``); ``started_in_project``: the process
    starts in that folder too (as an editor starts it: the start-up configuration is the project's)."""
    project = cwd or tmp / "project"
    project.mkdir(parents=True, exist_ok=True)
    user = tmp / "user"
    (user / ".config").mkdir(parents=True, exist_ok=True)
    with FakeServer() as server:
        server.route("POST", "/v1/chat/completions", *replies)
        extra = {
            "ACP_AGENT_PROVIDER": "openai",
            "ACP_AGENT_BASE_URL": server.url + "/v1",
            "ACP_AGENT_MODEL": "fake-model",
            "ACP_AGENT_API_KEY": KEY,
            "HOME": str(user),
            "XDG_CONFIG_HOME": str(user / ".config"),
            **({"ACP_AGENT_DEFAULT_MODE": mode} if mode else {}),
            **(environ or {}),
        }
        home = tmp / "agent-home"
        async with (
            agent_process(
                home,
                agent_env(home, None, **extra),
                kind=_Answered,
                cwd=project if started_in_project else None,
            ) as agent,
            anyio.create_task_group() as tg,
        ):
            sent, requests = _answering(agent)
            with anyio.fail_after(LIMIT_S):
                await initialized(agent)
                result = await agent.call("session/new", {"cwd": str(project), "mcpServers": []})
            p = Project(agent, server, result["sessionId"], project)
            tg.start_soon(_answer, p, requests)
            try:
                yield p
            finally:
                tg.cancel_scope.cancel()
                sent.close()  # an unclosed memory stream is a ResourceWarning
                requests.close()


@dataclass
class _Answered(AgentProcess):
    """The reliability client, which only records the agent's requests; these also go to ``inbox``."""

    inbox: MemoryObjectSendStream[dict[str, Any]] | None = None

    def _check_message(self, message: dict[str, Any]) -> None:
        super()._check_message(message)
        if "method" in message and "id" in message and self.inbox is not None:
            self.inbox.send_nowait(message)


def _answering(
    agent: _Answered,
) -> tuple[MemoryObjectSendStream[dict[str, Any]], MemoryObjectReceiveStream[dict[str, Any]]]:
    """Requests the agent sends go to the returned stream (both ends returned: the caller closes them)."""
    send, receive = anyio.create_memory_object_stream[dict[str, Any]](100)
    agent.inbox = send
    return send, receive


async def _answer(p: Project, requests: MemoryObjectReceiveStream[dict[str, Any]]) -> None:
    async for message in requests:
        if message["method"] == "session/request_permission":
            p.asked.append(message["params"])
            outcome = {"outcome": "selected", "optionId": p.choose(message["params"])}
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}}
        else:
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "not here"}}
        await p.agent.send(reply)
