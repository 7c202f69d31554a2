"""``Absent``: the protected names a sandboxed command made are moved aside once it ended, and finding them
costs a listing of each root's top plus a look-up only where a protected path may be (in memory: the files
are made by the test as a command would make them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.sandbox import Absent, SandboxPolicy


def _policy(*roots: Path) -> SandboxPolicy:
    return SandboxPolicy(roots=roots)


def test_a_protected_file_made_at_the_top_after_the_note_is_moved_aside(tmp_path: Path) -> None:
    absent = Absent.note(_policy(tmp_path))
    (tmp_path / ".envrc").write_text("eval evil\n")
    (tmp_path / "notes.txt").write_text("kept\n")
    assert absent.refuse() == [(tmp_path / ".envrc", tmp_path / ".envrc.refused")]
    assert (tmp_path / ".envrc.refused").read_text() == "eval evil\n"
    assert (tmp_path / "notes.txt").is_file()


def test_a_protected_path_made_inside_an_existing_top_folder_is_moved_aside_in_every_root(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for root in (first, second):
        (root / ".github").mkdir(parents=True)
    absent = Absent.note(_policy(first, second))
    (second / ".github" / "workflows").write_text("on: push\n")  # a plain file where a folder is protected
    assert absent.refuse() == [(second / ".github/workflows", second / ".github/workflows.refused")]


def test_what_existed_before_the_command_is_left_as_it_is(tmp_path: Path) -> None:
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "settings.json").write_text("{}")
    (tmp_path / ".envrc").write_text("mine\n")
    absent = Absent.note(_policy(tmp_path))
    assert absent.refuse() == []
    assert (tmp_path / ".envrc").read_text() == "mine\n"


def test_a_link_to_a_folder_at_the_top_is_looked_through_as_before(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / ".config").symlink_to(elsewhere)
    absent = Absent.note(_policy(project))
    (elsewhere / "mise").write_text("[tasks]\n")  # appears as project/.config/mise, through the link
    assert absent.refuse() == [(project / ".config/mise", project / ".config/mise.refused")]


def test_an_empty_project_costs_no_look_up_beyond_the_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Some 230 protected paths a root: only those whose first part is at the top are looked up (each
    cost an ``lstat`` at a command's start and end before, about 3 ms a command)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "src").mkdir()
    looked: list[str] = []
    lexists = os.path.lexists

    def counting(path: str | os.PathLike[str]) -> bool:
        looked.append(os.fspath(path))
        return lexists(path)

    monkeypatch.setattr(os.path, "lexists", counting)
    absent = Absent.note(_policy(tmp_path))
    assert looked == [str(tmp_path / ".git")]
    looked.clear()
    assert absent.refuse() == []
    assert looked == []  # .git existed before: not among the absent ones
    assert len(_policy(tmp_path).protected) > 200


def test_a_root_that_cannot_be_listed_has_every_protected_path_looked_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "gone"  # (a root that vanished: the listing fails, each path is looked up alone)
    looked: list[str] = []

    def absent(path: str | os.PathLike[str]) -> bool:
        looked.append(os.fspath(path))
        return False

    monkeypatch.setattr(os.path, "lexists", absent)
    Absent.note(_policy(gone))
    assert len(looked) == len(_policy(gone).protected)
