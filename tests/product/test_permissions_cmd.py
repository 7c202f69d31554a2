"""`acp-agent permissions`: the remembered "always" rules, listed and removable by the user."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from harness.policy import PermissionStore, Rule, Verdict

pytestmark = pytest.mark.process


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_agent", "permissions", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def test_remembered_rules_are_listed_numbered_and_removed_by_number(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    config_home = tmp_path / "config"
    env = {**os.environ, "XDG_CONFIG_HOME": str(config_home), "HOME": str(tmp_path)}

    async def remember() -> None:
        store = PermissionStore(project / ".acp-agent" / "permissions.jsonl")
        await store.add(Rule.command("pytest", Verdict.ALLOW))
        await store.add(Rule.command("git push", Verdict.DENY))
        await PermissionStore(config_home / "acp-agent" / "permissions.jsonl").add(
            Rule.command("ls", Verdict.ALLOW)
        )

    anyio.run(remember)
    listed = _cli("--cwd", str(project), "list", env=env)
    assert listed.returncode == 0, listed.stderr
    lines = [line.strip() for line in listed.stdout.splitlines()]
    numbered = [line for line in lines if line[:2] in ("1.", "2.", "3.")]
    assert (
        len(numbered) == 3 and "pytest" in numbered[0] and "git push" in numbered[1] and "ls" in numbered[2]
    )

    removed = _cli("--cwd", str(project), "remove", "2", env=env)
    assert removed.returncode == 0 and "git push" in removed.stdout
    after = _cli("--cwd", str(project), env=env).stdout
    assert "git push" not in after and "pytest" in after and "ls" in after
    assert "git push" not in (project / ".acp-agent" / "permissions.jsonl").read_text()


def test_a_number_that_is_not_listed_is_a_clear_error(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path)}
    out = _cli("--cwd", str(project), "remove", "7", env=env)
    assert out.returncode == 1 and "no rule numbered 7" in out.stderr and out.stdout == ""


def test_a_users_rule_file_kept_as_a_dotfiles_link_is_listed_and_its_link_never_replaced(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    config_home = tmp_path / "config"
    (config_home / "acp-agent").mkdir(parents=True)
    kept = tmp_path / "dotfiles" / "permissions.jsonl"
    kept.parent.mkdir()
    kept.write_text('{"verdict": "deny", "kind": "command", "tool": "shell", "command": "rm"}\n')
    (config_home / "acp-agent" / "permissions.jsonl").symlink_to(kept)
    env = {**os.environ, "XDG_CONFIG_HOME": str(config_home), "HOME": str(tmp_path)}
    listed = _cli("--cwd", str(project), "list", env=env)
    assert listed.returncode == 0 and "1." in listed.stdout and "rm" in listed.stdout, listed
    removed = _cli("--cwd", str(project), "remove", "1", env=env)
    assert removed.returncode == 1 and "symbolic link" in removed.stderr and str(kept) in removed.stderr
    assert (config_home / "acp-agent" / "permissions.jsonl").is_symlink() and "rm" in kept.read_text()
