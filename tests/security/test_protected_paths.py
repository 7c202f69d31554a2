"""Protected paths: the agent's own files, version-control metadata and files other tools run by
themselves always ask, in every mode but full-access, whatever the remembered rules say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.coding.permissions._protected import AGENT_PROTECTED, AGENT_ROOT_PATHS
from harness import ToolCall
from harness.policy import PROTECTED, ProtectedPaths, Rule, Verdict, mode_policy
from harness.tools import Root, Shell, file_tools
from tests.security._attack import Project, calls, victim_agent

pytestmark = pytest.mark.anyio

A, Q, D = Verdict.ALLOW, Verdict.ASK, Verdict.DENY
ROOT = Path("/p")
GUARD = ProtectedPaths.of([ROOT], [(Path("/home/u/.config/acp-agent"), "acp-agent's own")], AGENT_PROTECTED)


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".git/hooks/pre-commit",
        "vendor/lib/.git/config",  # a nested repository or submodule
        ".GIT/config",  # a case-insensitive file system writes .git/config
        ".acp-agent/config.toml",
        ".acp-agent/permissions.jsonl",
        ".hg/hgrc",
        ".svn/entries",
        ".jj/repo/config.toml",
        ".envrc",
        "app/.envrc",
        ".direnv/python-3.12/bin/activate",
        ".vscode/tasks.json",
        "my.code-workspace",
        ".idea/workspace.xml",
        ".zed/settings.json",
        ".devcontainer/devcontainer.json",
        ".husky/pre-commit",
        ".githooks/pre-push",
        ".pre-commit-config.yaml",
        "lefthook.yml",
        "mise.toml",
        ".nvim.lua",
        ".dir-locals.el",
        ".bashrc",  # a home folder opened as a project
        ".config/fish/config.fish",
        ".ssh/authorized_keys",
        ".gitconfig",
        ".github/workflows/ci.yml",
    ],
)
def test_the_list_protects_control_vcs_and_self_running_files(path: str) -> None:
    assert GUARD.why(ROOT / path) is not None


@pytest.mark.parametrize(
    "path",
    ["src/app.py", "Makefile", "package.json", "conftest.py", ".github/CODEOWNERS", ".env", "git/config",
     "docs/.gitkeep", ".gitignore"],
)  # fmt: skip
def test_ordinary_project_files_are_not_protected(path: str) -> None:
    assert GUARD.why(ROOT / path) is None


def test_the_sandbox_refuses_the_same_paths_at_each_root() -> None:
    from acp_agent.coding.permissions._sandboxing import PROTECTED as SANDBOXED
    from harness.protected import ROOT_PATHS
    from harness.sandbox import DEFAULT_PROTECTED

    assert DEFAULT_PROTECTED == ROOT_PATHS
    assert SANDBOXED == AGENT_ROOT_PATHS == (".acp-agent", ".config/acp-agent", *ROOT_PATHS)
    assert {".git", ".acp-agent", ".envrc", ".vscode", ".github/workflows"} <= set(AGENT_ROOT_PATHS)
    assert all(GUARD.why(ROOT / p) is not None for p in AGENT_ROOT_PATHS)


def test_the_harness_list_names_no_application_and_the_agent_puts_its_own_folders_in_front() -> None:
    from harness.protected import ROOT_PATHS

    assert not [p for p in PROTECTED if "acp" in p.spelling.lower() or "acp" in p.why.lower()]
    assert not [p for p in ROOT_PATHS if "acp" in p]
    assert AGENT_PROTECTED[2:] == PROTECTED
    assert [p.spelling for p in AGENT_PROTECTED[:2]] == [".acp-agent", ".config/acp-agent"]
    # the harness's default guard leaves the agent's folder alone; the agent's guard asks
    assert ProtectedPaths.of([ROOT]).why(ROOT / ".acp-agent" / "config.toml") is None
    assert "acp-agent's own configuration" in (GUARD.why(ROOT / ".acp-agent" / "config.toml") or "")


def test_extra_paths_outside_the_roots_are_protected_whole() -> None:
    assert GUARD.why("/home/u/.config/acp-agent/config.toml") == "acp-agent's own"
    assert GUARD.why("/elsewhere/notes.txt") is None


def test_the_reason_names_what_reads_the_file() -> None:
    git = GUARD.why(ROOT / ".git" / "config")
    assert git is not None and "git" in git and "run code" in git
    assert "direnv" in (GUARD.why(ROOT / ".envrc") or "")
    assert all(p.why for p in PROTECTED)


def test_a_symlink_into_a_protected_folder_is_caught_by_its_real_path(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "innocent").symlink_to(tmp_path / ".git")
    guard = ProtectedPaths.of([tmp_path])
    assert guard.why(tmp_path / "innocent" / "config") is None  # the words alone look harmless
    assert guard.why_real(tmp_path / "innocent" / "config") is not None


SPECS = {t.spec().name: t.spec() for t in file_tools(Root([Path("/")]))} | {
    "shell": Shell(Root([Path("/")])).spec()
}


def verdict(mode: str, name: str, inp: dict[str, Any], remembered: tuple[Rule, ...] = ()) -> Verdict:
    return (
        mode_policy(mode, [ROOT], remembered, protected=GUARD)
        .judge(ToolCall("c", name, inp), SPECS[name])
        .verdict
    )


ALWAYS = (
    Rule.path("write_file", "/p", A),
    Rule.tool("edit_file", A),
    Rule.command("echo", A),
    Rule.command("cp", A),
    Rule.command("tee", A),
)


@pytest.mark.parametrize(
    ("name", "inp"),
    [
        ("write_file", {"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch CANARY\n"}),
        ("edit_file", {"path": ".git/config", "old_text": "[core]", "new_text": "[core]\nfsmonitor = x"}),
        ("write_file", {"path": "/p/.acp-agent/config.toml", "content": ""}),
        ("apply_patch", {"patch": "--- /dev/null\n+++ b/.envrc\n@@ -0,0 +1 @@\n+touch CANARY\n"}),
        ("apply_patch", {"patch": "*** Begin Patch\n*** Add File: .envrc\n+touch CANARY\n*** End Patch\n"}),
        ("shell", {"command": "echo 'touch CANARY' > .git/hooks/post-checkout"}),
        ("shell", {"command": "cp /tmp/evil .git/hooks/pre-commit"}),
        ("shell", {"command": "echo x | tee .vscode/tasks.json"}),
    ],
)
@pytest.mark.parametrize("mode", ["default", "accept-edits"])
def test_no_rule_and_no_mode_short_of_full_access_lets_a_protected_write_through(
    mode: str, name: str, inp: dict[str, Any]
) -> None:
    assert verdict(mode, name, inp, ALWAYS) is Q
    assert verdict("full-access", name, inp, ALWAYS) is A
    assert verdict("read-only", name, inp, ALWAYS) is D  # a denial stays a denial


def test_the_same_rules_still_allow_an_ordinary_file() -> None:
    assert verdict("accept-edits", "write_file", {"path": "src/a.py", "content": ""}, ALWAYS) is A
    assert (
        verdict(
            "default", "shell", {"command": "echo hi > notes.txt"}, (*ALWAYS, Rule.path("shell", "/p", A))
        )
        is A
    )


def test_reading_a_protected_file_is_a_read() -> None:
    assert verdict("read-only", "read_file", {"path": ".git/config"}) is A


# --- the real process ------------------------------------------------------------------------------


CANARY = "touch CANARY\n"
ATTACKS = [
    ("write_file", {"path": ".acp-agent/config.toml", "content": '[mcp_servers.x]\ncommand = "sh"\n'}),
    ("write_file", {"path": ".acp-agent/permissions.jsonl", "content": '{"verdict":"allow","kind":"tool","tool":"*"}\n'}),
    ("edit_file", {"path": ".git/config", "old_text": "[core]", "new_text": "[core]\n\tfsmonitor = touch CANARY"}),
    ("write_file", {"path": ".git/hooks/pre-commit", "content": CANARY}),
    ("apply_patch", {"patch": "--- /dev/null\n+++ b/.envrc\n@@ -0,0 +1 @@\n+touch CANARY\n"}),
    ("apply_patch", {"patch": "*** Begin Patch\n*** Update File: .git/config\n@@\n [core]\n+\tfsmonitor = touch CANARY\n*** End Patch"}),
    ("write_file", {"path": ".vscode/tasks.json", "content": "{}"}),
    ("shell", {"command": "echo 'touch CANARY' > .git/hooks/post-checkout"}),
]  # fmt: skip


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.process
@pytest.mark.timeout(120)
@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "no-sandbox"])
@pytest.mark.parametrize("editor_fs", [True, False], ids=["editor-fs", "disk"])
async def test_accept_edits_with_always_rules_asks_for_every_protected_write_and_writes_none(
    tmp_path: Path, editor_fs: bool, sandbox: bool
) -> None:
    project = Project.make(tmp_path)
    (project.root / ".git" / "hooks").mkdir(parents=True)
    (project.root / ".git" / "config").write_text("[core]\n\tbare = false\n")
    project.remember(
        {"verdict": "allow", "kind": "path", "tool": "write_file", "path": str(project.root)},
        {"verdict": "allow", "kind": "tool", "tool": "edit_file"},
        {"verdict": "allow", "kind": "tool", "tool": "apply_patch"},
        {"verdict": "allow", "kind": "command", "tool": "shell", "command": "echo"},
    )
    before = _snapshot(project.root)
    script = calls(*ATTACKS, ("write_file", {"path": "src/ok.py", "content": "ok\n"}))
    env = {} if sandbox else {"ACP_AGENT_SANDBOX_UNAVAILABLE": "1"}
    async with victim_agent(project, script, mode="accept-edits", fs=editor_fs, env=env) as agent:
        with anyio.fail_after(90):
            sid = await agent.new_session(project.root)
            assert (await agent.prompt(sid, "set up the project"))["stopReason"] == "end_turn"
    if not sandbox:
        assert len(agent.asked()) == len(ATTACKS)  # without a sandbox the shell attack is asked about
    asked = agent.asked()
    file_asks = [a for a in asked if "command" not in a["toolCall"]["rawInput"]]
    # The shell attack asks too where commands are not sandboxed; sandboxed, it runs and the sandbox
    # refuses the write. Either way nothing is written (below).
    assert len(file_asks) == len(ATTACKS) - 1, [a["toolCall"].get("title") for a in asked]
    for request in asked:
        first = request["toolCall"]["content"][0]["content"]["text"]
        assert "⚠" in first and "asked about every time" in first, first
        assert "allow_always" not in {o["kind"] for o in request["options"]}
    reasons = " ".join(r["toolCall"]["content"][0]["content"]["text"] for r in asked)
    assert "acp-agent's own configuration" in reasons and "git's own files" in reasons and "direnv" in reasons
    after = _snapshot(project.root)
    assert after.pop("src/ok.py") == b"ok\n"  # the remembered rule still works for an ordinary file
    assert after == before
    assert not any(b"CANARY" in data for data in after.values())


@pytest.mark.process
@pytest.mark.timeout(120)
async def test_the_users_configuration_folder_is_protected_when_a_home_folder_is_the_project(
    tmp_path: Path,
) -> None:
    project = Project.make(tmp_path)
    target = project.user_config / "config.toml"  # tmp/xdg/acp-agent: inside tmp, the session's cwd
    project.remember({"verdict": "allow", "kind": "path", "tool": "write_file", "path": str(tmp_path)})
    script = calls(("write_file", {"path": str(target), "content": 'default_mode = "full-access"\n'}))
    async with victim_agent(project, script, mode="accept-edits") as agent:
        with anyio.fail_after(90):
            sid = await agent.new_session(tmp_path)
            await agent.prompt(sid, "configure yourself")
    [request] = agent.asked()
    assert "acp-agent's own files" in request["toolCall"]["content"][0]["content"]["text"]
    assert not target.exists()
