"""The rule store never replaces what is not its own rule file, writes atomically, never blocks on a FIFO; and
in an untrusted project only the allow rules the user gave apply."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from acp_agent.coding.permissions._trust import ProjectRuleStore
from acp_agent.trust import TrustStore, rule_key
from harness.policy import PermissionFileError, PermissionStore, Rule, Verdict

pytestmark = pytest.mark.anyio

BASHRC = "export PATH=$HOME/bin:$PATH\nalias ll='ls -l'\n"


async def test_a_file_that_is_not_a_rule_file_is_never_replaced(tmp_path: Path) -> None:
    bashrc = tmp_path / ".bashrc"
    bashrc.write_text(BASHRC)
    store = PermissionStore(bashrc)
    assert await store.rules() == []
    with pytest.raises(PermissionFileError, match="not a rule file"):
        await store.add(Rule.command("git status", Verdict.ALLOW))
    assert bashrc.read_text() == BASHRC


async def test_a_symlinked_rule_file_is_neither_followed_nor_replaced(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.jsonl"
    target.write_text('{"verdict": "allow", "kind": "tool", "tool": "shell"}\n')
    link = tmp_path / "permissions.jsonl"
    link.symlink_to(target)
    store = PermissionStore(link)
    assert await store.rules() == []  # not read through the link
    with pytest.raises(PermissionFileError):
        await store.add(Rule.command("ls", Verdict.ALLOW))
    assert link.is_symlink() and target.read_text().count("\n") == 1


async def test_a_fifo_in_place_of_the_rule_file_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "permissions.jsonl"
    os.mkfifo(fifo)
    store = PermissionStore(fifo)
    with anyio.fail_after(5):
        assert await store.rules() == []
        with pytest.raises(PermissionFileError, match="not a regular file"):
            await store.add(Rule.command("ls", Verdict.ALLOW))


async def test_writes_go_through_a_temporary_file_and_a_rename(tmp_path: Path) -> None:
    path = tmp_path / "permissions.jsonl"
    store = PermissionStore(path)
    await store.add(Rule.command("ls", Verdict.ALLOW))
    first = path.stat().st_ino
    await store.add(Rule.command("pwd", Verdict.ALLOW))
    assert path.stat().st_ino != first  # replaced by a rename, never rewritten in place
    assert os.listdir(tmp_path) == ["permissions.jsonl"]  # no temporary file left
    assert len(await store.rules()) == 2


async def test_in_an_untrusted_project_only_the_users_own_allow_rules_apply(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    path = root / ".acp-agent" / "permissions.jsonl"
    path.parent.mkdir(parents=True)
    shipped = Rule.command("curl", Verdict.ALLOW)
    denial = Rule.command("rm", Verdict.DENY)
    await PermissionStore(path).add(shipped)
    await PermissionStore(path).add(denial)
    trust = TrustStore(tmp_path / "home")
    store = ProjectRuleStore(path, trust, trusted_rules=frozenset(), root=root)
    assert await store.rules() == [denial]
    given = Rule.command("git status", Verdict.ALLOW)
    await store.add(given)  # the user's "always": it holds without trust
    assert await store.rules() == [denial, given]
    assert await ProjectRuleStore(path, trust, trusted_rules=frozenset(), root=root).rules() == [
        denial,
        given,
    ]
    decided = frozenset({rule_key(shipped.to_dict())})  # the user trusted the project with it listed
    trusted = ProjectRuleStore(path, trust, trusted_rules=decided, root=root)
    assert await trusted.rules() == [shipped, denial, given]
    later = Rule.command("wget", Verdict.ALLOW)
    await PermissionStore(path).add(later)  # added to the file after the decision: needs trust again
    assert await trusted.rules() == [shipped, denial, given]
    await store.remove(given)
    await PermissionStore(path).add(given)  # written again by hand, or by the repository: not vouched
    assert await store.rules() == [denial]
