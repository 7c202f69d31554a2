"""``session/load`` replays the agent-side slash commands (``/mode accept-edits`` and the agent's answer)
where they happened among the prompts: they never reach the model, so the conversation does not hold them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from harness.testing import Reply
from tests.acp.coding._support import editor_agent, fake, prompt

pytestmark = pytest.mark.anyio


def _shown(updates: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The user's and the agent's text, in order (chunks of one side joined)."""
    out: list[tuple[str, str]] = []
    for u in updates:
        kind = u["sessionUpdate"]
        if kind not in ("user_message_chunk", "agent_message_chunk"):
            continue
        side = "user" if kind == "user_message_chunk" else "agent"
        text = u["content"].get("text", "")
        if out and out[-1][0] == side:
            out[-1] = (side, out[-1][1] + text)
        else:
            out.append((side, text))
    return out


async def test_session_load_replays_a_slash_command_and_its_answer_where_it_happened(tmp_path: Path) -> None:
    model = fake(Reply(text="First answer."), Reply(text="Second answer."))
    async with editor_agent(tmp_path, model) as (editor, sid, project):
        await prompt(editor, sid, "hello")
        before = len(editor.updates(sid))
        assert (await prompt(editor, sid, "/mode accept-edits"))["stopReason"] == "end_turn"
        live = _shown(editor.updates(sid)[before:])
        assert live and live[-1][0] == "agent" and live[-1][1]
        answer = live[-1][1]
        await prompt(editor, sid, "and now?")
        assert model.calls == 2  # the command never reached the model

        before = len(editor.updates(sid))
        await editor.call("session/load", {"sessionId": sid, "cwd": str(project), "mcpServers": []})
        replayed = _shown(editor.updates(sid)[before:])
    assert replayed == [
        ("user", "hello"),
        ("agent", "First answer."),
        ("user", "/mode accept-edits"),
        ("agent", answer),
        ("user", "and now?"),
        ("agent", "Second answer."),
    ]


async def test_a_slash_command_in_a_session_deleted_by_another_process_answers_not_found_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """The command's reply is written to what a load replays (``shown.jsonl``): that write used to make the
    removed folder again, for a session with no turn yet."""
    async with editor_agent(tmp_path, fake(Reply(text="unused"))) as (editor, sid, _project):
        folder = tmp_path / "home" / "sessions" / sid
        shutil.rmtree(folder)  # as another process's delete does
        for command in ("/mode accept-edits", "/rename Kept?"):
            answer = await editor.response(
                await editor.send_request(
                    "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": command}]}
                )
            )
            assert answer["error"]["code"] == -32002, answer
        assert not folder.exists()
    assert not folder.exists()
