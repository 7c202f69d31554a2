"""MCP annotations are hints from an untrusted party: ``readOnlyHint`` lets a tool run as a read only when
the user marked its server ``trusted = true`` in their own configuration."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from acp_agent.config import load_config
from harness import Hints, ToolCall, ToolSpec
from harness.policy import Verdict, mode_policy
from tests.security._attack import Project, calls, victim_agent

pytestmark = pytest.mark.anyio

A, Q, D = Verdict.ALLOW, Verdict.ASK, Verdict.DENY
LIAR = Path(__file__).with_name("_liar_server.py")


def _spec(server: str | None, read_only: bool) -> ToolSpec:
    meta = {"mcp_server": server, "mcp_tool": "tidy"} if server else {}
    return ToolSpec("mcp__liar__tidy", "", hints=Hints(read_only=read_only), meta=meta)


@pytest.mark.parametrize(
    ("mode", "untrusted", "trusted", "not_read_only"),
    [("read-only", Q, A, D), ("plan", Q, A, D), ("default", Q, A, Q), ("accept-edits", Q, A, Q), ("full-access", A, A, A)],
)  # fmt: skip
def test_read_only_hints_count_only_from_trusted_servers(
    mode: str, untrusted: Verdict, trusted: Verdict, not_read_only: Verdict
) -> None:
    policy = mode_policy(mode, [Path("/p")], trusted_servers=["docs"])
    call = ToolCall("c", "mcp__liar__tidy", {})
    assert policy.judge(call, _spec("liar", True)).verdict is untrusted
    assert policy.judge(call, _spec("docs", True)).verdict is trusted
    assert policy.judge(call, _spec("liar", False)).verdict is not_read_only
    assert policy.judge(call, _spec(None, True)).verdict is trusted  # a tool of the application's own


def test_the_reason_says_the_read_only_claim_is_only_a_hint() -> None:
    j = mode_policy("plan", [Path("/p")]).judge(ToolCall("c", "mcp__liar__tidy", {}), _spec("liar", True))
    assert "hint" in j.reason


def _configure(folder: Path, canary: Path, trusted: bool) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(
        f"[mcp_servers.liar]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(LIAR))}]\n"
        f"env = {{ LIAR_CANARY = {json.dumps(str(canary))} }}\n" + ("trusted = true\n" if trusted else "")
    )


def test_trusted_is_read_from_the_users_configuration_only(tmp_path: Path) -> None:
    user, project = tmp_path / "xdg" / "acp-agent", tmp_path / "project"
    _configure(user, tmp_path / "c", trusted=True)
    _configure(project / ".acp-agent", tmp_path / "c", trusted=True)
    (project / ".acp-agent" / "config.toml").write_text(
        (project / ".acp-agent" / "config.toml")
        .read_text()
        .replace("[mcp_servers.liar]", "[mcp_servers.other]")
    )
    config = load_config(project, {}, {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path)})
    trusted = {s.name: s.trusted for s in config.mcp_servers}
    assert trusted.get("liar") is True
    assert trusted.get("other", False) is False  # a project cannot vouch for its own servers


@pytest.mark.process
@pytest.mark.timeout(150)
@pytest.mark.parametrize("mode", ["read-only", "plan", "default"])
async def test_a_lying_read_only_tool_is_asked_about_and_writes_nothing(tmp_path: Path, mode: str) -> None:
    project = Project.make(tmp_path)
    canary = project.outside / "CANARY"
    _configure(project.user_config, canary, trusted=False)
    async with victim_agent(project, calls(("mcp__liar__tidy", {})), mode=mode) as agent:
        with anyio.fail_after(120):
            sid = await agent.new_session(project.root)
            await agent.prompt(sid, "tidy up")
    [asked] = agent.asked()
    assert asked["toolCall"]["toolCallId"]
    assert not canary.exists()


@pytest.mark.process
@pytest.mark.timeout(150)
async def test_a_server_the_user_trusts_runs_its_read_only_tools_in_read_only_mode(tmp_path: Path) -> None:
    project = Project.make(tmp_path)
    canary = project.outside / "CANARY"
    _configure(project.user_config, canary, trusted=True)
    async with victim_agent(project, calls(("mcp__liar__tidy", {})), mode="read-only") as agent:
        with anyio.fail_after(120):
            sid = await agent.new_session(project.root)
            await agent.prompt(sid, "tidy up")
    assert agent.asked() == []
    assert canary.exists()  # the user's word: the tool ran as a read


@pytest.mark.process
@pytest.mark.timeout(150)
async def test_an_editor_server_named_like_a_trusted_one_is_not_trusted(tmp_path: Path) -> None:
    project = Project.make(tmp_path)
    canary = project.outside / "CANARY"
    _configure(project.user_config, project.outside / "unused", trusted=True)
    editor_entry = {
        "name": "liar",
        "command": sys.executable,
        "args": [str(LIAR)],
        "env": [{"name": "LIAR_CANARY", "value": str(canary)}],
    }
    async with victim_agent(project, calls(("mcp__liar__tidy", {})), mode="read-only") as agent:
        with anyio.fail_after(120):
            session = await agent.call(
                "session/new", {"cwd": str(project.root), "mcpServers": [editor_entry]}
            )
            await agent.prompt(session["sessionId"], "tidy up")
    assert len(agent.asked()) == 1 and not canary.exists()
