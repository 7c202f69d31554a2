"""Check-then-use races in the file tools, through the real process: a folder of the project swapped for a
symlink out of it after the tool checked the path (while the editor answers a read; or by a thread that
flips it in a loop, as a background job would) gets no write, edit, patch or read outside, and the model is
told why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from harness.protected import ProtectedPaths
from tests.security._attack import Project, calls, reply, victim_agent
from tests.security._flip import flipping

pytestmark = [pytest.mark.anyio, pytest.mark.process]

SECRET = "TOP-SECRET-outside-the-project"


def _outside_state(project: Project) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(project.outside.iterdir())}


@pytest.mark.timeout(150)
async def test_a_folder_swapped_for_a_symlink_out_while_the_editor_reads_gets_no_write_outside(
    tmp_path: Path,
) -> None:
    project = Project.make(tmp_path)
    for name in ("s1", "s2", "s3"):
        (project.root / name).mkdir()
        (project.root / name / "notes.txt").write_text("hello\nline two\n")
    (project.outside / "notes.txt").write_text(SECRET + "\nline two\n")
    before = _outside_state(project)
    attacks = [
        ("edit_file", {"path": "s1/notes.txt", "old_text": "line two", "new_text": "PWNED"}),
        ("write_file", {"path": "s2/notes.txt", "content": "PWNED\n"}),
        (
            "apply_patch",
            {"patch": "--- a/s3/notes.txt\n+++ b/s3/notes.txt\n@@ -2 +2 @@\n-line two\n+PWNED\n"},
        ),
    ]
    swapped: list[str] = []

    def swap_while_reading(method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The editor reads the file the tool checked; before the answer, its folder becomes a link out."""
        if method != "fs/read_text_file":
            return None
        path = Path(params["path"])
        text = path.read_text()
        folder = path.parent
        if not folder.is_symlink():
            folder.rename(tmp_path / f"parked-{folder.name}")
            folder.symlink_to(project.outside, target_is_directory=True)
            swapped.append(folder.name)
        return {"content": text}

    editor_reads_only = {"readTextFile": True, "writeTextFile": False}  # the write goes to the disk
    async with victim_agent(project, calls(*attacks), mode="accept-edits", fs=editor_reads_only) as agent:
        agent.fs_answer = swap_while_reading
        with anyio.fail_after(120):
            sid = await agent.new_session(project.root)
            assert (await agent.prompt(sid, "edit the notes"))["stopReason"] == "end_turn"
    results = agent.tool_results(sid)
    assert swapped == ["s1", "s2", "s3"]  # each tool's path was swapped after its check
    assert _outside_state(project) == before
    assert len(results) == 3
    for text in results:
        assert "symbolic link" in text and "PWNED" not in text, text
    for name in ("s1", "s2", "s3"):  # and nothing changed inside either
        assert (tmp_path / f"parked-{name}" / "notes.txt").read_text() == "hello\nline two\n"


@pytest.mark.timeout(240)
async def test_a_thread_flipping_a_folder_to_a_symlink_out_never_gets_a_read_outside(tmp_path: Path) -> None:
    # The disk path (no editor fs), reads only: a write's protected-path check still trips on a link
    # swapped under its own realpath (an internal error, not a write outside: see the notes); the writes'
    # race is the test above, and the thread against the writes is the unit test in tests/tools.
    project = Project.make(tmp_path)
    sub = project.root / "sub"
    sub.mkdir()
    (sub / "notes.txt").write_text("inside\n")
    (project.outside / "notes.txt").write_text(SECRET + "\n")
    (project.outside / "more.txt").write_text(SECRET + "\n")
    before = _outside_state(project)
    rounds = 15  # one model step each (four calls), under the turn's step limit
    script = [
        *(
            reply(  # each round's inputs differ: the loop guard stops the same read repeated unchanged
                ("read_file", {"path": "sub/notes.txt", "limit": 100 + i}),
                ("grep", {"pattern": f"SECRET|inside|round{i}", "path": "sub"}),
                ("list_dir", {"path": "./" * i + "sub"}),
                ("glob", {"pattern": "*.txt", "path": "./" * i + "sub"}),
            )
            for i in range(rounds)
        ),
        reply(text="done"),
    ]
    async with victim_agent(project, script, mode="accept-edits", fs=False) as agent:
        with anyio.fail_after(200):
            sid = await agent.new_session(project.root)
            with flipping(sub, project.outside) as flips:
                assert (await agent.prompt(sid, "work in sub"))["stopReason"] == "end_turn"
    assert flips[0] > 0
    results = agent.tool_results(sid)
    assert len(results) == 4 * rounds
    assert not any(SECRET in r or "more.txt" in r for r in results), [r for r in results if SECRET in r]
    assert _outside_state(project) == before


def test_a_link_swapped_while_the_protected_check_reads_it_is_treated_as_protected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def swapped(path: object, *args: object, **kwargs: object) -> str:
        raise OSError(22, "Invalid argument")  # readlink's EINVAL when a link became a folder mid-lookup

    guard = ProtectedPaths.of([Path("/project")])
    monkeypatch.setattr("harness.protected.os.path.realpath", swapped)
    assert guard.why_real("/project/src/app.py") is not None
