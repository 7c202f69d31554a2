"""The hooks' shell is looked up once a process per ``PATH``, not once a session (``hook_shell``)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from acp_agent.coding.context import _hooks
from acp_agent.coding.context._hooks import Hooks, hook_shell
from harness.secrets import Secrets


def _executable(folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


async def _show(_text: str, _kind: str, _blocked: bool) -> None:
    pass


def _hooks_with(path: str) -> Hooks:
    return Hooks(
        (),
        session_id="s",
        cwd=Path("/"),
        environ={"PATH": path},
        secrets=Secrets(),
        show=_show,
    )


def test_a_path_with_bash_runs_hooks_with_bash_and_one_without_with_sh(tmp_path: Path) -> None:
    _executable(tmp_path / "with", "bash")
    (tmp_path / "without").mkdir()
    assert hook_shell(str(tmp_path / "with")) == ("bash", "-c")
    assert hook_shell(str(tmp_path / "without")) == ("sh", "-c")


def test_sessions_with_the_same_path_look_the_shell_up_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looked: list[str | None] = []
    real_which = shutil.which

    def which(name: str, mode: int = os.F_OK | os.X_OK, path: str | None = None) -> str | None:
        looked.append(path)
        return real_which(name, mode, path)

    monkeypatch.setattr(_hooks.shutil, "which", which)
    _executable(tmp_path / "a", "bash")
    first, second = str(tmp_path / "a"), str(tmp_path / "b")
    for _ in range(3):
        _hooks_with(first)
    _hooks_with(second)
    assert looked == [first, second]  # once per PATH, whatever the number of sessions
