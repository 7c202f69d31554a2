"""The hooks' shell: ``bash`` where ``PATH`` has one, else ``sh``, by its path; never one the project
supplies (an empty or relative ``PATH`` entry, or a folder of the session's), since every hook would run it
outside the sandbox; looked up once a process per ``PATH`` and folder, not once a session."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from acp_agent.coding.context._hooks import Hooks, hook_shell
from harness.programs import find_program
from harness.secrets import Secrets


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    find_program.cache_clear()


def _executable(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


async def _show(_text: str, _kind: str, _blocked: bool) -> None:
    pass


def _hooks_with(path: str, cwd: Path = Path("/")) -> Hooks:
    return Hooks((), session_id="s", cwd=cwd, environ={"PATH": path}, secrets=Secrets(), show=_show)


def test_a_path_with_bash_runs_hooks_with_bash_and_one_without_with_sh(tmp_path: Path) -> None:
    bash = _executable(tmp_path / "with", "bash")
    sh = _executable(tmp_path / "without", "sh")
    assert hook_shell(str(tmp_path / "with")) == (str(bash), "-c")
    assert hook_shell(str(tmp_path / "without")) == (str(sh), "-c")
    assert hook_shell(str(tmp_path / "nothing")) == ("/bin/sh", "-c")


def test_a_bash_the_project_supplies_is_never_the_hooks_shell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    _executable(project, "bash")
    _executable(project / "bin", "bash")
    system = _executable(tmp_path / "system", "bash")
    monkeypatch.chdir(project)  # (where a relative entry would lead a plain lookup)
    for entries in ([""], ["."], ["bin"], [str(project / "bin")]):
        path = os.pathsep.join([*entries, str(tmp_path / "system")])
        assert hook_shell(path, (str(project),)) == (str(system), "-c"), entries
        assert _hooks_with(path, project)._shell == (str(system), "-c")  # pyright: ignore[reportPrivateUsage]


def test_sessions_with_the_same_path_and_folder_look_the_shell_up_once(tmp_path: Path) -> None:
    _executable(tmp_path / "a", "bash")
    first, second = str(tmp_path / "a"), str(tmp_path / "b")
    before = find_program.lookups
    for _ in range(3):
        _hooks_with(first)
    _hooks_with(second)  # no bash there: bash, then sh, looked up
    assert find_program.lookups - before == 3  # once per PATH, whatever the number of sessions
