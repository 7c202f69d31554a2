"""A client's ``systemPrompt`` on ``session/new``, ``load``, ``resume`` and ``fork``: appended to the
agent's instructions, or replacing its built-in ones; what the agent cannot apply is refused and no
session is opened."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.testing import FakeModel, Reply
from tests.acp.session._support import running_agent

pytestmark = pytest.mark.anyio

DEFAULT = "You are a coding agent"


def _prompt(mode: str, *texts: str) -> dict[str, Any]:
    return {"mode": mode, "content": [{"type": "text", "text": t} for t in texts]}


async def test_append_adds_the_clients_text_and_override_replaces_the_built_in_instructions(
    tmp_path: Path,
) -> None:
    model = FakeModel([Reply(text="a"), Reply(text="b"), Reply(text="c")])
    async with running_agent(tmp_path, model) as (client, _agent, _tg):
        caps = (await client.initialize())["agentCapabilities"]["sessionCapabilities"]
        assert caps["systemPrompt"] == {"mode": {"override": {}}}
        appended = await client.new_session(
            str(tmp_path), systemPrompt=_prompt("append", "Answer in French.", "Be brief.")
        )
        await client.call("session/prompt", client.prompt_params(appended, "hi"))
        system = model.prompts[0].system or ""
        assert system.startswith(DEFAULT) and system.endswith("Answer in French.\n\nBe brief.")
        assert str(tmp_path) in system  # the workspace context stays

        replaced = await client.new_session(
            str(tmp_path), systemPrompt=_prompt("override", "You review code.")
        )
        await client.call("session/prompt", client.prompt_params(replaced, "hi"))
        system = model.prompts[1].system or ""
        assert system.startswith("You review code.") and DEFAULT not in system
        assert str(tmp_path) in system

        # a load brings its own: the session follows the latest request's
        await client.call(
            "session/load",
            {
                "sessionId": replaced,
                "cwd": str(tmp_path),
                "mcpServers": [],
                "systemPrompt": _prompt("append", "Now Spanish."),
            },
        )
        await client.call("session/prompt", client.prompt_params(replaced, "again"))
        system = model.prompts[2].system or ""
        assert system.startswith(DEFAULT) and system.endswith("Now Spanish.")
        assert client.schema_problems(unstable=True) == []


@pytest.mark.parametrize(
    "system_prompt",
    [
        {"mode": "prepend", "content": [{"type": "text", "text": "x"}]},
        {"mode": "append", "content": []},
        {"mode": "append", "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]},
        {"mode": "append"},
        {"content": [{"type": "text", "text": "x"}]},
    ],
)
async def test_a_system_prompt_the_agent_cannot_apply_is_refused_and_opens_nothing(
    tmp_path: Path, system_prompt: dict[str, Any]
) -> None:
    async with running_agent(tmp_path, FakeModel([])) as (client, agent, _tg):
        await client.initialize()
        params: dict[str, Any] = {"cwd": str(tmp_path), "mcpServers": [], "systemPrompt": system_prompt}
        answer = await client.response(await client.send_request("session/new", params))
        assert answer["error"]["code"] == -32602, answer
        assert agent.sessions == {}
        assert (await client.call("session/list", {}))["sessions"] == []
        sid = await client.new_session(str(tmp_path))
        for method in ("session/load", "session/resume", "session/fork"):
            answer = await client.response(await client.send_request(method, {**params, "sessionId": sid}))
            assert answer["error"]["code"] == -32602, (method, answer)
        assert set(agent.sessions) == {sid}
