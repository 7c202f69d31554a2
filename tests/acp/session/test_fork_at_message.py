"""``session/fork`` at a message (``_meta.forkAtMessageId``): the fork's conversation and records are cut
there; the source is left as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.testing import FakeModel, Reply
from tests.acp.session._support import running_agent, transcript_lines
from tests.acp_client import AcpClient

pytestmark = pytest.mark.anyio


async def _replayed(client: AcpClient, sid: str, cwd: Path) -> list[tuple[str, str, str]]:
    before = len(client.updates(sid))
    await client.call("session/load", {"sessionId": sid, "cwd": str(cwd), "mcpServers": []})
    return [
        (u["sessionUpdate"], u["messageId"], u["content"]["text"])
        for u in client.updates(sid)[before:]
        if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")
    ]


async def _fork(client: AcpClient, sid: str, cwd: Path, meta: dict[str, Any]) -> dict[str, Any]:
    return await client.response(
        await client.send_request("session/fork", {"sessionId": sid, "cwd": str(cwd), "_meta": meta})
    )


async def test_a_fork_at_a_message_has_the_conversation_up_to_it(tmp_path: Path) -> None:
    model = FakeModel([Reply(text="one"), Reply(text="two"), Reply(text="after the fork")])
    async with running_agent(tmp_path, model) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        await client.call("session/prompt", client.prompt_params(sid, "first"))
        await client.call("session/prompt", client.prompt_params(sid, "second"))
        shown = await _replayed(client, sid, tmp_path)
        assert [text for _, _, text in shown] == ["first", "one", "second", "two"]
        (_, first_reply, _), (_, second_prompt, _) = shown[1], shown[2]

        # at an agent message: through the end of its turn
        answer = await _fork(client, sid, tmp_path, {"forkAtMessageId": first_reply})
        fork = answer["result"]["sessionId"]
        assert [t for _, _, t in await _replayed(client, fork, tmp_path)] == ["first", "one"]
        # at a prompt: before it (JetBrains' key), so the client can send it again, edited
        answer = await _fork(
            client, sid, tmp_path, {"jetbrains": {"air": {"fork": {"messageId": second_prompt}}}}
        )
        edit = answer["result"]["sessionId"]
        assert [t for _, _, t in await _replayed(client, edit, tmp_path)] == ["first", "one"]
        assert [line["role"] for line in transcript_lines(tmp_path, edit)] == ["user", "assistant"]
        await client.call("session/prompt", client.prompt_params(edit, "second, edited"))
        assert [t for _, _, t in await _replayed(client, edit, tmp_path)] == [
            "first", "one", "second, edited", "after the fork",
        ]  # fmt: skip
        # the source is as it was
        assert await _replayed(client, sid, tmp_path) == shown
        assert client.schema_problems(unstable=True) == []


async def test_a_fork_at_a_message_the_session_does_not_have_is_invalid_params(tmp_path: Path) -> None:
    async with running_agent(tmp_path, FakeModel([Reply(text="one")])) as (client, agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        await client.call("session/prompt", client.prompt_params(sid, "first"))
        for meta in ({"forkAtMessageId": "msg_nope"}, {"forkAtMessageId": 7}, {"forkAtMessageId": ""}):
            answer = await _fork(client, sid, tmp_path, meta)
            assert answer["error"]["code"] == -32602, (meta, answer)
        sessions = (await client.call("session/list", {}))["sessions"]
        assert [s["sessionId"] for s in sessions] == [sid]  # no half-made fork left behind
        assert set(agent.sessions) == {sid}
