"""A live session whose folder another process removed (a second agent sharing the home deleted it, or
``acp-harness-agent sessions delete``): its next prompt answers "not found", saying why, instead of an
internal error; it leaves the live table; and nothing of it is written again, at the prompt, the close
or the exit."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.testing import FakeModel, Reply
from tests.acp.session._support import running_agent

pytestmark = pytest.mark.anyio


async def test_a_prompt_to_a_session_deleted_by_another_process_answers_not_found_and_writes_nothing(
    tmp_path: Path,
) -> None:
    folder: Path | None = None
    async with running_agent(tmp_path, FakeModel([Reply(text="one"), Reply(text="two")])) as (
        client,
        agent,
        _tg,
    ):
        await client.initialize()
        session_id = await client.new_session(str(tmp_path))
        await client.call("session/prompt", client.prompt_params(session_id, "first"))
        folder = tmp_path / "sessions" / session_id
        shutil.rmtree(folder)  # as another process's delete does
        prompt = await client.send_request("session/prompt", client.prompt_params(session_id, "second"))
        error = (await client.response(prompt))["error"]
        assert error["code"] == -32002, error
        assert "removed outside this agent" in error["message"]
        assert session_id not in agent.sessions
        again = await client.send_request("session/prompt", client.prompt_params(session_id, "third"))
        assert (await client.response(again))["error"]["code"] == -32002
        assert session_id not in {s["sessionId"] for s in (await client.call("session/list", {}))["sessions"]}
        assert not folder.exists()
    assert folder is not None and not folder.exists()  # not made again by the close or the exit


async def test_a_title_set_on_a_fresh_session_deleted_by_another_process_answers_not_found_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """A session with no turn yet (its folder never appended to in this process): the title's write used to
    make the folder again, a session of one file that the list then showed."""
    async with running_agent(tmp_path, FakeModel([Reply(text="one")])) as (client, agent, _tg):
        await client.initialize()
        session_id = await client.new_session(str(tmp_path))
        folder = tmp_path / "sessions" / session_id
        shutil.rmtree(folder)  # as another process's delete does
        answer = await client.response(
            await client.send_request("session/set_title", {"sessionId": session_id, "title": "Kept?"})
        )
        assert (
            answer["error"]["code"] == -32002 and "removed outside this agent" in answer["error"]["message"]
        )
        assert session_id not in agent.sessions
        assert not folder.exists()
        assert session_id not in {s["sessionId"] for s in (await client.call("session/list", {}))["sessions"]}
    assert not folder.exists()


async def test_a_title_set_on_a_saved_session_removed_meanwhile_answers_not_found(tmp_path: Path) -> None:
    async with running_agent(tmp_path, FakeModel([Reply(text="one")])) as (client, _agent, _tg):
        await client.initialize()
        session_id = await client.new_session(str(tmp_path))
        await client.call("session/close", {"sessionId": session_id})
        folder = tmp_path / "sessions" / session_id
        shutil.rmtree(folder)
        answer = await client.response(
            await client.send_request("session/set_title", {"sessionId": session_id, "title": "Kept?"})
        )
        assert answer["error"]["code"] == -32002, answer
        assert not folder.exists()
