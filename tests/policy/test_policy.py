"""Policy: verdicts by tool, hints, paths and parsed shell commands; asking through the pause contract."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness import Approval, Call, Decision, Hints, Result, ToolCall, ToolSpec
from harness.policy import MODES, Policy, Rule, Verdict, mode_policy, strictest
from harness.tools import Root, Shell, file_tools

pytestmark = pytest.mark.anyio

A, Q, D = Verdict.ALLOW, Verdict.ASK, Verdict.DENY
SHELL_SPEC = Shell(Root([Path("/")])).spec()


class _Host:
    async def emit_progress(self, call_id: str, value: Any) -> None:
        pass

    async def emit_event(self, event: Any) -> None:
        pass

    def is_cancelled(self) -> bool:
        return False


async def through(
    policy: Policy, name: str, inp: dict[str, Any], spec: ToolSpec | None = None, answers: Any = None
) -> tuple[Result, Call, list[str]]:
    ran: list[str] = []
    tc = ToolCall("c1", name, inp)
    ctx = Call(tc, host=_Host(), spec=spec, answers=answers)

    async def next_(call: ToolCall, context: Call) -> Result:
        ran.append(call.name)
        return Result.text("ran")

    return await policy.call(tc, ctx, next_), ctx, ran


def shell_verdict(policy: Policy, command: str) -> Verdict:
    return policy.judge(ToolCall("c", "shell", {"command": command}), SHELL_SPEC).verdict


ALLOW_LS = Policy([Rule.command("ls", A), Rule.command("git status", A), Rule.command("rm", D)], Q, cwd="/p")


@pytest.mark.parametrize(
    ("command", "verdict"),
    [
        ("ls -la", A),
        ("git status -s", A),
        ("git stash", Q),
        ("ls && rm -rf x", D),
        ("ls; make", Q),
        ("ls | grep x", Q),
        ("ls $(rm -rf /)", D),
        ("ls `rm -rf /`", D),
        ('ls "$(rm x)"', D),
        ("ls > out.txt", Q),  # a redirection is a write, judged on its own
        ("ls 2>/dev/null", A),
        ("ls 2>&1", A),
        ("$CMD", Q),
        ('echo "unterminated', Q),
        ("if true; then rm x; fi", D),
        ("f() { rm x; }; ls", D),
        ("ls <(rm x)", D),
        ("FOO=1 ls", Q),  # an assignment can change what a command runs
        ("LC_ALL=C ls", A),  # ... unless it is one known to be harmless
    ],
)
def test_compound_commands_take_the_strictest_verdict_of_their_parts(command: str, verdict: Verdict) -> None:
    assert shell_verdict(ALLOW_LS, command) is verdict


def test_redirection_target_is_judged_as_a_path() -> None:
    p = Policy([Rule.command("echo", A), Rule.path("shell", "/p/build", A)], Q, cwd="/p")
    assert shell_verdict(p, "echo hi > build/log.txt") is A
    assert shell_verdict(p, "echo hi > /etc/passwd") is Q
    assert shell_verdict(p, "echo hi >> ../p/build/x") is A


def test_command_patterns_glob_the_whole_command() -> None:
    p = Policy([Rule.command("npm run *", A)], D)
    assert shell_verdict(p, "npm run test") is A
    assert shell_verdict(p, "npm install") is D


def test_unparsable_command_asks_unless_a_tool_rule_decides() -> None:
    assert shell_verdict(Policy([], A), "echo 'x") is Q
    assert shell_verdict(Policy([Rule.tool("shell", D)], A), "echo 'x") is D
    assert shell_verdict(Policy([Rule.tool("*", A)], Q), "echo 'x") is A


def test_first_matching_rule_decides_and_default_applies_otherwise() -> None:
    p = Policy([Rule.tool("write_file", D), Rule.hints(A, read_only=True)], Q)
    read = file_tools(Root([Path("/")]))[0].spec()
    assert p.judge(ToolCall("c", "read_file", {"path": "a"}), read).verdict is A
    assert p.judge(ToolCall("c", "write_file", {"path": "a"})).verdict is D
    assert p.judge(ToolCall("c", "other", {})).verdict is Q
    assert (
        p.judge(ToolCall("c", "other", {}), ToolSpec("other", "", hints=Hints(read_only=True))).verdict is A
    )


def test_path_rules_need_every_path_under_the_prefix() -> None:
    p = Policy([Rule.path("edit_file", "/p/src", A), Rule.path("apply_patch", "/p/src", A)], Q, cwd="/p")
    assert p.judge(ToolCall("c", "edit_file", {"path": "src/a.py"})).verdict is A
    assert p.judge(ToolCall("c", "edit_file", {"path": "src/../setup.py"})).verdict is Q
    assert p.judge(ToolCall("c", "edit_file", {"path": "/p/srcx/a.py"})).verdict is Q
    both = (
        "--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-a\n+b\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    )
    assert p.judge(ToolCall("c", "apply_patch", {"patch": both})).verdict is Q
    one = both.split("--- a/x.py")[0]
    assert p.judge(ToolCall("c", "apply_patch", {"patch": one})).verdict is A
    # The ``*** Begin Patch`` envelope names its files to the policy as it does to the tool.
    envelope = (
        "*** Begin Patch\n*** Update File: src/a.py\n@@\n-a\n+b\n*** Delete File: x.py\n*** End Patch\n"
    )
    assert p.judge(ToolCall("c", "apply_patch", {"patch": envelope})).verdict is Q
    assert p.judge(ToolCall("c", "apply_patch", {"patch": envelope.split("*** Delete")[0]})).verdict is A


def test_strictest() -> None:
    assert strictest([A, Q, A]) is Q and strictest([A, D, Q]) is D and strictest([]) is A


async def test_allow_runs_the_call() -> None:
    r, _, ran = await through(Policy([Rule.tool("*", A)]), "x", {})
    assert r.as_text() == "ran" and ran == ["x"]


async def test_deny_returns_denied_error_without_running() -> None:
    r, _, ran = await through(ALLOW_LS, "shell", {"command": "ls && rm -rf x"}, SHELL_SPEC)
    assert r.error and r.as_text().startswith("Denied: ") and "rm -rf x" in r.as_text() and ran == []


async def test_ask_pauses_with_an_approval_need() -> None:
    r, ctx, ran = await through(ALLOW_LS, "shell", {"command": "make"}, SHELL_SPEC)
    pending = ctx.pending()
    assert ran == [] and r.error and pending is not None
    [need] = pending.needs
    assert isinstance(need, Approval) and need.id == "approval" and "make" in need.reason


async def test_a_resumed_call_with_approval_runs_and_with_denial_is_denied() -> None:
    r, ctx, ran = await through(
        ALLOW_LS, "shell", {"command": "make"}, SHELL_SPEC, {"approval": Decision.allow()}
    )
    assert r.as_text() == "ran" and ran == ["shell"] and ctx.pending() is None
    r2, _, ran2 = await through(
        ALLOW_LS, "shell", {"command": "make"}, SHELL_SPEC, {"approval": Decision.deny("no")}
    )
    assert r2.error and r2.as_text() == "Denied: no" and ran2 == []


async def test_an_approval_does_not_override_a_deny() -> None:
    r, _, ran = await through(
        ALLOW_LS, "shell", {"command": "rm x"}, SHELL_SPEC, {"approval": Decision.allow()}
    )
    assert r.error and ran == []


def test_suggestions_are_narrow() -> None:
    p = Policy([Rule.command("ls", A)], Q, cwd="/p")
    call = ToolCall("c", "shell", {"command": "ls && git status -s && pytest -q tests | tee out"})
    rules = p.suggest(call, A, SHELL_SPEC)
    assert [r.describe() for r in rules] == [
        "allow shell commands starting with `git status`",
        "allow shell commands starting with `pytest`",
        "allow the shell command `tee out` exactly",  # tee writes the files it is given
    ]
    wrapped = p.suggest(ToolCall("c", "shell", {"command": "bash -c 'rm -rf /'"}), D, SHELL_SPEC)
    assert [r.command_words for r in wrapped] == [("rm",)]  # what the wrapper runs
    [edit] = p.suggest(ToolCall("c", "edit_file", {"path": "src/app.py"}), A)
    assert edit.describe() == "allow edit_file under /p/src"
    assert p.suggest(ToolCall("c", "mcp_x", {}), D) == [Rule.tool("mcp_x", D)]


def test_rule_round_trips_through_dicts() -> None:
    rules = [
        Rule.tool("mcp_*", A),
        Rule.hints(D, destructive=True, open_world=False),
        Rule.command("git status", A),
        Rule.command("npm run *", Q),
        Rule.path("write_file", "/p/src", A),
    ]
    assert [Rule.from_dict(r.to_dict()) for r in rules] == rules


# --- modes ---------------------------------------------------------------------------------------


ROOT = Path("/p")
TOOLS = {t.spec().name: t.spec() for t in file_tools(Root([Path("/")]))} | {"shell": SHELL_SPEC}


def judge(policy: Policy, name: str, inp: dict[str, Any]) -> Verdict:
    return policy.judge(ToolCall("c", name, inp), TOOLS.get(name)).verdict


@pytest.mark.parametrize(
    ("mode", "read", "edit_inside", "edit_outside", "shell"),
    [
        ("read-only", A, D, D, D),
        ("plan", A, D, D, D),
        ("default", A, Q, Q, Q),
        ("accept-edits", A, A, Q, Q),
        ("full-access", A, A, A, A),
    ],
)
def test_modes(mode: str, read: Verdict, edit_inside: Verdict, edit_outside: Verdict, shell: Verdict) -> None:
    p = mode_policy(mode, [ROOT])
    assert judge(p, "read_file", {"path": "a.py"}) is read
    assert judge(p, "grep", {"pattern": "x"}) is read
    assert judge(p, "edit_file", {"path": "src/a.py", "old_text": "a", "new_text": "b"}) is edit_inside
    assert judge(p, "write_file", {"path": "/elsewhere/a.py", "content": ""}) is edit_outside
    assert judge(p, "shell", {"command": "ls"}) is shell
    assert judge(p, "plan_set", {"items": []}) is A


def test_remembered_rules_come_first_but_only_denials_apply_in_read_only() -> None:
    remembered = [Rule.command("pytest", A), Rule.command("git push", D)]
    assert judge(mode_policy("default", [ROOT], remembered), "shell", {"command": "pytest -q"}) is A
    assert judge(mode_policy("full-access", [ROOT], remembered), "shell", {"command": "git push"}) is D
    assert judge(mode_policy("read-only", [ROOT], remembered), "shell", {"command": "pytest"}) is D


async def test_plan_mode_denial_names_the_mode() -> None:
    r, _, _ = await through(
        mode_policy("plan", Root([Path("/")])),
        "write_file",
        {"path": "a", "content": ""},
        TOOLS["write_file"],
    )
    assert r.error and "not allowed in plan mode" in r.as_text()


def test_unknown_mode_is_misuse() -> None:
    from harness import HarnessUsageError

    with pytest.raises(HarnessUsageError):
        mode_policy("yolo", [ROOT])
    assert set(MODES) == {"read-only", "default", "accept-edits", "plan", "full-access"}
