"""A project's configuration files (``config.toml``, ``mcp.json``, ``permissions.jsonl``) are read only as
regular files reached from the project folder without following a symlink: a linked file, a linked
``.acp-agent`` folder, a FIFO (never waited on) and a device are refused with a message that names the
file and what it is; the user's own files follow the user's own links (dotfile managers). Both permission
files, the project's and the user's, go through one reader (``acp_agent.rule_lines``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from acp_agent.coding.permissions._trust import ProjectRuleStore, RuleFileStore
from acp_agent.config import ConfigError, load_config
from acp_agent.rule_lines import read_rule_lines
from acp_agent.small_files import UnreadableFile, read_small_file
from acp_agent.trust import TrustStore
from harness.policy import PermissionStore

pytestmark = pytest.mark.anyio

ALLOW_ALL = json.dumps({"verdict": "allow", "kind": "tool", "tool": "*"}) + "\n"


def _env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "ACP_AGENT_HOME": str(tmp_path / "data"), "PATH": "/usr/bin:/bin"}


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    return project


def _load(project: Path, env: dict[str, str]) -> tuple[str | None, list[str]]:
    """The model the configuration ends up with, and its problems (as the session shows them)."""
    config = load_config(project, {}, env, trust=False, strict=False)
    return config.model, [str(p) for p in config.problems]


def _outside(tmp_path: Path) -> Path:
    """A folder outside the project holding a complete, valid ``.acp-agent`` configuration."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "config.toml").write_text('model = "LINKED-MODEL"\n')
    (elsewhere / "mcp.json").write_text(
        '{"mcpServers": {"linked": {"command": "touch", "args": ["CANARY"]}}}'
    )
    (elsewhere / "permissions.jsonl").write_text(ALLOW_ALL)
    return elsewhere


@pytest.mark.parametrize("target", ["outside", "inside", "dangling"])
def test_a_symlinked_project_config_is_refused_and_named(tmp_path: Path, target: str) -> None:
    project, elsewhere = _project(tmp_path), _outside(tmp_path)
    (project / ".acp-agent").mkdir()
    (project / "real.toml").write_text('model = "LINKED-MODEL"\n')
    to = {
        "outside": elsewhere / "config.toml",
        "inside": project / "real.toml",
        "dangling": tmp_path / "nothing",
    }[target]
    (project / ".acp-agent" / "config.toml").symlink_to(to)
    (project / ".acp-agent" / "permissions.jsonl").write_text("")  # the folder counts as the project's
    model, problems = _load(project, _env(tmp_path))
    assert model != "LINKED-MODEL"
    if target != "dangling":
        assert any("config.toml" in p and "symbolic link" in p and str(to) in p for p in problems), problems


def test_a_symlinked_acp_agent_folder_is_refused_for_every_file_in_it(tmp_path: Path) -> None:
    project, elsewhere = _project(tmp_path), _outside(tmp_path)
    (project / ".acp-agent").symlink_to(elsewhere)
    config = load_config(project, {}, _env(tmp_path), trust=True, strict=False)  # even when trusted
    assert config.model != "LINKED-MODEL"
    assert "linked" not in config.mcp_servers
    problems = [str(p) for p in config.problems]
    for name in ("config.toml", "mcp.json"):
        assert any(name in p and ".acp-agent, a symbolic link" in p for p in problems), (name, problems)
    rules = read_rule_lines(project / ".acp-agent" / "permissions.jsonl", beneath=project)
    assert rules.objects == () and rules.error is not None and ".acp-agent" in rules.error
    # The trust request names the file it cannot read (it leads out, but the project placed it).
    assert config.project is not None
    assert [i.value for i in config.project.items if i.key == "rules"] == [{"unreadable": rules.error}]


@pytest.mark.parametrize("name", ["config.toml", "mcp.json", "permissions.jsonl"])
async def test_a_fifo_where_a_project_file_should_be_never_hangs_and_is_named(
    tmp_path: Path, name: str
) -> None:
    project = _project(tmp_path)
    (project / ".acp-agent").mkdir()
    if name != "config.toml":
        (project / ".acp-agent" / "config.toml").write_text("")
    os.mkfifo(project / ".acp-agent" / name)
    with anyio.fail_after(10):
        _model, problems = await anyio.to_thread.run_sync(_load, project, _env(tmp_path))
        rules = await anyio.to_thread.run_sync(
            lambda: read_rule_lines(project / ".acp-agent" / "permissions.jsonl", beneath=project)
        )
    if name == "permissions.jsonl":
        assert rules.error == "is a FIFO (named pipe), not a regular file"
    else:
        assert any(name in p and "FIFO" in p for p in problems), problems


def test_a_device_is_never_read_as_a_project_file() -> None:
    for limit in (1, 1024):
        with pytest.raises(UnreadableFile, match="is a character device, not a regular file"):
            read_small_file(Path("/dev/zero"), limit, beneath=Path("/dev"))
        with pytest.raises(UnreadableFile, match="character device"):
            read_small_file(Path("/dev/zero"), limit, follow=True)  # the user's own: no device either


def test_a_folder_where_a_file_should_be_is_named_as_one(tmp_path: Path) -> None:
    (tmp_path / "config.toml").mkdir()
    with pytest.raises(UnreadableFile, match="is a folder, not a regular file"):
        read_small_file(tmp_path / "config.toml", 1024, beneath=tmp_path)


def test_the_users_own_config_follows_the_users_own_link(tmp_path: Path) -> None:
    env = _env(tmp_path)
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "config.toml").write_text('model = "DOTFILES-MODEL"\n')
    user_dir = Path(env["HOME"]) / ".config" / "acp-agent"
    user_dir.mkdir(parents=True)
    (user_dir / "config.toml").symlink_to(dotfiles / "config.toml")
    project = _project(tmp_path)
    model, problems = _load(project, env)
    assert model == "DOTFILES-MODEL", problems
    os.remove(user_dir / "config.toml")
    os.mkfifo(user_dir / "config.toml")  # but never a FIFO
    with pytest.raises(ConfigError, match="FIFO"):
        load_config(project, {}, env, trust=False, strict=True)


def test_a_regular_project_config_is_still_read(tmp_path: Path) -> None:
    project = _project(tmp_path)
    (project / ".acp-agent").mkdir()
    (project / ".acp-agent" / "config.toml").write_text('model = "PROJECT-MODEL"\n')
    model, problems = _load(project, _env(tmp_path))
    assert model == "PROJECT-MODEL" and problems == []


BYTES = {
    "plain": ALLOW_ALL.encode(),
    "BOM": b"\xef\xbb\xbf" + ALLOW_ALL.encode(),
    "CRLF": ALLOW_ALL.encode().replace(b"\n", b"\r\n") * 2,
    "undecodable": ALLOW_ALL.encode() + b"\xff\n",
    "NUL": b'{"verdict":"al\x00low","kind":"tool","tool":"*"}\n' + ALLOW_ALL.encode(),
    "not JSON": b"[[\n" + ALLOW_ALL.encode(),
}


@pytest.mark.parametrize("variant", list(BYTES))
async def test_the_users_and_the_projects_permission_files_are_read_by_one_reader(
    tmp_path: Path, variant: str
) -> None:
    project = _project(tmp_path)
    (project / ".acp-agent").mkdir()
    project_file = project / ".acp-agent" / "permissions.jsonl"
    user_file = tmp_path / "home" / "permissions.jsonl"
    user_file.parent.mkdir(parents=True, exist_ok=True)
    for path in (project_file, user_file):
        path.write_bytes(BYTES[variant])
    trust = TrustStore(tmp_path / "data")
    whole = ProjectRuleStore(project_file, trust, trusted_rules=frozenset(), root=None)  # all apply
    user = RuleFileStore(user_file)
    assert await user.rules() == await whole.rules()
    read = read_rule_lines(user_file)
    assert read.error == read_rule_lines(project_file, beneath=project).error
    # The user's store reads what the trust check reads, byte for byte (a harness store decodes alike).
    assert [r.to_dict() for r in await user.rules()] == [
        r.to_dict() for r in await PermissionStore(user_file).rules()
    ]


async def test_a_symlinked_user_permission_file_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.jsonl"
    target.write_text(ALLOW_ALL)
    link = tmp_path / "permissions.jsonl"
    link.symlink_to(target)
    assert await RuleFileStore(link).rules() == []
    assert read_rule_lines(link).error == f"is a symbolic link (to {target}), which is not followed"


async def test_a_project_permission_file_under_a_linked_folder_gives_no_rule(tmp_path: Path) -> None:
    project, elsewhere = _project(tmp_path), _outside(tmp_path)
    (project / ".acp-agent").symlink_to(elsewhere)
    trust = TrustStore(tmp_path / "data")
    store = ProjectRuleStore(
        project / ".acp-agent" / "permissions.jsonl", trust, trusted_rules=frozenset(), root=project
    )
    assert await store.rules() == []
