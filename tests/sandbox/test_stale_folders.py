"""A session's private sandbox folder outlives a process killed before it closed its sessions; the next
process removes such folders: its user's, of a pid that is gone, untouched for an hour."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from acp_agent.coding.permissions import _sandboxing
from acp_agent.coding.permissions._sandboxing import FOLDER_PREFIX, STALE_AFTER_S, sweep_stale_folders

pytestmark = pytest.mark.process


def _gone_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _folder(base: Path, pid: int, age_s: float, tail: str = "abc") -> Path:
    folder = base / f"{FOLDER_PREFIX}{pid}-{tail}"
    (folder / "tmp").mkdir(parents=True)
    then = time.time() - age_s
    os.utime(folder, (then, then))
    return folder


def test_only_old_folders_of_gone_processes_are_removed_once_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(_sandboxing, "_sweep_done", False)
    gone = _gone_pid()
    stale = _folder(tmp_path, gone, STALE_AFTER_S * 2)
    recent = _folder(tmp_path, gone, 0, tail="new")
    alive = _folder(tmp_path, os.getpid(), STALE_AFTER_S * 2)
    other = tmp_path / "acp-agent-sandbox-notapid"
    other.mkdir()
    assert sweep_stale_folders() == [stale]
    assert not stale.exists() and recent.exists() and alive.exists() and other.exists()
    late = _folder(tmp_path, gone + 1_000_000, STALE_AFTER_S * 2)
    assert sweep_stale_folders() == []  # once per process
    assert late.exists()
