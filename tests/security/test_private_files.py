"""The agent's own data is the user's alone: session folders, transcripts, shown lines, metadata, logs, the
model cache, the trust store and the key ``setup`` writes are 0600 files in 0700 folders, whatever the
umask, and folders an older version made 0755 are tightened when used."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_agent.commands.setup_cmd import Choice, save_choice
from acp_agent.trust import TrustStore
from harness.atomic import open_private_append, private_dir
from tests.acp.instructions._support import project_agent, text

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The loosest usual umask: a file made without an explicit mode would be world-readable."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def everything_under(root: Path) -> list[Path]:
    return [root, *root.rglob("*")]


@pytest.mark.process
@pytest.mark.usefixtures("open_umask")
async def test_sessions_transcripts_and_logs_are_the_users_alone(tmp_path: Path) -> None:
    home = tmp_path / "agent-home"
    home.mkdir(mode=0o755)
    (home / "sessions").mkdir(mode=0o755)  # as an older version left it
    async with project_agent(tmp_path, [text("one")]) as p:
        await p.prompt("hello")
    sessions = home / "sessions"
    session = sessions / p.session
    assert (session / "meta.json").exists()
    written = [path for path in everything_under(sessions) if path.is_file()]
    assert {path.name for path in written} >= {"meta.json", "messages.jsonl"}
    assert {str(path): oct(mode(path)) for path in written if mode(path) != 0o600} == {}
    folders = [path for path in everything_under(sessions) if path.is_dir()]
    assert {str(path): oct(mode(path)) for path in folders if mode(path) != 0o700} == {}
    logs = home / "logs"
    assert mode(logs) == 0o700
    assert [oct(mode(f)) for f in logs.iterdir()] == ["0o600"]


@pytest.mark.usefixtures("open_umask")
def test_the_key_and_config_that_setup_writes_are_the_users_alone(tmp_path: Path) -> None:
    folder = tmp_path / "config" / "acp-agent"
    save_choice(folder, Choice("openai", "m", None, "sk-typed-key-0123456789"))
    assert mode(folder) == 0o700 and mode(tmp_path / "config") == 0o700
    assert {f.name: oct(mode(f)) for f in folder.iterdir()} == {"api-key": "0o600", "config.toml": "0o600"}


@pytest.mark.usefixtures("open_umask")
def test_the_trust_store_is_the_users_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    TrustStore(home).grant(tmp_path / "project", "sha256:x", ["x"])
    assert mode(home) == 0o700
    assert {f.name: oct(mode(f)) for f in home.iterdir()} == {"trust.json": "0o600", "trust.lock": "0o600"}


@pytest.mark.usefixtures("open_umask")
def test_a_wider_file_or_folder_of_the_users_is_tightened_and_a_file_in_the_way_is_refused(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "f"
    folder.mkdir(mode=0o755)
    private_dir(folder)
    assert mode(folder) == 0o700
    log = folder / "x.log"
    log.write_text("old\n")
    log.chmod(0o644)
    os.close(open_private_append(log))
    assert mode(log) == 0o600 and log.read_text() == "old\n"
    with pytest.raises(NotADirectoryError):
        private_dir(log)
