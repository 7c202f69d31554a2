"""The sandbox end to end: the real ``acp-agent`` process with a scripted model, the official ACP SDK as
the editor. Commands run through the editor's terminal (the client runs the wrapped command line
itself) and through the local runner (a client without terminals)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from tests.acp.coding.test_sdk_end_to_end import Editor, agent_env, open_agent

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("landlock"), pytest.mark.process]


async def open_session(conn: Any, project: Path, *, terminal: bool) -> str:
    from acp import schema

    await conn.initialize(
        protocol_version=1,
        client_capabilities=schema.ClientCapabilities(
            fs=schema.FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=terminal
        ),
    )
    return (await conn.new_session(cwd=str(project), mcp_servers=[])).session_id


def make_project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / ".git" / "config").write_text("[core]\n")
    (project / "src").mkdir()
    (tmp_path / "outside").mkdir()
    return project


def shell_step(**inp: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "shell", "input": inp}]}


def results(editor: Editor) -> list[str]:
    from acp import schema

    texts: list[str] = []
    for u in editor.updates:
        if isinstance(u, schema.ToolCallProgress) and u.status in ("completed", "failed"):
            for c in u.content or []:
                inner = getattr(c, "content", None)
                if inner is not None and getattr(inner, "text", None):
                    texts.append(inner.text)
            texts.append(str(u.raw_output))
    return texts


async def accept_edits_turn(
    tmp_path: Path, project: Path, script: list[dict[str, Any]], *, terminal: bool, text: str = "go"
) -> Editor:
    """One scripted turn in ``accept-edits``, ending ``end_turn``; the editor that saw it."""
    import acp

    editor = Editor([])
    env = agent_env(tmp_path, script, "s") | {"ACP_AGENT_DEFAULT_MODE": "accept-edits"}
    async with await open_agent(editor, env, project) as (conn, _proc):
        sid = await open_session(conn, project, terminal=terminal)
        result = await conn.prompt(session_id=sid, prompt=[acp.text_block(text)])
        assert result.stop_reason == "end_turn"
    return editor


@pytest.mark.parametrize("terminal", [True, False], ids=["editor-terminal", "local-runner"])
async def test_accept_edits_runs_a_sandboxed_command_unasked_and_it_stays_in_the_project(
    tmp_path: Path, terminal: bool
) -> None:

    project = make_project(tmp_path)
    out = tmp_path / "outside"
    command = (
        f"echo in > src/in.txt; (echo child > {out}/child.txt) & wait; echo evil >> .git/config; "
        f"echo out > {out}/x.txt"
    )
    script = [shell_step(command=command), {"text": "ran"}]
    editor = await accept_edits_turn(tmp_path, project, script, terminal=terminal)
    assert editor.permissions == []  # no prompt for a sandboxed command in accept-edits
    assert (project / "src" / "in.txt").read_text() == "in\n"
    assert list(out.iterdir()) == []
    assert (project / ".git" / "config").read_text() == "[core]\n"
    assert any('sandbox: \\"off\\"' in t or 'sandbox: "off"' in t for t in results(editor)), results(editor)
    if terminal:
        assert editor.calls[0] == "create"


@pytest.mark.parametrize("terminal", [True, False], ids=["editor-terminal", "local-runner"])
async def test_network_is_refused_in_the_sandbox_and_an_approved_network_escalation_connects(
    tmp_path: Path, terminal: bool
) -> None:
    import acp

    project = make_project(tmp_path)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    port = server.getsockname()[1]
    connect = (
        'python3 -c "import socket; s=socket.socket(); s.settimeout(3); '
        f"print('connect-result', s.connect_ex(('127.0.0.1', {port})))\""
    )
    script = [
        shell_step(command=connect),
        shell_step(command=connect, network=True),
        {"text": "done"},
    ]
    editor = Editor(["allow_once"])
    env = agent_env(tmp_path, script, "n") | {"ACP_AGENT_DEFAULT_MODE": "accept-edits"}
    try:
        async with await open_agent(editor, env, project) as (conn, _proc):
            sid = await open_session(conn, project, terminal=terminal)
            await conn.prompt(session_id=sid, prompt=[acp.text_block("go")])
    finally:
        server.close()
    assert len(editor.permissions) == 1  # only the escalation asked
    asked = editor.permissions[0]
    assert (asked.title or "").startswith("Run with network access")
    outputs = [t for t in results(editor) if "connect-result" in t]
    assert "connect-result 0" not in outputs[0]
    assert "connect-result 0" in outputs[-1]


async def test_leaving_the_sandbox_asks_and_a_rejected_escalation_does_not_run(tmp_path: Path) -> None:
    import acp

    project = make_project(tmp_path)
    canary = tmp_path / "outside" / "canary.txt"
    script = [
        shell_step(command=f"echo x > {canary}", sandbox="off"),
        {"text": "rejected"},
        shell_step(command=f"echo y > {canary}", sandbox="off"),
        {"text": "allowed"},
    ]
    editor = Editor(["reject_once", "allow_once"])
    env = agent_env(tmp_path, script, "e") | {"ACP_AGENT_DEFAULT_MODE": "accept-edits"}
    async with await open_agent(editor, env, project) as (conn, _proc):
        sid = await open_session(conn, project, terminal=False)
        await conn.prompt(session_id=sid, prompt=[acp.text_block("first")])
        assert not canary.exists()
        await conn.prompt(session_id=sid, prompt=[acp.text_block("second")])
    assert len(editor.permissions) == 2
    assert editor.permissions[0].title.startswith("Run outside the sandbox")
    assert canary.read_text() == "y\n"


async def test_without_a_sandbox_accept_edits_asks_and_the_editor_is_told_once(tmp_path: Path) -> None:
    import acp
    from acp import schema

    project = make_project(tmp_path)
    script = [
        shell_step(command="echo one > src/one.txt"),
        shell_step(command="echo two > src/two.txt"),
        {"text": "done"},
    ]
    editor = Editor(["allow_once", "allow_once"])
    env = agent_env(tmp_path, script, "f") | {
        "ACP_AGENT_DEFAULT_MODE": "accept-edits",
        "ACP_AGENT_SANDBOX_UNAVAILABLE": "1",
    }
    async with await open_agent(editor, env, project) as (conn, _proc):
        sid = await open_session(conn, project, terminal=False)
        await conn.prompt(session_id=sid, prompt=[acp.text_block("go")])
    assert len(editor.permissions) == 2  # today's asking
    notices = [
        u.content.text
        for u in editor.updates
        if isinstance(u, schema.AgentMessageChunk) and "not sandboxed" in getattr(u.content, "text", "")
    ]
    assert len(notices) == 1
    assert (project / "src" / "two.txt").exists()


@pytest.mark.parametrize("terminal", [True, False], ids=["editor-terminal", "local-runner"])
async def test_a_sandboxed_env_shows_no_credential_even_where_the_editor_starts_it_with_its_own(
    tmp_path: Path, terminal: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    import acp

    key = "sk-sandbox-test-key-0123456789"
    # The editor's own environment holds the key (and a copy under another name), as an editor started
    # from a shell that exported it would; this test editor starts terminals with it and ignores the
    # agent's `env` list, so only the sandbox launcher stands between the key and the command.
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("COPIED_KEY", key)
    project = make_project(tmp_path)
    script = [shell_step(command="env; echo key-check: ${OPENAI_API_KEY:-unset}"), {"text": "done"}]
    editor = Editor([])
    env = agent_env(tmp_path, script, "k") | {
        "ACP_AGENT_DEFAULT_MODE": "accept-edits",
        "OPENAI_API_KEY": key,
        "COPIED_KEY": key,
    }
    async with await open_agent(editor, env, project) as (conn, _proc):
        sid = await open_session(conn, project, terminal=terminal)
        await conn.prompt(session_id=sid, prompt=[acp.text_block("go")])
    assert editor.permissions == []  # it ran sandboxed, unasked
    output = "\n".join(results(editor))
    assert "PATH=" in output and "TMPDIR=" in output  # the command ran, in the sandbox's temp folder
    assert "key-check: unset" in output
    for leaked in ("OPENAI_API_KEY=", "COPIED_KEY=", key):
        assert leaked not in output, f"{leaked} reached a sandboxed command"
    assert "'sandbox': 'sandboxed" in output, "the command did not run sandboxed"
    if terminal:
        assert editor.calls[0] == "create"


@pytest.mark.parametrize("terminal", [True, False], ids=["editor-terminal", "local-runner"])
async def test_a_build_that_makes_a_top_level_folder_runs_unasked_once_the_folder_is_named_in_make_dirs(
    tmp_path: Path, terminal: bool
) -> None:

    project = make_project(tmp_path)
    script = [
        shell_step(command="mkdir build && echo o > build/out.o"),  # refused by the sandbox: a new root entry
        shell_step(command="echo o > build/out.o", make_dirs=["build"]),
        shell_step(command="true", make_dirs=[".git/hooks"]),  # not directly in the project folder
        {"text": "built"},
    ]
    editor = await accept_edits_turn(tmp_path, project, script, terminal=terminal, text="build it")
    assert editor.permissions == []
    assert (project / "build" / "out.o").read_text() == "o\n"
    texts = results(editor)
    assert any("make_dirs" in t and "Permission denied" in t for t in texts), texts
    assert any("not directly in a project folder" in t for t in texts), texts
    assert sorted(p.name for p in (project / ".git" / "hooks").iterdir()) == []
