"""``session/archive`` / ``unarchive`` with ``session/list``'s ``archived`` filter, and ``session/status``."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.testing import FakeModel, Reply
from tests.acp.session._support import running_agent
from tests.acp_client import AcpClient

pytestmark = pytest.mark.anyio


async def _listed(client: AcpClient, archived: str | None = None) -> dict[str, bool]:
    params = {} if archived is None else {"archived": archived}
    return {s["sessionId"]: s["archived"] for s in (await client.call("session/list", params))["sessions"]}


async def test_an_archived_session_leaves_the_default_list_and_comes_back_unarchived(tmp_path: Path) -> None:
    model = FakeModel([Reply(text="ok"), Reply(text="again")])
    async with running_agent(tmp_path, model) as (client, agent, _tg):
        caps = (await client.initialize())["agentCapabilities"]["sessionCapabilities"]
        assert caps["archive"] == {} and caps["status"] == {}
        kept = await client.new_session(str(tmp_path))
        gone = await client.new_session(str(tmp_path))
        await client.call("session/prompt", client.prompt_params(gone, "remember this"))
        assert await client.call("session/status", {"sessionId": gone}) == {"status": "open"}
        assert await client.call("session/archive", {"sessionId": gone}) == {}
        assert gone not in agent.sessions  # archiving closes it
        assert await client.call("session/status", {"sessionId": gone}) == {"status": "saved"}
        assert await client.call("session/archive", {"sessionId": gone}) == {}  # again: fine
        assert await _listed(client) == {kept: False}
        assert await _listed(client, "exclude") == {kept: False}
        assert await _listed(client, "only") == {gone: True}
        assert await _listed(client, "include") == {kept: False, gone: True}
        bad = await client.response(await client.send_request("session/list", {"archived": "everything"}))
        assert bad["error"]["code"] == -32602
        # its history is kept: loaded, it replays and goes on
        await client.call("session/load", {"sessionId": gone, "cwd": str(tmp_path), "mcpServers": []})
        texts = [
            u["content"]["text"] for u in client.updates(gone) if u["sessionUpdate"] == "user_message_chunk"
        ]
        assert texts == ["remember this"]
        assert await client.call("session/unarchive", {"sessionId": gone}) == {}
        assert set(await _listed(client)) == {kept, gone}
        assert client.schema_problems(unstable=True) == []


async def test_status_and_archive_of_an_unknown_session_are_not_found_and_change_nothing(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path, FakeModel([])) as (client, agent, _tg):
        await client.initialize()
        for method in ("session/status", "session/archive", "session/unarchive"):
            answer = await client.response(await client.send_request(method, {"sessionId": "sess_nope"}))
            assert answer["error"]["code"] == -32002, method
            assert answer["error"]["data"]["sessionId"] == "sess_nope"
        sid = await client.new_session(str(tmp_path))
        await client.call("session/close", {"sessionId": sid})
        assert await client.call("session/status", {"sessionId": sid}) == {"status": "saved"}
        assert sid not in agent.sessions  # status opened nothing
        assert client.schema_problems(unstable=True) == []
