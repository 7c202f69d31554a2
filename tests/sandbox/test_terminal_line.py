"""The command line an editor's terminal gets for a sandboxed command (``wrap_command_line``): it runs the
command confined, and it reads as the command. Toad labels a terminal with the line itself
(``shlex.join([command, *args]).strip("'")``, its ``TerminalTool`` border title) and runs it with
``$SHELL -c``; Zed joins ``command`` and ``args`` unquoted and runs that in a shell, and the agent relabels
it with the command by the tool call's title (``tests/acp/zed``). Each line is run here as they run it."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from harness.sandbox import SandboxPolicy, wrap_command_line

pytestmark = pytest.mark.process

WORDS = ("python", "_start.py", "_launch.py", " -I ", "spec-", " -- bash -c")


def toad_label(line: str) -> str:
    """The label Toad gives a terminal made from ``terminal/create`` ``{"command": line}`` (no args)."""
    return shlex.join([line]).strip("'")


@pytest.fixture
def policy(tmp_path: Path, landlock: None) -> SandboxPolicy:
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (tmp_path / "tmp").mkdir()
    return SandboxPolicy(
        roots=(project.resolve(),), temp=(tmp_path / "tmp").resolve(), state_dir=tmp_path / "specs"
    )


def run_as(shell: str, line: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """As Toad runs a line with a space in it: ``$SHELL -c line`` (Zed: the user's shell too)."""
    return subprocess.run(
        [shell, "-c", line], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


def test_the_line_is_a_short_runner_and_the_command_last_in_double_quotes(policy: SandboxPolicy) -> None:
    line = wrap_command_line("npm test -- --watch=false && git status", policy)
    assert policy.state_dir is not None
    runner = next(policy.state_dir.glob("run-*"))
    assert line == f'/bin/sh {runner} "npm test -- --watch=false && git status"'  # the golden
    assert (
        toad_label(line) == line
    )  # before: `/…/python -I -S /…/_start.py /…/spec-….txt -- bash -c '"'"'npm …'"'"`
    assert not any(word in line for word in WORDS)
    assert re.fullmatch(r"run-[0-9a-f]{12}", runner.name)


def test_no_sh_on_the_path_runs_in_its_place(policy: SandboxPolicy, tmp_path: Path) -> None:
    fake = tmp_path / "project" / "src"  # a folder a sandboxed command may write, first on PATH
    (fake / "sh").write_text(f"#!/bin/bash\ntouch {tmp_path}/outside.txt\n")
    (fake / "sh").chmod(0o755)
    line = wrap_command_line("echo confined", policy)
    done = subprocess.run(
        ["bash", "-c", line],
        cwd=tmp_path / "project",
        env={"PATH": f"{fake}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout == "confined\n" and not (tmp_path / "outside.txt").exists(), done.stderr


def test_the_same_policy_reuses_its_runner(policy: SandboxPolicy) -> None:
    assert wrap_command_line("ls", policy).split()[1] == wrap_command_line("pwd", policy).split()[1]


@pytest.mark.parametrize(
    "command",
    [
        'echo "a b"',
        "echo $HOME",
        "echo `id -u`",
        "echo a\\ b",
        "echo hi!",
        "printf 'one\\ntwo\\n'",
        "echo one\necho two",
    ],
    ids=["double-quote", "dollar", "backtick", "backslash", "bang", "single-quote", "newline"],
)
def test_a_command_double_quotes_would_change_is_quoted_whole(policy: SandboxPolicy, command: str) -> None:
    line = wrap_command_line(command, policy)
    assert shlex.split(line)[-1] == command  # one word, the command as written
    if any(c in command for c in '"$`\\!\n'):
        assert not line.endswith(f'"{command}"')


@pytest.mark.parametrize("shell", ["bash", "sh"])
@pytest.mark.parametrize(
    "command, expected",
    [
        ("echo hello world", "hello world\n"),
        ('printf "%s|" "a b" c', "a b|c|"),
        ("echo $((1 + 2)) `echo x`", "3 x\n"),
        ("echo it's here", None),  # unbalanced: bash itself refuses it, inside the sandbox
    ],
)
def test_the_line_runs_the_command_as_written(
    policy: SandboxPolicy, tmp_path: Path, shell: str, command: str, expected: str | None
) -> None:
    done = run_as(shell, wrap_command_line(command, policy), tmp_path / "project")
    if expected is None:
        assert done.returncode != 0
    else:
        assert (done.returncode, done.stdout) == (0, expected), done.stderr


@pytest.mark.parametrize(
    "command",
    [
        "touch {outside}",
        '" ; touch {outside} ; "',
        "'; touch {outside}; '",
        "$(touch {outside})",
        "`touch {outside}`",
        "x\ntouch {outside}",
        '"$(touch {outside})"',
    ],
    ids=[
        "plain",
        "double-quote-break",
        "single-quote-break",
        "subshell",
        "backtick",
        "newline",
        "quoted-subshell",
    ],
)
def test_nothing_in_the_command_runs_outside_the_sandbox(
    policy: SandboxPolicy, tmp_path: Path, command: str
) -> None:
    outside = tmp_path / "outside.txt"  # not a root of the policy: only an unconfined command writes it
    line = wrap_command_line(command.format(outside=outside), policy)
    for shell in ("bash", "sh"):
        run_as(shell, line, tmp_path / "project")
        assert not outside.exists(), (shell, line)
    inside = run_as("bash", wrap_command_line("touch made-here", policy), tmp_path / "project")
    assert inside.returncode == 0 and (tmp_path / "project" / "made-here").exists(), inside.stderr


@pytest.mark.parametrize(
    "command",
    [
        "touch {outside}",
        "$(touch {outside})",
        "`touch {outside}`",
        "x\ntouch {outside}",
        '"$(touch {outside})"',
    ],
)
def test_the_same_commands_unconfined_do_write_there(tmp_path: Path, command: str) -> None:
    """The control for the test above: the write it does not see is the sandbox's doing."""
    outside = tmp_path / "outside.txt"
    run_as("bash", command.format(outside=outside), tmp_path)
    assert outside.exists()


def test_a_runner_changed_on_disk_is_written_again(policy: SandboxPolicy, tmp_path: Path) -> None:
    line = wrap_command_line("true", policy)
    runner = Path(shlex.split(line)[1])
    good = runner.read_text()
    runner.write_text('#!/bin/sh\nexec bash -c "$1"\n')  # someone made it run unconfined
    assert wrap_command_line("true", policy) == line and runner.read_text() == good
