"""A call its tool would refuse for a path outside the project is refused without asking.

Before, a write outside the project asked for approval (the mode's policy runs first) and, approved, was
refused by the tool anyway. Now the refusal comes first, in the tool's own words: no
``session/request_permission`` is sent, nothing is written, and a write inside the project still asks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.coding.permissions._confine import Confinement
from harness import ToolCall
from harness.tools import Root
from tests.security._attack import Project, calls, victim_agent

pytestmark = pytest.mark.anyio


def _patch(path: str) -> str:
    return f"--- /dev/null\n+++ {path}\n@@ -0,0 +1 @@\n+x\n"


def outside_calls(project: Project) -> list[tuple[str, dict[str, Any]]]:
    out = project.outside
    return [
        ("write_file", {"path": str(out / "w.txt"), "content": "x"}),
        ("write_file", {"path": "../outside/dots.txt", "content": "x"}),
        ("write_file", {"path": "link/through.txt", "content": "x"}),  # a symlink that leads out
        ("edit_file", {"path": str(out / "e.txt"), "old_text": "a", "new_text": "b"}),
        ("apply_patch", {"patch": _patch("inside.txt") + _patch(str(out / "p.txt"))}),
        ("shell", {"command": "touch s.txt", "cwd": str(out)}),
    ]


def test_the_refusal_is_the_tools_own_words_and_only_for_paths_outside(tmp_path: Path) -> None:
    project = Project.make(tmp_path)
    os.symlink(project.outside, project.root / "link")
    confine = Confinement(
        Root([project.root]), ["write_file", "edit_file", "apply_patch", "read_file", "shell"]
    )
    for name, inp in outside_calls(project):
        why = confine.refusal(ToolCall("c", name, inp))
        assert why is not None and why.startswith(f"{name}: ") and "allowed directories" in why, (name, inp)
    for name, inp in [
        ("write_file", {"path": "in.txt", "content": "x"}),
        ("write_file", {"path": str(project.root / "sub" / "in.txt"), "content": "x"}),
        ("apply_patch", {"patch": _patch("a.txt")}),
        ("shell", {"command": "ls"}),
        ("write_file", {"path": 3}),  # malformed: the tool's own input check answers
    ]:
        assert confine.refusal(ToolCall("c", name, inp)) is None, (name, inp)


@pytest.mark.process
@pytest.mark.timeout(150)
async def test_a_write_outside_the_project_is_refused_without_a_question(tmp_path: Path) -> None:
    project = Project.make(tmp_path)
    os.symlink(project.outside, project.root / "link")
    attempts = outside_calls(project)
    inside = ("write_file", {"path": "inside.txt", "content": "hello"})
    script = calls(*attempts, inside)
    async with victim_agent(project, script, mode="default") as agent:
        agent.choose = lambda p: "allow_once"  # whatever is asked is allowed: only the inside write is
        with anyio.fail_after(120):
            sid = await agent.new_session(project.root)
            assert (await agent.prompt(sid, "write things"))["stopReason"] == "end_turn"
    asked = [r["toolCall"]["rawInput"] for r in agent.asked()]
    assert asked == [inside[1]]  # one question: the write inside the project
    results = agent.tool_results(sid)
    assert len(results) == len(attempts) + 1
    for (name, _), text in zip(attempts, results[:-1], strict=True):
        assert text.startswith(f"{name}: ") and "the allowed directories" in text, text
    assert not list(project.outside.iterdir())  # nothing was written outside
    assert (project.root / "inside.txt").read_text() == "hello"


@pytest.mark.process
@pytest.mark.timeout(150)
async def test_accept_edits_refuses_a_write_outside_the_project_without_a_question_too(
    tmp_path: Path,
) -> None:
    project = Project.make(tmp_path)
    script = calls(("write_file", {"path": str(project.outside / "x.txt"), "content": "x"}))
    async with victim_agent(project, script, mode="accept-edits") as agent:
        agent.choose = lambda p: "allow_once"
        with anyio.fail_after(120):
            sid = await agent.new_session(project.root)
            await agent.prompt(sid, "write")
    assert agent.asked() == []
    assert "outside the allowed directories" in agent.tool_results(sid)[0]
    assert not (project.outside / "x.txt").exists()
