"""``acp-agent sandbox -- CMD``, the real process: the command writes in the current folder and its own
temp folder only, gets its exit status back, and leaves no temp folder behind."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.usefixtures("landlock"), pytest.mark.process]


def _sandbox(cwd: Path, script: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_agent", "sandbox", *flags, "--", "sh", "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_command_writes_here_and_in_its_temp_folder_which_is_gone_afterwards(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)  # (a new entry directly in the project folder is refused)
    outside = tmp_path / "outside"
    outside.mkdir()
    script = (
        f'echo in > src/in.txt; echo t > "$TMPDIR/t"; mktemp > src/made.txt; echo "$TMPDIR" > src/tmpdir.txt; '
        f"echo out > {outside}/x.txt; exit 3"
    )
    done = _sandbox(project, script)
    assert done.returncode == 3, done.stderr
    assert (project / "src" / "in.txt").read_text() == "in\n"
    assert list(outside.iterdir()) == []
    assert "Permission denied" in done.stderr or "Read-only file system" in done.stderr
    temp = Path((project / "src" / "tmpdir.txt").read_text().strip())
    assert temp.name.startswith("acp-agent-sandbox-")
    assert (
        Path((project / "src" / "made.txt").read_text().strip()).parent == temp
    )  # mktemp found a writable TMPDIR
    assert not temp.exists()


def test_read_only_writes_nothing_here_but_still_has_a_temp_folder(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    done = _sandbox(tmp_path, 'echo t > "$TMPDIR/t" && cat "$TMPDIR/t"; echo x > src/here.txt', "--read-only")
    assert done.stdout == "t\n"
    assert not (tmp_path / "src" / "here.txt").exists()


@pytest.mark.parametrize("with_policy_file", [False, True])
def test_the_agents_own_folder_stays_protected_with_or_without_a_policy_file(
    tmp_path: Path, with_policy_file: bool
) -> None:
    # The harness's protected list names no application: the command passes the agent's, also under a
    # policy file that names no "protected" list of its own.
    project = tmp_path / "project"
    (project / ".acp-agent").mkdir(parents=True)
    (project / "src").mkdir()
    flags: tuple[str, ...] = ()
    if with_policy_file:
        policy = tmp_path / "policy.json"
        policy.write_text(f'{{"roots": ["{project}"]}}', encoding="utf-8")
        flags = ("--policy", str(policy))
    done = _sandbox(project, "echo x > .acp-agent/config.toml; echo y > src/ok", *flags)
    assert not (project / ".acp-agent" / "config.toml").exists(), done.stderr
    assert (project / "src" / "ok").read_text() == "y\n", done.stderr


def test_the_home_folders_bin_stays_protected_when_the_home_folder_is_the_current_folder(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "tool").write_text("original\n")
    (home / "src").mkdir()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "acp_agent",
            "sandbox",
            "--",
            "sh",
            "-c",
            "echo evil > bin/tool; echo ok > src/x",
        ],
        cwd=home,
        env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (home / "src" / "x").read_text() == "ok\n", done.stderr
    assert (home / "bin" / "tool").read_text() == "original\n", done.stderr
