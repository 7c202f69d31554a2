"""The editor's word is final: an ``fs/*`` error fails the tool with the editor's message (the disk is not
used behind its back); after a timeout the disk is never written. Only "method not found" and the
documented out-of-project answer (-32002) send the tools to the disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.coding import _editor
from harness.testing import Reply
from tests.acp.coding._support import editor_agent, fake, final, prompt, text_of
from tests.security._attack import Answer, Project, calls, victim_agent

pytestmark = [pytest.mark.anyio, pytest.mark.process]


def _refuse(method: str, code: int, message: str) -> Any:
    def answer(m: str, p: dict[str, Any]) -> Answer | None:
        return (code, message) if m == method else None

    return answer


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("tool", "inp"),
    [
        ("write_file", {"path": "a.txt", "content": "by the agent\n"}),
        ("edit_file", {"path": "a.txt", "old_text": "original", "new_text": "by the agent"}),
        ("apply_patch", {"patch": "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-original\n+by the agent\n"}),
    ],
)
async def test_a_rejected_write_fails_the_tool_with_the_editors_words_and_leaves_the_disk(
    tmp_path: Path, tool: str, inp: dict[str, Any]
) -> None:
    project = Project.make(tmp_path)
    (project.root / "a.txt").write_text("original\n")
    async with victim_agent(project, calls((tool, inp)), mode="accept-edits") as agent:
        agent.fs_answer = _refuse("fs/write_text_file", -32603, "The user rejected the edit")
        with anyio.fail_after(90):
            sid = await agent.new_session(project.root)
            await agent.prompt(sid, "change it")
    [result] = agent.tool_results(sid)
    assert "The user rejected the edit" in result
    assert (project.root / "a.txt").read_text() == "original\n"
    assert agent.asked("fs/write_text_file")


@pytest.mark.timeout(120)
async def test_a_failed_read_fails_the_tool_instead_of_reading_the_disk(tmp_path: Path) -> None:
    project = Project.make(tmp_path)
    (project.root / "a.txt").write_text("on disk\n")
    async with victim_agent(project, calls(("read_file", {"path": "a.txt"}))) as agent:
        agent.fs_answer = _refuse("fs/read_text_file", -32603, "the buffer could not be loaded")
        with anyio.fail_after(90):
            sid = await agent.new_session(project.root)
            await agent.prompt(sid, "read it")
    [result] = agent.tool_results(sid)
    assert "the buffer could not be loaded" in result and "on disk" not in result


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("code", "why"), [(-32002, "outside the editor's project"), (-32601, "not implemented")]
)
async def test_out_of_project_and_method_not_found_use_the_disk(tmp_path: Path, code: int, why: str) -> None:
    project = Project.make(tmp_path)
    async with victim_agent(
        project, calls(("write_file", {"path": "b.txt", "content": "x\n"})), mode="accept-edits"
    ) as agent:
        agent.fs_answer = _refuse("fs/write_text_file", code, why)
        with anyio.fail_after(90):
            sid = await agent.new_session(project.root)
            await agent.prompt(sid, "write it")
    assert (project.root / "b.txt").read_text() == "x\n"


async def test_after_a_timeout_the_disk_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_editor, "FS_TIMEOUT_S", 0.2)
    never = anyio.Event()
    model = fake(
        Reply(tool_calls=[("write_file", {"path": "new/dir/c.txt", "content": "x\n"}, "w1")]),
        Reply(text="ok"),
    )
    async with editor_agent(tmp_path, model, mode="accept-edits") as (editor, sid, project):
        handle = editor.handle

        async def slow(method: str, p: dict[str, Any]) -> Any:
            if method == "fs/write_text_file":
                await never.wait()  # an editor that never answers
            return await handle(method, p)

        editor.handle = slow
        with anyio.fail_after(30):
            await prompt(editor, sid, "write")
        text = text_of(final(editor, "w1"))
    assert "did not answer fs/write_text_file" in text and "nothing was written to the disk" in text
    assert not (project / "new").exists()  # the folders made for the write are gone again
