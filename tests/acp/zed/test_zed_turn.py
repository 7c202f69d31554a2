"""The real ``acp-agent`` through a client that behaves like Zed: a turn with text, read, edit, shell,
write and plan; a cancelled turn with a command running in Zed's terminal; the session loaded in a new
process and replayed as it was shown. No error a Zed user would see, at any point."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.acp.zed.zed_client import Thread, ZedClient, zed

pytestmark = [pytest.mark.anyio, pytest.mark.process]

APP = "".join(f"# line {i}\n" for i in range(1, 40)) + "def answer():\n    return 41\n"
SHELL = "python3 -c 'print(1)' && echo \"two  words\""


def _script(path: Path, replies: list[dict[str, Any]]) -> dict[str, str]:
    path.write_text(json.dumps(replies), encoding="utf-8")
    return {"ACP_AGENT_PROVIDER": "script", "ACP_AGENT_SCRIPT": str(path)}


def _calls(thread: Thread, kind: str) -> list[Any]:
    return [c for c in thread.tools.values() if c.kind == kind]


def _tools(*calls: tuple[str, dict[str, Any]], text: str | None = None) -> dict[str, Any]:
    reply: dict[str, Any] = {"tool_calls": [{"name": n, "input": i} for n, i in calls]}
    if text:
        reply["text"] = text
    return reply


TURN = [
    _tools(("read_file", {"path": "app.py"}), text="Let me look."),
    _tools(("edit_file", {"path": "app.py", "old_text": "return 41", "new_text": "return 42"})),
    _tools(("shell", {"command": SHELL})),
    _tools(("write_file", {"path": "notes/NEW.md", "content": "# new\n"})),
    _tools(("plan_set", {"items": [{"content": "fix", "status": "completed"}, {"content": "test"}]})),
    {"text": "Fixed **it**."},
    _tools(("shell", {"command": "sleep 30"}), text="Running the slow one."),
]


async def _first_turn(client: ZedClient, project: Path) -> Thread:
    await client.initialize()
    client.default_config_options = {"mode": "accept-edits", "web_tools": False}
    thread, response = await client.new_thread()
    assert "modes" in response and response["configOptions"]  # Zed keeps the options, drops the modes
    options = {o["id"]: o["currentValue"] for o in thread.config_options}
    assert options["mode"] == "accept-edits" and options["web_tools"] is False
    # Registered only after its follow-up requests were answered, it still gets the slash commands.
    await client.until(lambda: "compact" in thread.commands)

    answer = await client.prompt(thread, "fix the answer")
    assert answer["result"] == {"stopReason": "end_turn"}
    assert thread.text().startswith("Let me look.") and "Fixed **it**." in thread.text()
    (read,) = _calls(thread, "read")
    assert read.status == "completed" and read.title == "Read app.py"
    assert read.locations[0]["path"] == str(project / "app.py")
    (edit, write) = _calls(thread, "edit")
    assert edit.title == "Edit app.py" and edit.status == "completed"
    (diff,) = [c for c in edit.content if c["type"] == "diff"]
    assert diff["oldText"] == APP and diff["newText"] == APP.replace("41", "42")
    assert write.content[0] == {
        "type": "diff",
        "path": str(project / "notes" / "NEW.md"),
        "oldText": None,
        "newText": "# new\n",
    }
    (shell,) = _calls(thread, "execute")
    (created,) = client.terminal_requests
    # One string, the command itself or the sandbox launcher's line around it: Zed joins args unquoted.
    assert "print(1)" in created["command"] and "args" not in created
    (label,) = client.labels.values()
    assert label == SHELL  # the terminal is labelled with the command itself
    assert shell.status == "completed" and shell.title == SHELL
    assert "1\ntwo  words" in shell.raw_output["output"]  # the whole command ran, quotes intact
    assert shell.content and shell.content[0]["type"] == "terminal"  # embedded, never re-sent
    assert not client.terminals  # released
    assert thread.plan == [
        {"content": "fix", "status": "completed", "priority": "medium"},
        {"content": "test", "status": "pending", "priority": "medium"},
    ]
    (plan_call,) = [c for c in thread.tools.values() if c.title == "Update the plan"]
    assert isinstance(plan_call.raw_output, dict)  # an object, never a bare array
    assert (project / "app.py").read_text() == APP.replace("41", "42")
    assert thread.title == "fix the answer"
    return thread


async def _cancelled_turn(client: ZedClient, thread: Thread) -> None:
    answers: list[dict[str, Any]] = []
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            answers.append(await client.prompt(thread, "and the slow one"))

        tg.start_soon(run)
        await client.until(lambda: bool(client.terminals))  # the command runs in Zed's terminal
        await client.cancel(thread)
    assert answers == [{"jsonrpc": "2.0", "id": answers[0]["id"], "result": {"stopReason": "cancelled"}}]
    slow = _calls(thread, "execute")[-1]
    assert slow.local_mark == "canceled" and slow.status != "failed"
    assert not client.terminals  # killed and released


async def test_a_zed_turn_cancel_and_load_show_no_error_a_zed_user_would_see(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text(APP)
    home = tmp_path / "home"
    env = _script(tmp_path / "script.json", TURN)
    async with zed(project, home, env) as client:
        thread = await _first_turn(client, project)
        await _cancelled_turn(client, thread)
        assert client.errors == []
        sid = thread.session_id

    async with zed(project, home, _script(tmp_path / "empty.json", [])) as client:
        await client.initialize()
        loaded, _ = await client.load_thread(sid)
        assert client.errors == []  # no dead terminal, no unknown call, every message valid
        users = [t for r, t in loaded.entries if r == "user"]
        assert users == ["fix the answer", "and the slow one"]
        roles = [r for r, _ in loaded.entries]
        after = loaded.entries[roles.index("user", 1) + 1 :]
        assert after and "Running the slow one." in after[0][1] and "(cancelled)" in after[0][1]
        (edit, write) = _calls(loaded, "edit")
        (diff,) = [c for c in edit.content if c["type"] == "diff"]
        assert diff["oldText"] == APP and diff["newText"] == APP.replace("41", "42")  # as shown, whole
        assert write.content[0]["oldText"] is None and write.content[0]["newText"] == "# new\n"
        shells = _calls(loaded, "execute")
        assert all(c["type"] != "terminal" for s in shells for c in s.content)  # their output as text
        assert "two  words" in json.dumps(shells[0].content)
        assert loaded.plan and loaded.plan[0]["content"] == "fix"  # the plan, re-sent
        assert loaded.title == "fix the answer"  # the title, re-sent


# 3000 lines in bursts of 200 (each within the terminal's 300 lines of scrollback): over the old
# byte limit Zed would have kept only the start; its scrollback alone keeps only the end.
COUNT = "for b in $(seq 0 14); do seq $((b * 200 + 1)) $((b * 200 + 200)); sleep 0.3; done"


async def test_long_command_output_reaches_the_model_with_its_start_and_end(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = [_tools(("shell", {"command": COUNT})), {"text": "done"}]
    async with zed(
        project, tmp_path / "home", _script(tmp_path / "s.json", script), scrollback=300
    ) as client:
        await client.initialize()
        client.default_config_options = {"mode": "accept-edits"}
        thread, _ = await client.new_thread()
        await client.prompt(thread, "count")
        (shell,) = _calls(thread, "execute")
        output = shell.raw_output["output"]
        lines = output.splitlines()
        assert lines[:3] == ["1", "2", "3"] and lines[-1] == "3000"
        assert "no longer held" not in output  # nothing was lost between two reads
        assert client.errors == []


async def test_a_rejected_command_keeps_zeds_rejected_mark(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = [_tools(("shell", {"command": "touch ran.txt"})), {"text": "ok"}]
    async with zed(project, tmp_path / "home", _script(tmp_path / "s.json", script)) as client:
        await client.initialize()
        client.permission = lambda params: "reject_once"
        thread, _ = await client.new_thread()
        await client.prompt(thread, "touch it")
        (shell,) = _calls(thread, "execute")
        assert shell.local_mark == "rejected" and shell.status != "failed"
        assert "(awaiting input)" not in json.dumps(shell.content)
        assert not (project / "ran.txt").exists()
        assert client.errors == []
