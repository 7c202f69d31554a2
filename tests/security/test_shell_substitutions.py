"""A command bash runs from inside a word the checker reads as text makes the whole command ask.

Found by the bash oracle (``test_shell_differentials``): ``ls ${x:-<(rm f)}`` was allowed under a rule for
``ls`` while bash starts ``rm f`` (a process substitution in a parameter expansion's operand). The fix is
the rule, not the string: an operand holding any ``$`` but a plain ``$name``, a backtick, a brace, a
bracket, a backslash or a ``<(``/``>(`` is not plain, whatever the quotes, so the command asks; and an
operator that assigns (``${X:=…}``) is plain only for a shell-local name. Each variant below is checked
against bash itself: the ones under ``RUNS`` really start ``rm`` there; ``CONSERVATIVE`` ones do not (bash
quotes them) but ask anyway, because the checker does not read bash's quoting inside an operand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import ToolCall
from harness.policy import Policy, Rule, Verdict
from tests.security.test_shell_differentials import SHELL, ran_by_bash

A, Q = Verdict.ALLOW, Verdict.ASK
RULES = ("ls", "echo", "cat", "cd", "test", "[", "[[", "read", "declare", "export", "local", "printf", "true")

# Each starts ``rm`` in bash (with x unset, or set to a name bash evaluates: see ``_PRELUDES``).
RUNS = [
    # Process substitution in each operator's operand, unquoted.
    "ls ${x:-<(rm f)}",
    "ls ${x:->(rm f)}",
    "ls ${x-<(rm f)}",
    "ls ${x:=<(rm f)}",
    "ls ${x:=>(rm f)}",
    "ls ${x:+<(rm f)}",
    "ls ${x+<(rm f)}",
    "ls ${x:?<(rm f)}",
    "ls ${x/a/<(rm f)}",
    "ls ${x//a/<(rm f)}",
    "ls ${x/<(rm f)/b}",
    "ls ${x#<(rm f)}",
    "ls ${x%<(rm f)}",
    "ls ${x:-a<(rm f)}",
    "echo ${x:-a>(rm f)b}",
    "echo ${x:-a<<(rm f)}",
    "echo ${x:->>(rm f)}",
    "ls ${x:-~<(rm f)}",
    # Nested expansions.
    "ls ${x:-${y:-<(rm f)}}",
    "ls ${x:+${y:+<(rm f)}}",
    "ls ${x:-${y:-$(rm f)}}",
    # Command substitution, unquoted and double-quoted (single quotes are literal inside "${…}").
    "ls ${x:+$(rm f)}",
    'ls "${x:+$(rm f)}"',
    "ls \"${x:-'$(rm f)'}\"",
    'ls ${x:-"$(rm f)"}',
    'ls "${x/a/$(rm f)}"',
    'ls "${x#$(rm f)}"',
    "ls ${x:-`rm f`}",
    # Indirection and arithmetic (x holds ``a[$(rm z)]`` in the oracle's second run).
    "ls ${!x}",
    'ls "${!x}"',
    "ls ${!x:-a}",
    "ls $(( $(rm f) ))",
    'ls "$(( $(rm f) ))"',
    "ls $((x))",
    "ls $[x]",
    "[[ $x -eq 1 ]]",
    "[[ -v $x ]]",
    # Other places a word is expanded: here-strings, redirections, assignments, loops, case, builtins.
    "ls <<< ${x:-<(rm f)}",
    'ls <<< "${x:-$(rm f)}"',
    "ls > ${x:-<(rm f)}",
    "ls < ${x:-<(rm f)}",
    "x=${y:-<(rm f)} ls",
    'x="${y:-$(rm f)}" ls',
    "x=<(rm f) ls",
    "ls a[$(rm f)]",
    "for v in ${x:-<(rm f)}; do ls; done",
    "case ${x:-<(rm f)} in a) ls;; esac",
    "[[ ${x:-<(rm f)} ]]",
    "declare y=${x:-$(rm f)}",
    "export y=${x:-<(rm f)}",
    "read ${x:-<(rm f)}",
    "cat <<EOF\n${x:-$(rm f)}\nEOF",
    # The redirections of a compound command (bashlex keeps them apart from the simple commands inside;
    # found by the oracle: they were never read).
    "{ ls; } > ${x:-$(rm f)}",
    "{ ls; } > ${x:-<(rm f)}",
    "( ls ) > $(rm f)",
    "( ls ) 2> >(rm f)",
    "for v in a; do ls; done < <(rm f)",
    "while false; do ls; done <<EOF\n$(rm f)\nEOF",
    "if true; then ls; fi > `rm f`",
    "{ ls; } <<< ${x:-$(rm f)}",
    "ls | { cat; } > $(rm f)",
    "{ { ls; } > $(rm f); }",
    "f() { ls; } > $(rm f); f",
    # ``{name}>f`` stores a descriptor in ``name``: bash evaluates a subscript there (bashlex: a word).
    "ls {a[x]}>/dev/null",
    "ls {a[$(rm f)]}>/dev/null",
    # An assignment before a wrapper reaches the command it runs (bash sources BASH_ENV first).
    "BASH_ENV=<(echo rm f) bash -c ls",
    "BASH_ENV=<(echo rm f) bash -c 'bash -c ls'",
]

# Bash starts nothing here (quoted, or not a substitution), yet the checker cannot tell: they ask.
CONSERVATIVE = [
    'ls "${x:-<(rm f)}"',
    'ls "${x:+<(rm f)}"',
    'ls ${x:-"<(rm f)"}',
    "ls ${x:-'<(rm f)'}",
    "ls ${x:-'$(rm f)'}",
    'cat <<< "${x:-<(rm f)}"',
    "cat <<EOF\n${x:-<(rm f)}\nEOF",
    "ls ${x:-<(ls)}",  # the inner command is harmless, but it was never judged
    # Assigning a variable bash itself reads changes later commands: ``cd sub`` follows CDPATH.
    "ls ${CDPATH:=/tmp} && cd sub && ls",
    "ls ${CDPATH=/tmp}",
    "ls ${HOME:=/tmp} ~",
    "ls {fd}>/dev/null",
    "ls {PATH}>/dev/null",
]

# Plain expansions that stay allowed.
PLAIN = [
    "ls ${x:-a(b)}",
    "ls ${x:-@(a|b)}",
    "ls ${x:-< (b)}",
    "ls ${x/$y/$z}",
    "ls ${x:-$y}",
    "ls ${y:=a}",
    "ls ${PATH:+a}",
    "ls ${x:-~}",
    "ls <<< $x",
    "echo ${#x} ${x^^} ${x@Q}",
    "{ ls; } > /dev/null",
    "( ls ) 2>/dev/null",
    "ls {x} >/dev/null",
    "ls 3>/dev/null",
    "cat < ${x:-in}",
]


def judge(command: str) -> Verdict:
    policy = Policy([Rule.command(r, A) for r in RULES], Q, cwd="/p")
    return policy.judge(ToolCall("c", "shell", {"command": command}), SHELL).verdict


@pytest.mark.parametrize("command", RUNS + CONSERVATIVE)
def test_a_command_hidden_in_a_word_makes_the_command_ask(command: str) -> None:
    assert judge(command) is Q, command


@pytest.mark.parametrize("command", PLAIN)
def test_a_plain_expansion_stays_allowed(command: str) -> None:
    assert judge(command) is A, command


def test_the_question_names_the_process_substitution() -> None:
    reason = (
        Policy([Rule.command("ls", A)], Q, cwd="/p")
        .judge(ToolCall("c", "shell", {"command": "ls ${x:-<(rm f)}"}), SHELL)
        .reason
    )
    assert "${x:-<(rm f)}" in reason


@pytest.mark.parametrize(
    "compound", ["{{ ls; }} {0}", "( ls ) {0}", "for v in a; do ls; done {0}", "if true; then ls; fi {0}"]
)
@pytest.mark.parametrize(
    "redirect", ["> /p/out", ">> /p/out", "> /etc/x", "> ../x", "2> ~/.bashrc", "< /p/in"]
)
def test_a_compound_command_s_redirection_is_judged_like_a_simple_command_s(
    compound: str, redirect: str
) -> None:
    policy = Policy([Rule.command("ls", A), Rule.path("shell", "/p", A)], Q, cwd="/p")

    def verdict(command: str) -> Verdict:
        return policy.judge(ToolCall("c", "shell", {"command": command}), SHELL).verdict

    assert verdict(compound.format(redirect)) is verdict(f"ls {redirect}"), redirect


@pytest.mark.parametrize(
    "command",
    [
        "LD_PRELOAD=/tmp/x.so nice ls",
        "GIT_DIR=/tmp/evil nice git status",
        "GIT_DIR=/tmp/evil timeout 5 git status",
        "PATH=/tmp/evil command ls",
        "BASH_ENV=/tmp/e bash -c ls",
        "BASH_ENV=/tmp/e sh -c 'ls; git status'",
        "GIT_DIR=/x env git status",
        "env BASH_ENV=/tmp/e nice ls",
        "LD_PRELOAD=/x xargs ls",
        "GIT_DIR=/x nice timeout 5 env git status",
    ],
)
def test_an_assignment_before_a_wrapper_is_judged_with_the_command_it_runs(command: str) -> None:
    policy = Policy([Rule.command(r, A) for r in ("ls", "git status")], Q, cwd="/p")
    assert policy.judge(ToolCall("c", "shell", {"command": command}), SHELL).verdict is Q, command


@pytest.mark.parametrize(
    "command", ["LC_ALL=C nice ls", "TZ=UTC bash -c 'ls; git status'", "env LC_ALL=C nice ls"]
)
def test_a_harmless_assignment_before_a_wrapper_stays_allowed(command: str) -> None:
    policy = Policy([Rule.command(r, A) for r in ("ls", "git status")], Q, cwd="/p")
    assert policy.judge(ToolCall("c", "shell", {"command": command}), SHELL).verdict is A, command


def test_the_corpora_do_not_overlap() -> None:
    assert len(set(RUNS) | set(CONSERVATIVE) | set(PLAIN)) == len(RUNS) + len(CONSERVATIVE) + len(PLAIN)


_PRELUDES = ("", "x=a; y=b; a=(1); ", "x='a[$(rm z)]'; a=(1); ")


def _started(command: str, scratch: Path) -> set[str]:
    return {name for prelude in _PRELUDES for name in ran_by_bash(command, scratch, prelude)}


@pytest.mark.process
@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="needs bash as the oracle")
@pytest.mark.parametrize("command", RUNS)
def test_bash_really_starts_the_hidden_command(command: str, tmp_path: Path) -> None:
    assert "rm" in _started(command, tmp_path), command


@pytest.mark.process
@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="needs bash as the oracle")
@pytest.mark.parametrize("command", CONSERVATIVE + PLAIN)
def test_bash_starts_nothing_hidden_for_the_quoted_and_plain_forms(command: str, tmp_path: Path) -> None:
    assert _started(command, tmp_path) <= {"ls", "cat", "echo"}, command
