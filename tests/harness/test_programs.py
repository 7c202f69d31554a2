"""``find_program``: a program the agent starts on its own account is never taken from an empty or
relative ``PATH`` entry, nor from the folders the caller fences (the project's)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness.programs import absolute_path, find_program


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    find_program.cache_clear()


def _program(folder: Path, name: str = "tool") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_an_absolute_entry_outside_the_fenced_folders_is_found(tmp_path: Path) -> None:
    real = _program(tmp_path / "system")
    assert find_program("tool", str(tmp_path / "system"), ()) == str(real)


def test_empty_and_relative_entries_are_never_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _program(tmp_path)
    _program(tmp_path / "bin")
    for path in ("", os.pathsep, f"{os.pathsep}/nowhere", ".", "bin", f"./bin{os.pathsep}bin"):
        assert find_program("tool", path, ()) is None, path


def test_the_first_usable_entry_wins_and_fenced_ones_are_skipped(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _program(project / "bin")
    system = _program(tmp_path / "system")
    path = os.pathsep.join([str(project / "bin"), "", str(tmp_path / "system")])
    assert find_program("tool", path, (str(project),)) == str(system)
    assert find_program("tool", str(project / "bin"), ()) == str(project / "bin" / "tool")  # unfenced


def test_a_link_into_the_fenced_folder_is_fenced_too(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _program(project / "bin")
    (tmp_path / "looks-elsewhere").symlink_to(project / "bin")
    assert find_program("tool", str(tmp_path / "looks-elsewhere"), (str(project),)) is None


def test_a_folder_that_only_shares_a_prefix_with_the_fence_is_not_fenced(tmp_path: Path) -> None:
    other = _program(tmp_path / "project-tools")
    assert find_program("tool", str(tmp_path / "project-tools"), (str(tmp_path / "project"),)) == str(other)


def test_a_file_that_is_not_executable_or_a_folder_is_passed_over(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "tool").write_text("not executable")
    (tmp_path / "b" / "tool").mkdir(parents=True)
    real = _program(tmp_path / "c")
    path = os.pathsep.join(str(tmp_path / x) for x in "abc")
    assert find_program("tool", path, ()) == str(real)


def test_a_name_with_a_slash_is_the_users_path_taken_as_written() -> None:
    assert find_program("./scripts/server.sh", "/usr/bin", ()) == "./scripts/server.sh"


def test_a_fence_that_holds_the_home_folder_leaves_the_users_tool_folders_usable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project opened at ``~`` (or ``/``): ``~/.local/bin`` is where uv, pipx and the like put the user's
    tools; it is not the project's for that. Relative entries stay unsearched."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    tool = _program(home / ".local" / "bin")
    monkeypatch.chdir(home / ".local" / "bin")
    for fence in (home, tmp_path, Path("/")):
        assert find_program("tool", str(home / ".local" / "bin"), (str(fence),)) == str(tool)
        assert find_program("tool", ".", (str(fence),)) is None
    assert find_program("tool", str(home / ".local" / "bin"), (str(home / ".local"),)) is None


def test_a_childs_path_keeps_only_its_absolute_entries() -> None:
    """What the agent's children get (``Secrets.child_env``): their own lookups (``git`` in an allowed ``git
    status``, ``node`` under ``npx``) cannot reach the project's folders either."""
    from harness.secrets import Secrets

    path = os.pathsep.join(["", ".", "/usr/local/bin", "node_modules/.bin", "/usr/bin", ""])
    assert absolute_path(path) == os.pathsep.join(["/usr/local/bin", "/usr/bin"])
    assert Secrets().child_env({"PATH": path, "HOME": "/h"}) == {
        "PATH": os.pathsep.join(["/usr/local/bin", "/usr/bin"]),
        "HOME": "/h",
    }


def test_a_program_installed_after_it_was_not_found_is_found_at_the_next_look(tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    assert find_program("tool", str(folder), ()) is None  # the message tells the user to install it
    installed = _program(folder)
    assert find_program("tool", str(folder), ()) == str(installed)


def test_where_a_program_was_found_is_kept_per_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A project opened at the user's home: its tool folders are the user's, not fenced; for another user
    # (another HOME) the same folder is only the project's.
    home = tmp_path / "u"
    tool = _program(home / ".local" / "bin")
    monkeypatch.setenv("HOME", str(home))
    assert find_program("tool", str(tool.parent), (str(home),)) == str(tool)
    monkeypatch.setenv("HOME", str(tmp_path / "other"))
    assert find_program("tool", str(tool.parent), (str(home),)) is None
