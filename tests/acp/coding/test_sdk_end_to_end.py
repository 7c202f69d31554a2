"""Issue 4's "done when", end to end: the real ``acp-agent`` process with a scripted model, driven by the
official ACP Python SDK as the editor (fs and terminal served by the client)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.anyio, pytest.mark.process]

AGENT = [sys.executable, "-m", "acp_agent"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK runs on asyncio


def agent_env(tmp: Path, script: list[dict[str, Any]], name: str) -> dict[str, str]:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(script))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_AGENT_", "OPENAI_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env |= {
        "ACP_AGENT_PROVIDER": "script",
        "ACP_AGENT_SCRIPT": str(path),
        "ACP_AGENT_HOME": str(tmp / "home"),
        "XDG_CONFIG_HOME": str(tmp / "user-config"),
    }
    return env


class Editor:
    """The SDK ``Client`` side: records updates, answers permissions by a queue of choices, serves fs
    and terminals (each terminal a process group of its own)."""

    def __init__(self, answers: list[str]) -> None:
        self.updates: list[Any] = []
        self.answers = answers
        self.permissions: list[Any] = []
        self.writes: list[tuple[str, str]] = []
        self.reads: list[str] = []
        self.terminals: dict[str, dict[str, Any]] = {}
        self.calls: list[str] = []
        self.terminal_started = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kwargs: Any) -> Any:
        from acp import schema

        self.permissions.append(tool_call)
        choice = self.answers.pop(0)
        return schema.RequestPermissionResponse(
            outcome=schema.AllowedOutcome(outcome="selected", option_id=choice)
        )

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> Any:
        from acp import schema

        self.reads.append(path)
        return schema.ReadTextFileResponse(content=Path(path).read_text())  # noqa: ASYNC240 (a test editor)

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        self.writes.append((path, content))
        Path(path).write_text(content)  # noqa: ASYNC240 (a test editor)
        return None

    async def create_terminal(
        self, session_id: str, command: str, args: Any = None, cwd: Any = None, **kw: Any
    ) -> Any:
        from acp import schema

        # As editors do (Zed among them): the command line runs in a shell, stdin empty.
        line = " ".join([command, *(args or [])])
        proc = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            f"({line}) </dev/null",
            cwd=cwd,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        tid = f"t{len(self.terminals)}"
        t: dict[str, Any] = {"proc": proc, "out": b""}

        async def pump() -> None:
            assert proc.stdout is not None
            while chunk := await proc.stdout.read(4096):
                t["out"] += chunk

        t["pump"] = asyncio.ensure_future(pump())
        self.terminals[tid] = t
        self.calls.append("create")
        self.terminal_started.set()
        return schema.CreateTerminalResponse(terminal_id=tid)

    async def terminal_output(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        from acp import schema

        t = self.terminals[terminal_id]
        return schema.TerminalOutputResponse(output=t["out"].decode(), truncated=False)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        from acp import schema

        t = self.terminals[terminal_id]
        code = await t["proc"].wait()
        await t["pump"]
        return schema.WaitForTerminalExitResponse(exit_code=code if code >= 0 else None)

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.calls.append("kill")
        try:
            os.killpg(self.terminals[terminal_id]["proc"].pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return None

    async def release_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> Any:
        self.calls.append("release")
        return None


async def open_agent(editor: Editor, env: dict[str, str], project: Path) -> Any:
    import acp

    return acp.spawn_agent_process(cast(Any, editor), AGENT[0], *AGENT[1:], env=env, cwd=project)


async def _session(conn: Any, project: Path) -> str:
    from acp import schema

    await conn.initialize(
        protocol_version=1,
        client_capabilities=schema.ClientCapabilities(
            fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
        ),
    )
    new = await conn.new_session(cwd=str(project), mcp_servers=[])
    assert new.modes is not None and new.modes.current_mode_id == "default"
    return new.session_id


async def test_read_edit_and_test_command_end_to_end_with_the_sdk_client(tmp_path: Path) -> None:
    import acp
    from acp import schema

    project = tmp_path / "project"
    project.mkdir()
    app = project / "app.py"
    app.write_text("def answer():\n    return 41\n")
    (project / "test_app.py").write_text(
        "from app import answer\nassert answer() == 42, answer()\nprint('ok')\n"
    )
    edit = {"path": "app.py", "old_text": "return 41", "new_text": "return 42"}
    first = [
        {
            "tool_calls": [
                {"name": "edit_file", "input": {"path": "app.py", "old_text": "def", "new_text": "def"}}
            ]
        },
        {"text": "no-op edit checked"},
        {"tool_calls": [{"name": "read_file", "input": {"path": "app.py"}}]},
        {"tool_calls": [{"name": "edit_file", "input": edit}]},
        {"tool_calls": [{"name": "shell", "input": {"command": "python3 test_app.py"}}]},
        {"text": "fixed and tested"},
    ]
    # 1) accept-edits: the edit runs without asking. 2) default: the edit asks (allow_always), the test
    # command asks (allow_once); the diff and the terminal are in the updates; the file changes through
    # fs/write_text_file.
    editor = Editor(["allow_always", "allow_once"])
    async with await open_agent(editor, agent_env(tmp_path, first, "first"), project) as (conn, _proc):
        sid = await _session(conn, project)
        await conn.set_session_mode(session_id=sid, mode_id="accept-edits")
        result = await conn.prompt(session_id=sid, prompt=[acp.text_block("touch")])
        assert result.stop_reason == "end_turn"
        assert editor.permissions == []  # no question for the edit in accept-edits
        sid2 = (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id
        result = await conn.prompt(session_id=sid2, prompt=[acp.text_block("fix the answer")])
        assert result.stop_reason == "end_turn"
        kinds = [p.kind for p in editor.permissions]
        assert kinds == ["edit", "execute"]
        assert editor.permissions[0].content[0].type == "diff"
        assert str(app.resolve()) in editor.reads
        assert editor.writes[-1] == (str(app.resolve()), "def answer():\n    return 42\n")
        assert app.read_text() == "def answer():\n    return 42\n"
        diffs = [
            c
            for u in editor.updates
            if isinstance(u, schema.ToolCallProgress) and u.status == "completed"
            for c in u.content or []
            if getattr(c, "type", None) == "diff"
        ]
        assert any(d.old_text == "def answer():\n    return 41\n" for d in diffs)
        terminals = [
            c
            for u in editor.updates
            if isinstance(u, schema.ToolCallProgress)
            for c in u.content or []
            if getattr(c, "type", None) == "terminal"
        ]
        assert terminals and terminals[-1].terminal_id == "t0"
        assert editor.calls == ["create", "release"]
        assert b"ok" in editor.terminals["t0"]["out"]

    # 3) after a restart: the "always" answer for edits in this directory holds (no question), the test
    # command asks again; cancelling during it kills the command's process group.
    second = [
        {
            "tool_calls": [
                {"name": "edit_file", "input": {"path": "app.py", "old_text": "42", "new_text": "43"}}
            ]
        },
        {"tool_calls": [{"name": "shell", "input": {"command": "sleep 60 & wait"}}]},
        {"text": "never"},
    ]
    editor = Editor(["allow_once"])
    async with await open_agent(editor, agent_env(tmp_path, second, "second"), project) as (conn, _proc):
        sid = await _session(conn, project)

        async def cancel_when_running() -> None:
            await editor.terminal_started.wait()
            await conn.cancel(session_id=sid)

        canceller = asyncio.ensure_future(cancel_when_running())
        result = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[acp.text_block("again")]), 20)
        await canceller
        assert result.stop_reason == "cancelled"
        assert [p.kind for p in editor.permissions] == ["execute"]  # the edit was remembered
        assert app.read_text() == "def answer():\n    return 43\n"
        assert editor.calls == ["create", "kill", "release"]
        proc = editor.terminals["t0"]["proc"]
        await asyncio.wait_for(proc.wait(), 10)
        for _ in range(500):  # the whole group is gone, the backgrounded sleep included
            if not _live_members(proc.pid):
                break
            await asyncio.sleep(0.02)
        assert not _live_members(proc.pid)


def _live_members(pgid: int) -> list[int]:
    """Processes of the group that are not zombies (an orphan's zombie may wait for a busy init)."""
    alive: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(entry.name))
    return alive
