"""The real agent process against a fake OpenAI-compatible server: Chat Completions streams, the session
opened once the server's model list was read, a prompt's updates and answer."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp_agent.protocol.jsonvalue import as_object
from acp_conformance.fake_model import FakeServer
from tests.acp_client import AcpClient, spawned_agent

__all__ = ["KEY", "Agent", "chat_text", "model_option", "models_agent", "sse"]

KEY = "sk-models-test-0123456789abcdef"


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def chat_text(text: str, prompt_tokens: int, *, finish: str = "stop") -> bytes:
    """A streamed Chat Completions reply with its usage record (``stream_options.include_usage``)."""
    chunks: list[dict[str, Any]] = []
    if text:
        chunks.append({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]})
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 5, "total_tokens": prompt_tokens + 5}
    chunks.append({"choices": [], "usage": usage})
    return sse(*chunks)


@dataclass
class Agent:
    client: AcpClient
    session: str
    home: Path

    async def prompt(self, text: str) -> dict[str, Any]:
        """The prompt's answer (a result or an error)."""
        rid = await self.client.send_request("session/prompt", self.client.prompt_params(self.session, text))
        return await self.client.response(rid)

    def updates(self, kind: str) -> list[dict[str, Any]]:
        return [u for u in self.client.updates(self.session) if u["sessionUpdate"] == kind]

    def text(self) -> str:
        return "".join(u["content"]["text"] for u in self.updates("agent_message_chunk"))

    def stderr(self) -> str:
        return (self.home / "agent-stderr.log").read_text(encoding="utf-8", errors="replace")


def _model_option(message: Any) -> dict[str, Any] | None:
    update: dict[str, Any] = as_object(message).get("params", {}).get("update", {})
    if update.get("sessionUpdate") != "config_option_update":
        return None
    options: list[dict[str, Any]] = update["configOptions"]
    return next((o for o in options if o["id"] == "model"), None)


@asynccontextmanager
async def models_agent(
    tmp: Path,
    server: FakeServer,
    model: str,
    *,
    base: str = "/v1",
    user_config: str | None = None,
    wait_for_list: bool = True,
) -> AsyncGenerator[Agent]:
    """``python -m acp_agent`` on ``server`` (provider openai, ``model``), a session open in a project,
    and (``wait_for_list``) the model option sent again once the server's model list was read."""
    project = tmp / "project"
    project.mkdir(exist_ok=True)
    user = tmp / "user"
    (user / ".config" / "acp-agent").mkdir(parents=True, exist_ok=True)
    if user_config is not None:
        (user / ".config" / "acp-agent" / "config.toml").write_text(user_config)
    env = {
        "HOME": str(user),
        "XDG_CONFIG_HOME": str(user / ".config"),
        "ACP_AGENT_PROVIDER": "openai",
        "ACP_AGENT_BASE_URL": server.url + base,
        "ACP_AGENT_MODEL": model,
        "ACP_AGENT_API_KEY": KEY,
    }
    home = tmp / "home"
    async with spawned_agent(home, project, env) as client:
        await client.initialize()
        session = await client.new_session(str(project))
        if wait_for_list:
            await client.wait_for(lambda m: _model_option(m) is not None)
        yield Agent(client, session, home)


def model_option(agent: Agent) -> dict[str, Any]:
    """The last ``model`` option the agent sent."""
    found = [o for o in map(_model_option, agent.client.messages) if o is not None]
    return found[-1]
