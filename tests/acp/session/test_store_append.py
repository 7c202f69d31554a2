"""A session's appended records (what it showed, its threads' lines) stay the user's alone: the folder is
made private, or tightened, at its first append in a process; a folder removed since is not made again (the
session was deleted by another process), nor made by an append at all (a session's folder is made when it is
created); the files are 0600; records are appended whole and in order."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import anyio
import pytest

from acp_agent.session._store import SessionStore

pytestmark = pytest.mark.anyio


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_appends_land_whole_and_in_order_in_a_private_file(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    store.directory("sess_a").mkdir(parents=True)
    with anyio.fail_after(10):
        await store.append_shown("sess_a", [{"n": 1, "text": "é ✓"}])
        await store.append_shown("sess_a", [{"n": 2}, {"n": 3}])
    path = store.shown_path("sess_a")
    assert _records(path) == [{"n": 1, "text": "é ✓"}, {"n": 2}, {"n": 3}]
    assert _mode(path) == 0o600
    assert _mode(path.parent) == 0o700


async def test_a_folder_open_to_others_is_tightened_at_its_first_append(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    folder = store.directory("sess_old")
    folder.mkdir(parents=True)
    os.chmod(folder, 0o755)  # as an older version made it
    with anyio.fail_after(10):
        await store.append_shown("sess_old", [{"n": 1}])
    assert _mode(folder) == 0o700


async def test_a_folder_removed_before_or_after_an_append_is_not_made_again(tmp_path: Path) -> None:
    """Removed by another process's delete of the session: the append fails (the turn's writes then stop,
    ``test_session_gone``) rather than making a session of one file."""
    store = SessionStore(tmp_path / "sessions")
    with anyio.fail_after(10):
        with pytest.raises(FileNotFoundError):
            await store.append_shown("sess_b", [{"n": 0}])  # never made in this process
        assert not store.directory("sess_b").exists()
        store.directory("sess_b").mkdir(parents=True)
        await store.append_shown("sess_b", [{"n": 1}])
        folder = store.directory("sess_b")
        (folder / "shown.jsonl").unlink()
        folder.rmdir()
        with pytest.raises(FileNotFoundError):
            await store.append_shown("sess_b", [{"n": 2}])
    assert not folder.exists()
