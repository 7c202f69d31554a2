"""Sessions on disk: a new agent (another process) continues them; torn lines are ignored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp_agent.session import SessionMeta, SessionStore
from harness import Message
from harness.testing import FakeModel, Reply
from tests.acp.session._support import running_agent, transcript_lines

pytestmark = pytest.mark.anyio


async def test_a_new_agent_loads_the_session_and_continues_the_conversation(tmp_path: Path) -> None:
    async with running_agent(tmp_path, FakeModel([Reply(text="first answer")])) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        await client.call("session/prompt", client.prompt_params(sid, "first"))
    second_model = FakeModel([Reply(text="second answer")])
    async with running_agent(tmp_path, second_model) as (client, _agent, _tg):
        await client.initialize()
        load_id = await client.send_request(
            "session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []}
        )
        assert (await client.response(load_id))["result"] == {}
        replay = client.updates(sid)
        assert [u["sessionUpdate"] for u in replay] == [
            "user_message_chunk",
            "agent_message_chunk",
            "session_info_update",  # the title, re-sent after the replay
        ]
        assert all(
            client.messages.index(m) < client.index_of(load_id) for m in client.messages if "method" in m
        )
        await client.call("session/prompt", client.prompt_params(sid, "second"))
    history = second_model.prompts[0].messages
    assert [m.text for m in history] == ["first", "first answer", "second"]
    assert [line["role"] for line in transcript_lines(tmp_path, sid)] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]


async def test_a_torn_last_line_is_ignored_on_load_and_repaired_on_append(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    meta = SessionMeta("sess_torn", str(tmp_path), "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "t")
    await store.save_meta(meta, new=True)
    path = store.transcript_path("sess_torn")
    good = [Message.user("hello").to_dict(), Message.assistant("hi there").to_dict()]
    path.write_text("".join(json.dumps(d) + "\n" for d in good) + '{"role": "user", "cont')
    model = FakeModel([Reply(text="after repair")])
    async with running_agent(tmp_path, model) as (client, _agent, _tg):
        await client.initialize()
        await client.call("session/load", {"sessionId": "sess_torn", "cwd": str(tmp_path), "mcpServers": []})
        assert [u["sessionUpdate"] for u in client.updates("sess_torn")][:2] == [
            "user_message_chunk",
            "agent_message_chunk",
        ]
        await client.call("session/prompt", client.prompt_params("sess_torn", "again"))
    lines = transcript_lines(tmp_path, "sess_torn")  # every line parses: the torn tail is gone
    assert [line["role"] for line in lines] == ["user", "assistant", "user", "assistant"]


async def test_meta_json_is_written_atomically_with_the_session_fields(tmp_path: Path) -> None:
    async with running_agent(tmp_path, FakeModel([Reply(text="ok")])) as (client, _agent, _tg):
        await client.initialize()
        lib = tmp_path / "lib"
        lib.mkdir()
        sid = await client.new_session(str(tmp_path), additionalDirectories=[str(lib)])
        await client.call("session/prompt", client.prompt_params(sid, "Name this session"))
    directory = tmp_path / "sessions" / sid
    meta = json.loads((directory / "meta.json").read_text())
    assert meta["id"] == sid and meta["cwd"] == str(tmp_path) and meta["title"] == "Name this session"
    assert meta["additionalDirectories"] == [str(tmp_path / "lib")] and meta["mcpServers"] == []
    assert meta["updatedAt"] >= meta["createdAt"]
    assert sorted(p.name for p in directory.iterdir()) == ["messages.jsonl", "meta.json"]


async def test_delete_removes_the_directory_and_unknown_ids_succeed(tmp_path: Path) -> None:
    async with running_agent(tmp_path, FakeModel([])) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        assert (tmp_path / "sessions" / sid).is_dir()
        assert await client.call("session/delete", {"sessionId": sid}) == {}
        assert not (tmp_path / "sessions" / sid).exists()
        assert await client.call("session/delete", {"sessionId": "../escape"}) == {}
