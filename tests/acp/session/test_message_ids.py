"""Every message chunk carries a ``messageId``: one per message, the same on each of its chunks, kept with
the transcript and the same again when ``session/load`` replays it; and every tool call names its tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_agent.session import SessionEnvironment, SessionSetup
from harness import Tools, tool
from harness.testing import FakeModel, Reply
from tests.acp.session._support import running_agent, transcript_lines

pytestmark = pytest.mark.anyio

CHUNKS = ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk")


def _chunks(updates: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(kind, messageId, text) of each message chunk."""
    return [
        (u["sessionUpdate"], u["messageId"], u["content"].get("text", ""))
        for u in updates
        if u["sessionUpdate"] in CHUNKS
    ]


@tool
def noop() -> str:
    """Do nothing."""
    return "ok"


async def _factory(env: SessionEnvironment) -> SessionSetup:
    return SessionSetup(tools=Tools(noop))


async def test_each_message_has_one_id_on_all_its_chunks_and_load_replays_the_same_ids(
    tmp_path: Path,
) -> None:
    model = FakeModel(
        [
            Reply(reasoning="let me think", text="I will call noop", chunks=3, tool_calls=[("noop", {})]),
            Reply(text="All done here", chunks=4),
        ]
    )
    async with running_agent(tmp_path, model, factory=_factory) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        await client.call("session/prompt", client.prompt_params(sid, "go"))
        live = _chunks(client.updates(sid))
        assert all(mid for _, mid, _ in live), live
        agent_ids = [mid for kind, mid, _ in live if kind == "agent_message_chunk"]
        first, second = agent_ids[0], agent_ids[-1]
        assert first != second, "two model messages, two ids"
        assert agent_ids == [first] * agent_ids.count(first) + [second] * agent_ids.count(second)
        assert {mid for kind, mid, _ in live if kind == "agent_thought_chunk"} == {first}
        texts = {
            mid: "".join(t for k, m, t in live if m == mid and k == "agent_message_chunk")
            for mid in agent_ids
        }
        assert texts == {first: "I will call noop", second: "All done here"}
        # kept with the transcript: the model messages' ids and the prompt's (in its meta)
        lines = transcript_lines(tmp_path, sid)
        assert [line.get("id") for line in lines if line["role"] == "assistant"] == [first, second]
        prompt_id = lines[0]["meta"]["acp"]["messageId"]
        assert prompt_id.startswith("msg_") and prompt_id not in (first, second)

        before = len(client.updates(sid))
        await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        replayed = _chunks(client.updates(sid)[before:])
        assert replayed[0] == ("user_message_chunk", prompt_id, "go")
        assert [c for c in replayed if c[0] != "user_message_chunk"] == [
            ("agent_thought_chunk", first, "let me think"),
            ("agent_message_chunk", first, "I will call noop"),
            ("agent_message_chunk", second, "All done here"),
        ]
        again = len(client.updates(sid))
        await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        assert _chunks(client.updates(sid)[again:]) == replayed  # stable across loads
        calls = [u for u in client.updates(sid) if u["sessionUpdate"].startswith("tool_call")]
        assert calls and all(u["name"] == "noop" for u in calls)
        assert client.schema_problems() == []


async def test_a_cancelled_replys_partial_text_is_replayed_under_the_id_it_streamed_with(
    tmp_path: Path,
) -> None:
    model = FakeModel([Reply(text="partial", hang=True)])
    async with running_agent(tmp_path, model) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        pid = await client.send_request("session/prompt", client.prompt_params(sid, "go"))
        chunk = await client.wait_for(
            lambda m: (
                m.get("method") == "session/update"
                and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            )
        )
        streamed = chunk["params"]["update"]["messageId"]
        await client.notify("session/cancel", {"sessionId": sid})
        assert (await client.response(pid))["result"] == {"stopReason": "cancelled"}
        before = len(client.updates(sid))
        await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        replayed = [c for c in _chunks(client.updates(sid)[before:]) if c[0] == "agent_message_chunk"]
        assert replayed == [
            ("agent_message_chunk", streamed, "partial"),
            ("agent_message_chunk", streamed, "\n\n(cancelled)"),
        ]
        assert client.schema_problems() == []
