"""Every file tool, and ``/undo``'s journal, against a folder swapped for a symlink out of the project right
after the path was checked: nothing outside is read, written or deleted, and the model is told why.
On the ``openat2`` path and on the forced walk."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.beneath import openat2_works, use_openat2
from harness.testing import call_tool
from harness.tools import FileChange, Journal, Root, file_tools

pytestmark = pytest.mark.anyio

SECRET = "TOP-SECRET-outside"


@pytest.fixture(params=["openat2", "walk"])
def way(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "openat2" and not openat2_works():
        pytest.skip("this kernel has no openat2")
    before = use_openat2(request.param == "openat2")
    try:
        yield request.param
    finally:
        use_openat2(before)


class SwappingRoot(Root):
    """A ``Root`` whose check passes and then, before the tool uses the path, ``proj/sub`` becomes a
    symlink to the folder outside: the race, made deterministic."""

    __slots__ = ("armed", "outside", "sub")

    def __init__(self, proj: Path, outside: Path) -> None:
        super().__init__([proj])
        self.sub, self.outside, self.armed = proj / "sub", outside, True

    def resolve_sync(self, path: str) -> Path:
        real = super().resolve_sync(path)
        if self.armed:
            self.armed = False
            shutil.rmtree(self.sub)
            self.sub.symlink_to(self.outside, target_is_directory=True)
        return real


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    proj, outside = tmp_path / "proj", tmp_path / "outside"
    for base, text in ((proj / "sub", "inside"), (outside, SECRET)):
        base.mkdir(parents=True)
        (base / "notes.txt").write_text(f"{text}\nline two\n")
    return proj, outside


def snapshot(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "sub/notes.txt"}),
    ("write_file", {"path": "sub/notes.txt", "content": "PWNED\n"}),
    ("write_file", {"path": "sub/new.txt", "content": "PWNED\n"}),
    ("write_file", {"path": "sub/deeper/new.txt", "content": "PWNED\n"}),
    ("edit_file", {"path": "sub/notes.txt", "old_text": "line two", "new_text": "PWNED"}),
    ("apply_patch", {"patch": "--- a/sub/notes.txt\n+++ b/sub/notes.txt\n@@ -2 +2 @@\n-line two\n+PWNED\n"}),
    ("apply_patch", {"patch": "--- /dev/null\n+++ b/sub/made.txt\n@@ -0,0 +1 @@\n+PWNED\n"}),
    ("apply_patch", {"patch": "--- a/sub/notes.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-inside\n-line two\n"}),
    ("list_dir", {"path": "sub"}),
    ("glob", {"pattern": "*.txt", "path": "sub"}),
    ("grep", {"pattern": "SECRET|line", "path": "sub"}),
    ("grep", {"pattern": "SECRET|line", "path": "sub/notes.txt"}),
]


@pytest.mark.parametrize(("tool", "inp"), CALLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CALLS)])
async def test_a_folder_swapped_for_a_symlink_out_after_the_check_is_not_used(
    world: tuple[Path, Path], way: str, tool: str, inp: dict[str, Any]
) -> None:
    proj, outside = world
    before = snapshot(outside)
    root = SwappingRoot(proj, outside)
    tools = {t.spec().name: t for t in file_tools(root, Journal(root=root))}
    result = (await call_tool(tools[tool], inp)).result
    text = result.as_text()
    assert not root.armed  # the swap happened, after the check
    assert snapshot(outside) == before
    assert SECRET not in text
    assert result.error, text
    assert "symbolic link" in text or "symlink" in text, text


async def test_a_symlink_that_stays_inside_is_still_followed_for_reads_and_writes(
    world: tuple[Path, Path], way: str
) -> None:
    proj, _ = world
    (proj / "alias").symlink_to(proj / "sub", target_is_directory=True)
    (proj / "link.txt").symlink_to(proj / "sub" / "notes.txt")
    tools = {t.spec().name: t for t in file_tools(Root([proj]))}
    r = (await call_tool(tools["read_file"], {"path": "alias/notes.txt"})).result
    assert not r.error and "inside" in r.as_text()
    r = (await call_tool(tools["write_file"], {"path": "alias/via.txt", "content": "v\n"})).result
    assert not r.error and (proj / "sub" / "via.txt").read_text() == "v\n"
    r = (
        await call_tool(tools["edit_file"], {"path": "link.txt", "old_text": "inside", "new_text": "IN"})
    ).result
    assert not r.error, r.as_text()
    assert (proj / "sub" / "notes.txt").read_text().startswith("IN\n")
    assert (proj / "link.txt").is_symlink()  # the link's target is written, the link stays
    r = (await call_tool(tools["grep"], {"pattern": "IN", "path": "."})).result
    assert {Path(m["path"]).name for m in r.value["matches"]} >= {"notes.txt", "link.txt"}


async def test_undo_does_not_write_or_delete_through_a_folder_swapped_after_its_check(
    world: tuple[Path, Path], way: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    proj, outside = world
    before = snapshot(outside)
    journal = Journal(root=Root([proj]))
    journal.record(
        [FileChange(proj / "sub" / "notes.txt", "old\n", "inside\nline two\n")], "edit_file sub/notes.txt"
    )
    journal.record(
        [FileChange(proj / "sub" / "notes.txt", None, "inside\nline two\n")], "write_file sub/notes.txt"
    )
    checked = journal._problem  # pyright: ignore[reportPrivateUsage]
    checks: list[Path] = []

    def check_then_swap(path: Path) -> str | None:
        problem = checked(path)  # the check passes (at the plan, and again just before the change)...
        checks.append(path)
        if len(checks) % 2 == 0:
            shutil.rmtree(proj / "sub")  # ...and then the folder is a link out
            (proj / "sub").symlink_to(outside, target_is_directory=True)
        return problem

    monkeypatch.setattr(journal, "_problem", check_then_swap)
    deleted = await journal.undo(1)  # the creation: undoing it deletes the file
    assert [(d.action, "symbolic link" in (d.problem or "")) for d in deleted] == [("failed", True)]
    os.unlink(proj / "sub")
    (proj / "sub").mkdir()
    (proj / "sub" / "notes.txt").write_text("inside\nline two\n")
    restored = await journal.undo(1)  # the edit: undoing it writes the old text
    assert [(d.action, "symbolic link" in (d.problem or "")) for d in restored] == [("failed", True)]
    assert snapshot(outside) == before
