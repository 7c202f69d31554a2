"""The trust question at the first prompt, in memory: what each answer does to the session (its mode, its
rules, its MCP servers) and what is recorded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.trust import TrustStore
from harness.testing import Reply
from tests.acp.coding._support import Editor, editor_agent, fake, prompt, select

pytestmark = pytest.mark.anyio
LIMIT_S = 10  # in memory, nothing slow awaited: the cold first turn took 1.5 s on a loaded machine

CONFIG = 'default_mode = "accept-edits"\nmodel = "project-model"\n'


def _project(tmp_path: Path, text: str = CONFIG) -> Path:
    config = tmp_path / "project" / ".acp-agent" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(text)
    return config


def _trust_requests(editor: Editor) -> list[dict[str, Any]]:
    return [
        p
        for p in editor.requests_of("session/request_permission")
        if str(p["toolCall"]["toolCallId"]).startswith("trust_")
    ]


def _store(tmp_path: Path) -> TrustStore:
    return TrustStore(tmp_path / "user" / ".local" / "share" / "acp-agent")


async def test_allow_once_applies_the_project_settings_to_this_session_only(tmp_path: Path) -> None:
    _project(tmp_path)
    async with editor_agent(tmp_path, fake(Reply(text="ok"), Reply(text="ok"))) as (editor, sid, _):
        editor.permission = select("allow_once")
        with anyio.fail_after(LIMIT_S):
            assert (await prompt(editor, sid, "hi"))["stopReason"] == "end_turn"
        (asked,) = _trust_requests(editor)
        assert [o["kind"] for o in asked["options"]] == ["allow_once", "allow_always", "reject_once"]
        assert "starts sessions in the accept-edits mode" in json.dumps(asked["toolCall"])
        modes = [
            u["currentModeId"] for u in editor.updates(sid) if u.get("sessionUpdate") == "current_mode_update"
        ]
        assert modes == ["accept-edits"]
        ended = [u for u in editor.updates(sid) if u.get("toolCallId") == asked["toolCall"]["toolCallId"]]
        assert ended[-1]["status"] == "completed"
        with anyio.fail_after(LIMIT_S):
            await prompt(editor, sid, "again")
        assert len(_trust_requests(editor)) == 1  # asked once per session
    assert _store(tmp_path).records() == []  # "once" records nothing


async def test_reject_keeps_the_settings_off_and_says_so_once(tmp_path: Path) -> None:
    _project(tmp_path)
    async with editor_agent(tmp_path, fake(Reply(text="ok"), Reply(text="ok"))) as (editor, sid, project):
        editor.permission = select("reject_once")
        with anyio.fail_after(LIMIT_S):
            await prompt(editor, sid, "hi")
            await prompt(editor, sid, "again")
        told = "".join(
            u["content"]["text"]
            for u in editor.updates(sid)
            if u.get("sessionUpdate") == "agent_message_chunk"
        )
        assert told.count("was not applied") == 1
        assert (
            f"acp-harness-agent trust {project}" in told
            and "starts sessions in the accept-edits mode" in told
        )
        assert not [u for u in editor.updates(sid) if u.get("sessionUpdate") == "current_mode_update"]


async def test_always_records_the_trust_and_the_next_session_does_not_ask(tmp_path: Path) -> None:
    _project(tmp_path)
    async with editor_agent(tmp_path, fake(Reply(text="ok"))) as (editor, sid, project):
        editor.permission = select("allow_always")
        with anyio.fail_after(LIMIT_S):
            await prompt(editor, sid, "hi")
    (record,) = _store(tmp_path).records()
    assert record.root == str(project.resolve()) and record.digest.startswith("sha256:")
    async with editor_agent(tmp_path, fake(Reply(text="ok"))) as (editor, sid, _):
        with anyio.fail_after(LIMIT_S):
            await prompt(editor, sid, "hi")
        assert _trust_requests(editor) == []
        new = [m for m in editor.messages if m.get("result", {}).get("sessionId") == sid]
        assert new[0]["result"]["modes"]["currentModeId"] == "accept-edits"  # applied from session/new


async def test_a_project_trusted_meanwhile_is_not_asked_about(tmp_path: Path) -> None:
    _project(tmp_path)
    async with editor_agent(tmp_path, fake(Reply(text="ok"))) as (editor, sid, project):
        from acp_agent.config import load_config

        env = {"HOME": str(tmp_path / "user"), "XDG_CONFIG_HOME": str(tmp_path / "user" / ".config")}
        state = load_config(project, {}, env).project
        assert state is not None and not state.trusted
        _store(tmp_path).grant(state.root, state.digest, [])  # `acp-agent trust` in a terminal
        with anyio.fail_after(LIMIT_S):
            await prompt(editor, sid, "hi")
        assert _trust_requests(editor) == []
        modes = [
            u["currentModeId"] for u in editor.updates(sid) if u.get("sessionUpdate") == "current_mode_update"
        ]
        assert modes == ["accept-edits"]


@pytest.mark.process
@pytest.mark.parametrize("answer", ["allow_once", "reject_once"])
async def test_trusting_mid_session_applies_the_projects_sandbox_paths_to_the_next_command(
    tmp_path: Path, answer: str
) -> None:
    from tests.acp.coding._support import calls
    from tests.sandbox.conftest import require_landlock

    require_landlock()
    _project(tmp_path, 'sandbox_writable = ["../cache"]\n')
    (tmp_path / "cache").mkdir()
    model = fake(calls(("shell", {"command": "echo hi > ../cache/x"})), Reply(text="done"))
    async with editor_agent(tmp_path, model, capabilities={}) as (editor, sid, _):

        def answers(params: dict[str, Any]) -> dict[str, Any]:  # the trust question; the command: yes
            trusting = str(params["toolCall"]["toolCallId"]).startswith("trust_")
            return select(answer if trusting else "allow_once")(params)

        editor.permission = answers
        with anyio.fail_after(60):
            await prompt(editor, sid, "go")
        (asked,) = _trust_requests(editor)
        assert "lets sandboxed commands write ../cache" in json.dumps(asked["toolCall"])
        ran = editor.requests_of("session/request_permission")[-1]
        assert ran["toolCall"]["rawInput"]["command"] == "echo hi > ../cache/x"  # the command was allowed
    written = (tmp_path / "cache" / "x").exists()
    assert written == (answer == "allow_once")  # the sandbox took the trusted path, and only then
