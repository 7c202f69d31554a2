"""``/undo`` re-resolves every path through the session's root, never follows a link out, and asks
before overwriting a file that changed since the edit (or touching a protected path)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from harness.testing import call_tool
from harness.tools import EditFile, Journal, Root, WriteFile
from tests.security._attack import Project, Victim, calls, victim_agent

pytestmark = pytest.mark.anyio


def _said(agent: Victim, sid: str) -> str:
    return "".join(
        u["content"].get("text", "")
        for u in agent.updates(sid)
        if u.get("sessionUpdate") == "agent_message_chunk"
    )


@pytest.mark.process
@pytest.mark.timeout(120)
async def test_undo_after_a_folder_became_a_symlink_writes_nothing_outside(tmp_path: Path) -> None:
    project = Project.make(tmp_path)
    script = calls(("write_file", {"path": "sub/new.txt", "content": "made by the agent\n"}))
    async with victim_agent(project, script, mode="accept-edits") as agent:
        with anyio.fail_after(90):
            sid = await agent.new_session(project.root)
            await agent.prompt(sid, "make a file")
            assert (project.root / "sub" / "new.txt").read_text() == "made by the agent\n"
            # Between the edit and the undo, sub/ is replaced by a link to a folder outside.
            (project.root / "sub").rename(tmp_path / "moved")
            (project.outside / "new.txt").write_text("precious\n")
            (project.root / "sub").symlink_to(project.outside)
            await agent.prompt(sid, "/undo")
    assert (project.outside / "new.txt").read_text() == "precious\n"
    said = _said(agent, sid)
    assert "skipped" in said and "symbolic link" in said


@pytest.mark.process
@pytest.mark.timeout(120)
async def test_undo_asks_before_losing_changes_made_since_and_a_no_keeps_them(tmp_path: Path) -> None:
    project = Project.make(tmp_path)
    target = project.root / "notes.txt"
    target.write_text("original\n")
    script = calls(("edit_file", {"path": "notes.txt", "old_text": "original", "new_text": "by the agent"}))
    async with victim_agent(project, script, mode="accept-edits") as agent:
        with anyio.fail_after(90):
            sid = await agent.new_session(project.root)
            await agent.prompt(sid, "edit it")
            target.write_text("typed by the user since\n")
            await agent.prompt(sid, "/undo")  # the client says no
            assert target.read_text() == "typed by the user since\n"
            [asked] = agent.asked()
            note = asked["toolCall"]["content"][0]["content"]["text"]
            assert "changed since the agent's edit" in note
            assert [o["kind"] for o in asked["options"]] == ["allow_once", "reject_once"]
            agent.choose = lambda p: "allow_once"
            await agent.prompt(sid, "/undo")
    assert target.read_text() == "original\n"
    assert "Nothing was undone" in _said(agent, sid) and "those changes are lost" in _said(agent, sid)


@pytest.mark.process
@pytest.mark.timeout(120)
async def test_undo_of_a_protected_file_asks_even_after_the_write_was_allowed(tmp_path: Path) -> None:
    project = Project.make(tmp_path)
    script = calls(("write_file", {"path": ".envrc", "content": "export A=1\n"}))
    answers = iter(["allow_once", "reject_once"])
    async with victim_agent(project, script, mode="accept-edits") as agent:
        agent.choose = lambda p: next(answers)
        with anyio.fail_after(90):
            sid = await agent.new_session(project.root)
            await agent.prompt(sid, "add an envrc")
            await agent.prompt(sid, "/undo")
    _write, undo = agent.asked()
    assert "direnv" in undo["toolCall"]["content"][0]["content"]["text"]
    assert (project.root / ".envrc").read_text() == "export A=1\n"


async def test_the_journal_skips_a_path_that_now_leads_outside_the_root(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    journal = Journal(root=Root([root]))
    await call_tool(WriteFile(Root([root]), journal=journal), {"path": "sub/a.txt", "content": "x\n"})
    (root / "sub" / "a.txt").unlink()
    (root / "sub").rmdir()
    (root / "sub").symlink_to(outside)
    (outside / "a.txt").write_text("precious\n")
    plan = await journal.plan_undo()
    assert plan.reverts[0].blocked is not None
    [done] = await journal.apply(plan)
    assert done.action == "skipped" and (outside / "a.txt").read_text() == "precious\n"
    assert len(journal) == 0


async def test_the_journal_plan_says_which_files_changed_since(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    journal = Journal(root=Root([tmp_path]))
    await call_tool(
        EditFile(Root([tmp_path]), journal=journal), {"path": "a.txt", "old_text": "one", "new_text": "two"}
    )
    assert not (await journal.plan_undo()).reverts[0].changed_since
    (tmp_path / "a.txt").write_text("three\n")
    plan = await journal.plan_undo()
    assert plan.reverts[0].changed_since and len(journal) == 1  # planning changes nothing
