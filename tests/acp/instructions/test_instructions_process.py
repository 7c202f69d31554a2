"""Issue 16 through the real process: what of AGENTS.md and the environment reaches the model request."""

from __future__ import annotations

import datetime
import shutil
from pathlib import Path

import pytest

from tests.acp.instructions._support import (
    calls,
    git,
    project_agent,
    system_of,
    text,
    told,
    tool_messages,
)

pytestmark = [pytest.mark.anyio, pytest.mark.process]


def _repo(tmp: Path) -> Path:
    repo = tmp / "project"
    (repo / ".git").mkdir(parents=True)
    return repo


async def test_the_root_and_nested_agents_md_reach_the_model_root_first_each_under_its_path(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    cwd = repo / "services" / "api"
    cwd.mkdir(parents=True)
    (repo / "AGENTS.md").write_text("Root rule: use tabs.\n")
    (repo / "services" / "AGENTS.md").write_text("Services rule: no globals.\n")
    (cwd / "AGENTS.md").write_text("API rule: every handler has a test.\n")
    async with project_agent(tmp_path, [text("ok")], cwd=cwd) as p:
        assert (await p.prompt("hello"))["result"] == {"stopReason": "end_turn"}
        system = system_of(p.bodies()[0])
    heads = [f"## {repo / 'AGENTS.md'}", f"## {repo / 'services' / 'AGENTS.md'}", f"## {cwd / 'AGENTS.md'}"]
    at = [system.index(h) for h in heads]
    assert at == sorted(at), "root first, down to the cwd"
    assert system.index("Root rule") > at[0] and system.index("API rule") > at[2]


async def test_a_folder_without_agents_md_gives_its_claude_md_and_the_user_file_comes_first(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    (repo / "CLAUDE.md").write_text("Claude-style rule: run make check.\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "AGENTS.md").write_text("Sub rule.\n")
    (repo / "sub" / "CLAUDE.md").write_text("Never shown: AGENTS.md wins in its folder.\n")
    user_file = tmp_path / "user" / ".config" / "acp-agent" / "AGENTS.md"
    user_file.parent.mkdir(parents=True)
    user_file.write_text("User rule: answer in English.\n")
    async with project_agent(tmp_path, [text("ok")], cwd=repo / "sub") as p:
        await p.prompt("hello")
        system = system_of(p.bodies()[0])
    assert "Claude-style rule: run make check." in system
    assert "Never shown" not in system
    assert system.index("User rule") < system.index("Claude-style rule") < system.index("Sub rule")
    assert f"## {user_file} (the user's instructions, for every project)" in system


async def test_a_deeper_agents_md_arrives_with_the_first_read_below_it_and_only_then(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "AGENTS.md").write_text("Root rule.\n")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "AGENTS.md").write_text("Package rule: keep the API stable.\n")
    (repo / "pkg" / "a.py").write_text("A = 1\n")
    (repo / "pkg" / "b.py").write_text("B = 2\n")
    replies = [
        calls(("read_file", {"path": "pkg/a.py"})),
        calls(("read_file", {"path": "pkg/b.py"})),
        text("done"),
    ]
    async with project_agent(tmp_path, replies, cwd=repo) as p:
        await p.prompt("look at pkg")
        first, second, third = p.bodies()
    assert "Package rule" not in system_of(first)
    [read_a] = tool_messages(second)
    assert "A = 1" in read_a and "Package rule: keep the API stable." in read_a
    assert str(repo / "pkg" / "AGENTS.md") in read_a
    read_b = tool_messages(third)[-1]
    assert "B = 2" in read_b and "Package rule" not in read_b, "attached once"


async def test_instructions_changed_between_turns_are_read_again(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "AGENTS.md").write_text("Version one.\n")
    async with project_agent(tmp_path, [text("one"), text("two")], cwd=repo) as p:
        await p.prompt("first")
        (repo / "AGENTS.md").write_text("Version two, longer.\n")
        await p.prompt("second")
        first, second = p.bodies()
    assert "Version one." in system_of(first)
    # Told as a message in front of the second prompt, never as an edit of the system prompt (which
    # would start the prompt cache anew): the second request extends the first.
    assert system_of(second) == system_of(first)
    assert second["messages"][: len(first["messages"])] == first["messages"]
    update = second["messages"][-1]["content"]
    assert update.startswith("<context>\n") and "Version two, longer." in update
    assert "Version one." not in update and update.endswith("second")


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
async def test_the_environment_block_names_the_date_the_branch_and_uncommitted_changes(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "feature-x")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "first")
    other = tmp_path / "other"
    other.mkdir()
    async with project_agent(tmp_path, [text("one"), text("two")], cwd=repo) as p:
        await p.agent.call("session/close", {"sessionId": p.session})
        p.session = (
            await p.agent.call(
                "session/new", {"cwd": str(repo), "mcpServers": [], "additionalDirectories": [str(other)]}
            )
        )["sessionId"]
        await p.prompt("first")
        (repo / "a.txt").write_text("changed\n")
        await p.prompt("second")
        bodies = p.bodies()
        first, second = (told(b) for b in bodies)
    # The environment is a message: the second request extends the first, whose system is unchanged.
    assert bodies[1]["messages"][: len(bodies[0]["messages"])] == bodies[0]["messages"]
    assert system_of(bodies[1]) == system_of(bodies[0]) and "# Environment" not in system_of(bodies[0])
    today = datetime.date.today()
    assert f"Today's date: {today.isoformat()} ({today.strftime('%A')})" in first
    assert f"- {repo}: a git repository (root {repo}), branch feature-x, no uncommitted changes" in first
    assert f"- {other}: not a git repository" in first
    assert f"- {repo}: a git repository (root {repo}), branch feature-x, uncommitted changes" in second
    assert "Operating system: " in first and "Shell: the shell tool runs commands with bash" in first
