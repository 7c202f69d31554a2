"""PermissionStore: "always" answers persist in a human-readable JSON-lines file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.policy import PermissionStore, Rule, Verdict, mode_policy

pytestmark = pytest.mark.anyio


async def test_rules_round_trip_through_the_file_across_instances(tmp_path: Path) -> None:
    store = PermissionStore.for_project(tmp_path, ".acp-agent")
    assert await store.rules() == []
    git = Rule.command("git status", Verdict.ALLOW)
    edits = Rule.path("edit_file", tmp_path / "src", Verdict.ALLOW)
    assert await store.add(git) and await store.add(edits)
    assert not await store.add(git)

    again = PermissionStore(tmp_path / ".acp-agent" / "permissions.jsonl")
    assert await again.rules() == [git, edits]
    lines = [ln for ln in again.path.read_text().splitlines() if not ln.startswith("#")]
    assert json.loads(lines[0]) == {
        "verdict": "allow",
        "kind": "command",
        "tool": "shell",
        "command": "git status",
    }

    assert await again.remove(git) and not await again.remove(git)
    assert await store.rules() == [edits]
    assert not list(again.path.parent.glob("*.tmp"))


async def test_a_new_verdict_for_the_same_subject_replaces_the_old(tmp_path: Path) -> None:
    store = PermissionStore(tmp_path / "p.jsonl")
    await store.add(Rule.command("rm", Verdict.ALLOW))
    await store.add(Rule.command("rm", Verdict.DENY))
    assert await store.rules() == [Rule.command("rm", Verdict.DENY)]


async def test_hand_edited_bad_lines_are_skipped(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    f.write_text(
        '# mine\n\nnot json\n{"verdict": "maybe", "kind": "tool"}\n{"verdict": "deny", "kind": "tool", "tool": "shell"}\n'
    )
    assert await PermissionStore(f).rules() == [Rule.tool("shell", Verdict.DENY)]


async def test_remembered_rules_feed_a_mode_policy_after_a_restart(tmp_path: Path) -> None:
    from harness import ToolCall

    await PermissionStore.for_user("acp-agent", tmp_path / "cfg").add(Rule.command("pytest", Verdict.ALLOW))
    rules = await PermissionStore.for_user("acp-agent", tmp_path / "cfg").rules()
    p = mode_policy("default", [tmp_path], rules)
    assert p.judge(ToolCall("c", "shell", {"command": "pytest -q"})).verdict is Verdict.ALLOW
    assert p.judge(ToolCall("c", "shell", {"command": "pytest -q && make"})).verdict is Verdict.ASK
