"""Wrappers and assignments: what a simple command really runs, for the policy's command rules.

- ``unwrap``: does a command run another command (``env``, ``nice``, ``timeout``, ``xargs``, ``nohup``,
  ``command``, ``exec``, ``bash -c``, ``sudo``, ...)? Then which, parsed, and is the wrapper *transparent*
  (it adds nothing the inner command does not: judge the inner one) or not (``sudo``, a shell reading a
  file, options we do not know: only a rule naming the whole command can allow it).
- ``harmful_assigns``: do its ``NAME=value`` prefixes change what the command does? Only a few names,
  with plain values, are known to be harmless (``LC_ALL=C``, ``TZ=UTC``, ``NO_COLOR=1``); everything else
  (``GIT_CONFIG_*``, ``GIT_DIR``, ``LD_PRELOAD``, ``PATH``, ``PAGER``...) can make it run other code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePath

from ._shellparse import ShellParseError, SimpleCommand, parse_command

__all__ = ["MAX_DEPTH", "SHELLS", "Inner", "commands_within", "harmful_assigns", "unwrap"]

MAX_DEPTH = 6  # wrappers inside wrappers (``bash -c "sudo env nice ..."``) judged at most this deep

# --- assignments ----------------------------------------------------------------------------------

_HARMLESS_NAMES = frozenset(
    {"LANG", "LANGUAGE", "TZ", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "COLUMNS", "LINES",
     "CI", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "RUST_BACKTRACE", "RUST_LOG",
     "TERM", "DEBUG", "VERBOSE"}
)  # fmt: skip
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_.,:@+=-]*")  # no path, no spaces, no expansion


def harmful_assigns(assigns: Sequence[str]) -> bool:
    """True when one of the ``NAME=value`` words is not known to be harmless."""
    for a in assigns:
        name, _, value = a.partition("=")
        known = name in _HARMLESS_NAMES or name.startswith("LC_")
        if not known or not _PLAIN_VALUE.fullmatch(value):
            return True
    return False


# --- wrappers -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Inner:
    """What a wrapper runs: ``commands`` (empty when it cannot be known), ``transparent`` when the
    wrapper adds nothing to them; ``via`` names the wrapper (for reasons)."""

    commands: tuple[SimpleCommand, ...]
    transparent: bool
    via: str


@dataclass(frozen=True, slots=True)
class _Wrapper:
    with_value: frozenset[str]  # options that take the next word (or ``--opt=value``)
    flags: frozenset[str]  # options that take none
    leading_operands: int = 0  # words before the command (``timeout`` DURATION)
    assigns: bool = False  # ``NAME=value`` words allowed before the command (``env``)
    more_args: bool = False  # appends arguments we cannot see (``xargs``)
    not_running: frozenset[str] = frozenset()  # options after which nothing runs (``command -v``)
    # Options that change the directory, the environment, the user or the program the command runs
    # (``env -C``, ``env -i``, ``exec -a``, ``xargs -I``): the wrapper is then not transparent, like
    # ``git -C DIR`` is not covered by a ``git`` rule.
    changing: frozenset[str] = frozenset()
    why: str = ""  # why the wrapper as a whole is not transparent ("" when it is)


def _w(
    with_value: str = "",
    flags: str = "",
    *,
    leading_operands: int = 0,
    assigns: bool = False,
    more_args: bool = False,
    not_running: str = "",
    changing: str = "",
    why: str = "",
) -> _Wrapper:
    return _Wrapper(
        frozenset(with_value.split()),
        frozenset(flags.split()),
        leading_operands,
        assigns,
        more_args,
        frozenset(not_running.split()),
        frozenset(changing.split()),
        why,
    )


# Every wrapper the policy knows, with what each option does (the README's "What a shell rule matches").
# Transparent ones are judged by what they run; an option in ``changing`` (or ``why``) makes one opaque.
_WRAPPERS: dict[str, _Wrapper] = {
    "env": _w("-u --unset -C --chdir -S --split-string", "-i --ignore-environment -0 --null - -v --debug",
              assigns=True, changing="-u --unset -C --chdir -S --split-string -i --ignore-environment -"),
    "nice": _w("-n --adjustment"),
    "nohup": _w(why="nohup writes nohup.out (in the home folder when the current one is not writable) "
                    "and keeps the command running after the session"),
    "timeout": _w("-k --kill-after -s --signal", "--preserve-status --foreground -v --verbose", leading_operands=1),
    "command": _w("", "-p", not_running="-v -V", changing="-p"),
    "exec": _w("-a", "-c -l", changing="-a -c -l"),
    "builtin": _w(),
    "stdbuf": _w("-i -o -e --input --output --error"),
    "ionice": _w("-c --class -n --classdata", "-t --ignore"),
    "taskset": _w("", "-a --all-tasks -c --cpu-list", leading_operands=1),
    "chrt": _w("", "-a --all-tasks -b --batch -d --deadline -f --fifo -i --idle -o --other -r --rr "
               "-R --reset-on-fork", leading_operands=1),
    "setsid": _w("", "-c --ctty -f --fork -w --wait",
                 why="setsid detaches the command from the session (it can outlive it)"),
    "time": _w("-f --format", "-p --portability -v --verbose -q --quiet",
               changing="-o --output -a --append"),
    "xargs": _w(
        "-a --arg-file -d --delimiter -E -e --eof -I -i --replace -L -l --max-lines -n --max-args "
        "-P --max-procs -s --max-chars --process-slot-var",
        "-0 --null -r --no-run-if-empty -t --verbose -x --exit -o --open-tty",
        more_args=True,
        changing="-I -i --replace --process-slot-var",  # text from stdin put anywhere in the command
    ),
    "sudo": _w("-u --user -g --group -C --close-from -D --chdir -h --host -p --prompt -r --role -t --type "
               "-T --command-timeout -U --other-user", "-E -H -n -P -S -b -i -k -s -A", assigns=True,
               why="sudo runs the command as another user"),
    "doas": _w("-u -C", "-n -s -L", why="doas runs the command as another user"),
    "pkexec": _w("--user", "--disable-internal-agent", why="pkexec runs the command as another user"),
    "run0": _w("-u --user -g --group -D --chdir", "", why="run0 runs the command as another user"),
}  # fmt: skip
SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh", "ash", "mksh", "yash"})
_SHELL_FLAGS = frozenset("eux lvnfBCEhHkmpPT".replace(" ", ""))  # set -e etc.: harmless before -c
# Always run code they are given elsewhere (a file, another machine, a container, another root, a lock
# held past the command): exact rules only.
_OPAQUE = frozenset({"source", ".", "su", "ssh", "parallel", "strace", "ltrace", "gdb", "valgrind", "flock",
                     "chroot", "unshare", "nsenter", "script", "expect", "firejail", "bwrap", "systemd-run",
                     "watch", "busybox", "toybox", "fakeroot", "proot", "coproc", "runuser", "sg", "newgrp",
                     "unbuffer", "torsocks", "proxychains", "proxychains4", "xvfb-run", "dbus-run-session",
                     "catchsegv", "daemonize", "start-stop-daemon", "at", "batch", "setpriv", "capsh",
                     "prlimit", "numactl", "cgexec", "schroot", "sandbox-exec"})  # fmt: skip


def unwrap(cmd: SimpleCommand, depth: int = 0) -> Inner | None:
    """What ``cmd`` runs when it is a wrapper (see the module docstring); None when it is not one. The
    wrapper's own ``NAME=value`` prefixes reach what it runs (``LD_PRELOAD=x nice ls``, ``BASH_ENV=f
    bash -c ls``): each inner command carries them, so it is judged with them."""
    inner = _unwrap(cmd, depth)
    if inner is None or not cmd.assigns:
        return inner
    carried = tuple(replace(c, assigns=(*cmd.assigns, *c.assigns)) for c in inner.commands)
    return Inner(carried, inner.transparent, inner.via)


def _unwrap(cmd: SimpleCommand, depth: int) -> Inner | None:
    if not cmd.words:
        return None
    name = PurePath(cmd.words[0]).name
    rest = cmd.words[1:]
    if depth >= MAX_DEPTH:
        return Inner((), False, name)
    if name in SHELLS:
        return _shell(name, cmd, depth)
    if name == "eval":
        if any(cmd.is_expanded(i) for i in range(1, len(cmd.words))):
            return Inner((), False, name)  # eval re-reads what the expansion gives as shell text
        return _script(" ".join(rest), name, depth) if rest else None
    if name in _OPAQUE:
        return Inner((), False, name)
    spec = _WRAPPERS.get(name)
    if spec is None:
        return None
    inner = _after_options(spec, rest, cmd, 1)
    if inner is None:
        return Inner((), False, name) if rest and not _only_info(spec, rest) else None
    return Inner((inner,), not spec.why and not _changes(spec, rest), name)


def commands_within(cmd: SimpleCommand, depth: int = 0) -> Iterator[SimpleCommand]:
    """``cmd`` and every command it runs through wrappers, transparent or not (``sudo rm``: ``rm`` too)."""
    yield cmd
    inner = unwrap(cmd, depth) if depth < MAX_DEPTH else None
    if inner is not None:
        for c in inner.commands:
            yield from commands_within(c, depth + 1)


def _is_option(spec: _Wrapper, word: str) -> bool:
    return word.startswith("-") and (word != "-" or "-" in spec.flags)


def _changes(spec: _Wrapper, rest: Sequence[str]) -> bool:
    """Whether the wrapper's own options include one that changes the directory, environment or program
    (``-C DIR``, ``-C/dir``, ``--chdir=DIR``)."""
    i = 0
    while i < len(rest) and _is_option(spec, rest[i]) and rest[i] != "--":
        word = rest[i]
        key = word.split("=", 1)[0]
        if key in spec.changing or (not word.startswith("--") and word[:2] in spec.changing):
            return True
        i += 2 if word in spec.with_value else 1
    return False


def _only_info(spec: _Wrapper, rest: Sequence[str]) -> bool:
    return bool(spec.not_running & set(rest))


def _after_options(
    spec: _Wrapper, rest: Sequence[str], cmd: SimpleCommand, offset: int
) -> SimpleCommand | None:
    """The command a wrapper runs, as a SimpleCommand of its own; None when the options are not understood
    (or nothing runs)."""
    i = 0
    while i < len(rest) and _is_option(spec, rest[i]):
        word = rest[i]
        if word == "--":
            i += 1
            break
        if word in spec.not_running:
            return None
        key = word.split("=", 1)[0]
        if key in spec.with_value:
            i += 1 if "=" in word else 2
        elif word in spec.flags or (
            len(word) > 2 and word[:2] in spec.with_value and not word.startswith("--")
        ):
            i += 1  # a flag, or a short option with its value attached (``-n5``, ``-oL``)
        else:
            return None
    leading = spec.leading_operands
    i += leading
    assigns: list[str] = []
    while spec.assigns and i < len(rest) and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", rest[i]):
        assigns.append(rest[i])
        i += 1
    if i >= len(rest):
        return None
    start = offset + i
    words = rest[i:]
    expanded = tuple(cmd.is_expanded(j) for j in range(start, start + len(words)))
    if spec.more_args:
        words, expanded = (*words, "…"), (*expanded, True)
    return SimpleCommand(
        tuple(words), (), cmd.is_expanded(start), cmd.text, tuple(assigns), tuple(expanded), cmd.opaque
    )


def _shell(name: str, cmd: SimpleCommand, depth: int) -> Inner:
    """``bash -c 'script'`` runs the script (parsed and judged); any other use of a shell runs a file or
    stdin (opaque)."""
    rest = cmd.words[1:]
    i = 0
    while i < len(rest) and rest[i].startswith(("-", "+")) and rest[i] not in ("-", "--"):
        word = rest[i]
        letters = word[1:]
        if word in ("-o", "+o"):
            i += 2
            continue
        if word in ("-l", "--login", "--norc", "--noprofile", "--posix"):
            i += 1
            continue
        if "c" in letters and not word.startswith("--") and set(letters) - {"c"} <= _SHELL_FLAGS:
            if i + 1 < len(rest):
                if cmd.is_expanded(i + 2):  # the script is a variable's value: ``sh -c "ls $x"``
                    return Inner((), False, name)
                return _script(rest[i + 1], name, depth)
            return Inner((), False, name)
        if word.startswith("--") or not set(letters) <= _SHELL_FLAGS:
            return Inner((), False, name)  # -i, --rcfile...: runs more than the script
        i += 1
    return Inner((), False, name)


def _script(source: str, via: str, depth: int) -> Inner:
    try:
        return Inner(tuple(parse_command(source)), True, via)
    except ShellParseError:
        return Inner((), False, via)
