"""``SessionStore.create_sync``: a new session's folder is one ``mkdir`` (the sessions folder is made or
tightened once a process), and stays the user's alone."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from acp_agent.session._store import SessionMeta, SessionStore, now_iso


def _meta(session_id: str, cwd: Path) -> SessionMeta:
    return SessionMeta(session_id, str(cwd), now_iso(), now_iso())


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_sessions_are_the_users_alone_even_under_an_open_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        store = SessionStore(tmp_path / "home" / "sessions")
        for session_id in ("s1", "s2"):
            store.create_sync(_meta(session_id, tmp_path))
    finally:
        os.umask(old)
    root = tmp_path / "home" / "sessions"
    assert _mode(tmp_path / "home") == 0o700 and _mode(root) == 0o700
    for session_id in ("s1", "s2"):
        assert _mode(root / session_id) == 0o700
        assert _mode(root / session_id / "meta.json") == 0o600
    assert SessionStore(root).index.look() is not None


def test_a_sessions_folder_an_older_version_left_open_is_tightened_at_the_first_new_session(
    tmp_path: Path,
) -> None:
    root = tmp_path / "sessions"
    root.mkdir(mode=0o755)
    root.chmod(0o755)
    SessionStore(root).create_sync(_meta("s1", tmp_path))
    assert _mode(root) == 0o700


def test_a_sessions_folder_removed_while_the_agent_runs_is_made_again_private(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    store = SessionStore(root)
    store.create_sync(_meta("s1", tmp_path))
    shutil.rmtree(root)
    store.create_sync(_meta("s2", tmp_path))
    assert _mode(root) == 0o700 and _mode(root / "s2") == 0o700
    assert (root / "s2" / "meta.json").is_file()


def test_a_new_session_never_takes_over_an_existing_folder(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    store = SessionStore(root)
    store.create_sync(_meta("s1", tmp_path))
    (root / "s2").mkdir()
    with pytest.raises(FileExistsError):
        store.create_sync(_meta("s2", tmp_path))
    with pytest.raises(FileExistsError):
        store.create_sync(_meta("s1", tmp_path))
    assert not (root / "s2" / "meta.json").exists()
