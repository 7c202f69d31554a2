"""Through the real ``acp-agent`` process: a steering message the turn did not land (the turn was
cancelled first) is not dropped: it runs next, and a load replays it where the model read it."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from tests.acp_client import AcpClient, spawned_agent

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"]), pytest.mark.process]

LIMIT_S = 60


def _chunks(client: AcpClient, sid: str, kind: str) -> list[str]:
    return [u["content"]["text"] for u in client.updates(sid) if u["sessionUpdate"] == kind]


async def test_steering_a_turn_that_is_cancelled_before_it_lands_runs_next(
    anyio_backend: str, tmp_path: Path
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    script = tmp_path / "script.json"
    # The first reply's second half comes long after its first: the turn is mid-reply when steered.
    replies = [{"text": "partial reply", "chunks": 2, "delay_ms": 4000}, {"text": "steered"}, {"text": "ok"}]
    script.write_text(json.dumps(replies), encoding="utf-8")
    env = {"ACP_AGENT_PROVIDER": "script", "ACP_AGENT_SCRIPT": str(script)}
    with anyio.fail_after(LIMIT_S):
        async with spawned_agent(home, project, env) as client:
            await client.initialize()
            sid = await client.new_session(str(project))
            first = await client.send_request("session/prompt", client.prompt_params(sid, "first"))
            await client.wait_for(lambda _m: bool(_chunks(client, sid, "agent_message_chunk")))
            steer = {"sessionId": sid, "prompt": [{"type": "text", "text": "also this"}]}
            assert await client.call("_session/steering", steer) == {"outcome": "injected"}
            await client.notify("session/cancel", {"sessionId": sid})
            assert (await client.response(first))["result"] == {"stopReason": "cancelled"}
            # A prompt sent now waits for that turn, then runs: its answer says the session is idle again.
            assert await client.call("session/prompt", client.prompt_params(sid, "next")) == {
                "stopReason": "end_turn"
            }
            assert _chunks(client, sid, "agent_message_chunk")[-2:] == ["steered", "ok"]
            # The steering's turn, which no answer ends, is bracketed by markers: the first before the
            # answer of the cancelled turn, the last after its reply.
            markers = [
                (i, u["params"]["update"]["_meta"]["turn"])
                for i, u in enumerate(client.messages)
                if u.get("method") == "session/update"
                and "turn" in (u["params"]["update"].get("_meta") or {})
            ]
            assert [turn for _i, turn in markers] == [
                {"state": "running"},
                {"state": "idle", "stopReason": "end_turn"},
            ]
            assert markers[0][0] < client.index_of(first)
            before = len(client.updates(sid))
            await client.call("session/load", {"sessionId": sid, "cwd": str(project), "mcpServers": []})
            replayed = client.updates(sid)[before:]
            users = [u["content"]["text"] for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
            assert users == ["first", "also this", "next"]
            assert client.schema_problems() == []
