"""Issue 16 through the real process: custom commands (listed, expanded) and skills (listed, loaded)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.acp.instructions._support import (
    LIMIT_S,
    Project,
    calls,
    project_agent,
    system_of,
    text,
    tool_messages,
    user_messages,
)

pytestmark = [pytest.mark.anyio, pytest.mark.process]


def _commands(p: Project) -> dict[str, dict[str, Any]]:
    """The latest ``available_commands_update``, by name."""
    lists = [u["availableCommands"] for u in p.updates() if u["sessionUpdate"] == "available_commands_update"]
    assert lists, "no available_commands_update"
    return {c["name"]: c for c in lists[-1]}


async def _listed(p: Project, name: str) -> dict[str, dict[str, Any]]:
    with anyio.fail_after(LIMIT_S):
        await p.agent.notification(
            lambda n: (
                n.get("method") == "session/update"
                and n["params"]["update"]["sessionUpdate"] == "available_commands_update"
                and any(c["name"] == name for c in n["params"]["update"]["availableCommands"])
            )
        )
    return _commands(p)


async def test_a_custom_command_is_listed_with_its_hint_and_expanded_with_its_arguments(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    (project / ".acp-agent" / "commands").mkdir(parents=True)
    (project / ".acp-agent" / "commands" / "review.md").write_text(
        "---\ndescription: Review a pull request\nargument-hint: <pr> <priority>\n---\n"
        "Review PR #$1 with priority $2. Everything: $ARGUMENTS\n"
    )
    (project / ".claude" / "commands" / "frontend").mkdir(parents=True)
    (project / ".claude" / "commands" / "frontend" / "lint.md").write_text(
        "# Lint the frontend\nRun the linter.\n"
    )
    async with project_agent(tmp_path, [text("reviewing")]) as p:
        listed = await _listed(p, "review")
        assert listed["review"] == {
            "name": "review",
            "description": "Review a pull request (project)",
            "input": {"hint": "<pr> <priority>"},
        }
        assert listed["frontend:lint"]["description"] == "Lint the frontend (project)"
        assert "input" not in listed["frontend:lint"]
        assert listed["init"]["description"].startswith("Explore the project and write")
        assert {"mode", "model", "undo", "compact"} <= set(listed), "the built-in commands stay"
        await p.prompt('/review 42 "very high"')
        sent = user_messages(p.bodies()[0])[0]
    assert sent == 'Review PR #42 with priority very high. Everything: 42 "very high"\n'


async def test_a_command_file_added_during_the_session_is_listed_without_a_prompt(tmp_path: Path) -> None:
    async with project_agent(tmp_path, []) as p:
        await _listed(p, "init")
        folder = p.cwd / ".acp-agent" / "commands"
        folder.mkdir(parents=True)
        (folder / "deploy.md").write_text("---\ndescription: Deploy it\n---\nDeploy to $1.\n")
        listed = await _listed(p, "deploy")
    assert listed["deploy"]["input"] == {"hint": "arguments"}


async def test_a_skill_is_listed_by_name_and_description_and_its_body_comes_only_with_a_skill_call(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    skill = project / ".claude" / "skills" / "pdf-forms"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: pdf-forms\ndescription: >\n  Fill PDF forms. Use when the user mentions a PDF form.\n---\n"
        "# Filling forms\nSECRET-BODY-MARKER: run scripts/fill.py on the form.\n"
    )
    (skill / "scripts" / "fill.py").write_text("print('filled')\n")
    replies = [
        calls(("skill", {"name": "pdf-forms"}), id="load"),
        calls(("skill", {"name": "pdf-forms", "file": "scripts/fill.py"})),
        text("done"),
    ]
    async with project_agent(tmp_path, replies) as p:
        await p.prompt("fill the form")
        first, second, third = p.bodies()
        updates = p.updates()
    assert "- pdf-forms: Fill PDF forms. Use when the user mentions a PDF form." in system_of(first)
    assert "SECRET-BODY-MARKER" not in system_of(first) and not tool_messages(first)
    [loaded] = tool_messages(second)
    assert "SECRET-BODY-MARKER: run scripts/fill.py" in loaded and "- scripts/fill.py (" in loaded
    assert "print('filled')" in tool_messages(third)[-1]
    starts = [u for u in updates if u["sessionUpdate"] == "tool_call" and u["toolCallId"] == "load_0"]
    assert starts and starts[0]["kind"] == "read"
    titled = [u for u in updates if u.get("toolCallId") == "load_0" and u.get("title")]
    assert titled[-1]["title"] == "Load skill pdf-forms"
