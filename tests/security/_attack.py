"""The attacks of the trust-boundary issue, run against the real ``acp-agent`` process.

A scripted model (``ACP_AGENT_PROVIDER=script``) issues the tool calls an attacker would choose; the
client (``Victim``) rejects every permission request by default, records what it was asked, and serves
``fs/*`` from the disk (or answers with the errors a test chooses). Built on the reliability suite's
``AgentProcess``, which checks every line the agent writes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from tests.reliability._reliability_support import AgentProcess, agent_env, agent_process

__all__ = ["Project", "Victim", "calls", "reply", "victim_agent"]

Answer = dict[str, Any] | tuple[int, str]
"""What the client answers a request with: a result, or ``(code, message)`` for an error."""


def reply(*tool_calls: tuple[str, dict[str, Any]], text: str | None = None) -> dict[str, Any]:
    """One scripted model reply: the tool calls it makes (and/or text)."""
    out: dict[str, Any] = {"tool_calls": [{"name": n, "input": i} for n, i in tool_calls]}
    if text is not None:
        out["text"] = text
    return out


def calls(*tool_calls: tuple[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """A script that makes each call in its own step, then ends the turn."""
    return [*(reply(c) for c in tool_calls), reply(text="done")]


@dataclass
class Victim(AgentProcess):
    """The client side: answers the agent's requests as the test says (permissions rejected by default)."""

    requests: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    choose: Callable[[dict[str, Any]], str] = field(default=lambda p: "reject_once")
    fs_answer: Callable[[str, dict[str, Any]], Answer | None] = field(default=lambda m, p: None)
    _seen: anyio.Event = field(default_factory=anyio.Event)

    def _check_message(self, message: dict[str, Any]) -> None:
        super()._check_message(message)
        if isinstance(message.get("method"), str) and "id" in message:
            self.requests.append(message)
            self._seen.set()
            self._seen = anyio.Event()

    def asked(self, method: str = "session/request_permission") -> list[dict[str, Any]]:
        return [r["params"] for r in self.requests if r["method"] == method]

    async def answer_requests(self) -> None:
        done = 0
        while True:
            seen = self._seen
            while done < len(self.requests):
                await self._answer(self.requests[done])
                done += 1
            await seen.wait()

    async def _answer(self, request: dict[str, Any]) -> None:
        method: str = request["method"]
        params: dict[str, Any] = request.get("params") or {}
        answer = await self._answer_for(method, params)
        if isinstance(answer, tuple):
            body: dict[str, Any] = {"error": {"code": answer[0], "message": answer[1]}}
        else:
            body = {"result": answer}
        await self.send({"jsonrpc": "2.0", "id": request["id"], **body})

    async def _answer_for(self, method: str, params: dict[str, Any]) -> Answer:
        if method == "session/request_permission":
            option = self.choose(params)
            return {"outcome": {"outcome": "selected", "optionId": option}}
        chosen = self.fs_answer(method, params)
        if chosen is not None:
            return chosen
        if method == "fs/read_text_file":
            return {"content": await anyio.Path(params["path"]).read_text()}
        if method == "fs/write_text_file":
            await anyio.Path(params["path"]).write_text(params["content"])
            return {}
        return (-32601, f"{method} is not offered by this client")

    def updates(self, session_id: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for message in self.notifications:
            params: dict[str, Any] = message.get("params") or {}
            if message.get("method") == "session/update" and params.get("sessionId") == session_id:
                out.append(params["update"])
        return out

    def tool_results(self, session_id: str) -> list[str]:
        """The text of every finished tool call's content, in order."""
        out: list[str] = []
        for u in self.updates(session_id):
            if u.get("sessionUpdate") == "tool_call_update" and u.get("status") in ("completed", "failed"):
                contents: list[dict[str, Any]] = u.get("content") or []
                texts = [c["content"].get("text", "") for c in contents if c.get("type") == "content"]
                out.append("\n".join(texts) or json.dumps(u.get("rawOutput")))
        return out

    async def prompt(self, session_id: str, text: str) -> dict[str, Any]:
        return await self.call(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )

    async def new_session(self, cwd: Path) -> str:
        return (await self.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["sessionId"]

    async def ready(self, session_id: str) -> None:
        """Until the session's command list is sent: its set-up after the answer is done (and a session
        answered at start-up is built, the agent's imports with it)."""

        def commands(message: dict[str, Any]) -> bool:
            params: dict[str, Any] = message.get("params") or {}
            update: dict[str, Any] = params.get("update") or {}
            return (
                params.get("sessionId") == session_id
                and update.get("sessionUpdate") == "available_commands_update"
            )

        await self.notification(commands)


@dataclass(frozen=True)
class Project:
    """The folders of one attack: the project, the agent's home, the user's configuration folder."""

    root: Path
    home: Path
    user_config: Path  # $XDG_CONFIG_HOME/acp-agent
    outside: Path  # a folder beside the project, for escapes

    @classmethod
    def make(cls, tmp: Path) -> Project:
        p = cls(tmp / "project", tmp / "home", tmp / "xdg" / "acp-agent", tmp / "outside")
        for d in (p.root, p.home, p.user_config, p.outside):
            d.mkdir(parents=True, exist_ok=True)
        return p

    def remember(self, *rules: Mapping[str, Any]) -> None:
        """Rules in the user's permission file, as "always" answers would have left them."""
        text = "".join(json.dumps(dict(r)) + "\n" for r in rules)
        (self.user_config / "permissions.jsonl").write_text(text)


@asynccontextmanager
async def victim_agent(
    project: Project,
    script: Sequence[dict[str, Any]],
    *,
    mode: str = "default",
    fs: bool | Mapping[str, bool] = True,
    env: Mapping[str, str] | None = None,
) -> AsyncGenerator[Victim]:
    """The real agent (scripted model) with a ``Victim`` client, initialised; ``fs``: the client offers
    ``fs/read_text_file`` and ``fs/write_text_file`` (a mapping: the ``fs`` capabilities as given)."""
    script_path = project.home.parent / "script.json"
    script_path.write_text(json.dumps(list(script)))
    environ = agent_env(
        project.home,
        script_path,
        HOME=str(project.home.parent),
        XDG_CONFIG_HOME=str(project.user_config.parent),
        ACP_AGENT_DEFAULT_MODE=mode,
        **dict(env or {}),
    )
    async with agent_process(project.home, environ, kind=Victim) as agent, anyio.create_task_group() as tg:
        tg.start_soon(agent.answer_requests)
        both = {"readTextFile": True, "writeTextFile": True}
        caps: dict[str, Any] = {"fs": dict(fs) if isinstance(fs, Mapping) else both} if fs else {}
        with anyio.fail_after(60):
            await agent.call("initialize", {"protocolVersion": 1, "clientCapabilities": caps})
        yield agent
        tg.cancel_scope.cancel()
    assert not agent.violations, agent.violations
