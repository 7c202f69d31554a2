"""The user's own files kept by a dotfiles manager (links out of ``~/.config/acp-agent``, as stow makes, or
into the Nix store, as home-manager does) are read through their links, as the user's ``config.toml`` always
was: the user's rules apply, never silently dropped. A link is never replaced by a change to the rules, and
where the links lead stays the agent's own: protected from the tools, kept from sandboxed commands. The
project's rule file still follows no link."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from acp_agent.coding.permissions._modes import protected_paths
from acp_agent.coding.permissions._protected import own_link_targets
from acp_agent.coding.permissions._sandboxing import agent_private_paths
from acp_agent.coding.permissions._trust import RuleFileStore
from acp_agent.config import load_config
from harness.policy import PermissionFileError, Rule, Verdict
from harness.testing import Reply
from tests.acp.coding._support import calls, editor_agent, fake, final, prompt

pytestmark = pytest.mark.anyio

DENY_READ = {"verdict": "deny", "kind": "tool", "tool": "read_file"}


def dotfiles(tmp_path: Path) -> tuple[Path, Path]:
    """The user's configuration folder whose ``permissions.jsonl`` and ``config.toml`` are links into a
    dotfiles repository; returns (the folder, the repository's copy of the rules)."""
    folder = tmp_path / "user" / ".config" / "acp-agent"
    folder.mkdir(parents=True)
    repo = tmp_path / "dotfiles" / "acp-agent"
    repo.mkdir(parents=True)
    (repo / "permissions.jsonl").write_text(json.dumps(DENY_READ) + "\n")
    (repo / "config.toml").write_text('default_mode = "default"\n')
    for name in ("permissions.jsonl", "config.toml"):
        (folder / name).symlink_to(repo / name)
    return folder, repo / "permissions.jsonl"


def test_the_users_linked_rule_file_is_read_and_the_projects_linked_one_is_not(tmp_path: Path) -> None:
    folder, _ = dotfiles(tmp_path)
    user = RuleFileStore(folder / "permissions.jsonl", follow=True)
    assert user.rules_sync() == [Rule.tool("read_file", Verdict.DENY)]
    project = tmp_path / "project"
    (project / ".acp-agent").mkdir(parents=True)
    (project / ".acp-agent" / "permissions.jsonl").symlink_to(folder / "permissions.jsonl")
    assert RuleFileStore(project / ".acp-agent" / "permissions.jsonl", beneath=project).rules_sync() == []


async def test_a_change_to_the_rules_never_replaces_the_users_link(tmp_path: Path) -> None:
    folder, target = dotfiles(tmp_path)
    store = RuleFileStore(folder / "permissions.jsonl", follow=True)
    with pytest.raises(PermissionFileError, match="symbolic link"):
        await store.remove(Rule.tool("read_file", Verdict.DENY))
    with pytest.raises(PermissionFileError, match="edit the file it leads to"):
        await store.add(Rule.command("ls", Verdict.ALLOW))
    assert (folder / "permissions.jsonl").is_symlink()
    assert target.read_text() == json.dumps(DENY_READ) + "\n"


async def test_a_deny_rule_in_the_users_linked_file_holds_in_a_session(tmp_path: Path) -> None:
    dotfiles(tmp_path)
    model = fake(calls(("read_file", {"path": "a.py"})), Reply(text="done"))
    async with editor_agent(tmp_path, model) as (editor, sid, project):
        (project / "a.py").write_text("SECRET = 1\n")
        await prompt(editor, sid, "read it")
        end = final(editor, "call_0_read_file")
    assert end["status"] == "failed"
    assert not editor.requests_of("session/request_permission")  # denied by the rule, not asked
    result = json.dumps(model.prompts[-1].messages[-1].to_dict())
    assert "SECRET" not in result and "deny" in result.lower()


def test_where_the_users_links_lead_is_protected_and_kept_from_commands(tmp_path: Path) -> None:
    folder, target = dotfiles(tmp_path)
    environ = {"HOME": str(tmp_path / "user"), "XDG_CONFIG_HOME": str(tmp_path / "user" / ".config")}
    repo = target.parent
    assert set(own_link_targets(folder)) == {repo / "permissions.jsonl", repo / "config.toml"}
    # A dotfiles repository opened as the project: its copies are still the agent's own files.
    project = tmp_path / "dotfiles"
    protected = protected_paths([project], tmp_path / "home", [folder / "permissions.jsonl"], environ)
    for name in ("permissions.jsonl", "config.toml"):
        assert protected.why_real(repo / name) is not None, name
    assert protected.why_real(project / "README.md") is None
    config = load_config(project, {}, {**environ, "ACP_AGENT_HOME": str(tmp_path / "home")}, strict=False)
    private = agent_private_paths(config, environ)
    assert repo / "permissions.jsonl" in private and repo / "config.toml" in private
