"""OS sandboxes for the commands the agent starts: Landlock on Linux, Seatbelt on macOS (experimental).

``SandboxPolicy`` says what a command may touch; ``probe()`` what this machine can enforce;
``open_process`` starts a sandboxed child for the local shell runner (through the launcher script, which
makes the namespaces a multi-threaded agent cannot, with no ``preexec_fn``); ``sandbox_argv`` wraps a command line for processes
started by someone else (an editor's terminal, a hook runner, an MCP client) through the same launcher.
Nothing here knows ACP.

On Linux a sandbox is Landlock *and* namespaces (``_ns``: the user's own uid, everything outside the
writable roots read-only so metadata is closed too, a PID namespace so nothing outlives the command); a
machine without unprivileged user namespaces has no sandbox (commands ask), never half of one.
What Landlock (ABI 7 here) covers and does not: see the README's "Sandbox" section and ``_policy``.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.to_thread

from . import _landlock
from ._guard import Absent
from ._launch import confine_and_run
from ._policy import DEFAULT_PROTECTED, MODES, SandboxMode, SandboxPolicy, compile_spec, explain_denial
from ._seatbelt import SANDBOX_EXEC, seatbelt_argv, seatbelt_profile
from ._specs import SandboxUnavailable, spec_folder, write_once

__all__ = [
    "DEFAULT_PROTECTED",
    "Absent",
    "LAUNCHER",
    "MODES",
    "SandboxMode",
    "SandboxPolicy",
    "SandboxUnavailable",
    "Support",
    "compile_spec",
    "confine_and_run",
    "explain_denial",
    "open_process",
    "probe",
    "sandbox_argv",
    "seatbelt_profile",
    "spec_environ",
    "spawns_in_this_thread",
    "spec_folder",
    "unavailable",
    "wrap_command_line",
    "write_runner",
    "write_spec",
]

spec_environ = _landlock.spec_environ  # the environment a spec gives its command (`acp-agent sandbox`)

LAUNCHER: Final = Path(__file__).with_name("_start.py")
"""The launcher's entry script (``_launch`` does the work; see ``_start`` for why two)."""


@dataclass(frozen=True, slots=True)
class Support:
    """What this machine can enforce. ``mechanism``: ``landlock``, ``seatbelt`` or ``none``."""

    mechanism: str
    abi: int = 0
    netns: bool = False
    """Namespaces can be made (required for ``landlock``: see the module docstring)."""
    reason: str = ""

    @property
    def available(self) -> bool:
        return self.mechanism != "none"

    @property
    def network_enforced(self) -> bool:
        """Whether "network off" can be enforced (TCP by Landlock ABI 4+, everything by a namespace)."""
        return self.mechanism == "seatbelt" or self.abi >= 4 or self.netns

    def describe(self) -> str:
        if self.mechanism == "landlock":
            net = "TCP connect/bind" if self.abi >= 4 else "no network rules"
            return (
                f"Landlock ABI {self.abi} (files; {net}) and namespaces (metadata read-only outside the "
                "project, the user's uid, no network, nothing outlives a command)"
            )
        if self.mechanism == "seatbelt":
            return "Seatbelt (sandbox-exec; experimental)"
        return f"no sandbox: {self.reason}"


def unavailable(reason: str) -> Support:
    return Support("none", reason=reason)


def _namespaces(abi: int) -> str | None:
    """Why the launcher cannot make its namespaces here (None: it can)."""
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", str(LAUNCHER), "--probe"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=tempfile.gettempdir(),
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the sandbox launcher did not run: {exc}"
    if done.returncode == 0:
        return None
    why = done.stderr.decode(errors="replace").strip().removeprefix("acp-agent sandbox: ")
    return (
        f"Landlock ABI {abi} is here, but unprivileged user and mount namespaces are not ({why}); without "
        "them a command could change metadata outside the project and outlive itself"
    )


@cache
def probe() -> Support:
    """The sandbox this machine offers (probed once per process; blocking, a few milliseconds)."""
    if sys.platform == "darwin":
        if os.path.exists(SANDBOX_EXEC):
            return Support("seatbelt")
        return unavailable(f"{SANDBOX_EXEC} is missing")
    if not sys.platform.startswith("linux"):
        return unavailable(f"no sandbox is implemented for {sys.platform}")
    abi = _landlock.abi_version()
    if abi < 1:
        return unavailable(
            "the kernel has no Landlock (Linux 5.13 or newer with landlock in the lsm= boot list)"
        )
    why = _namespaces(abi)
    if why is not None:
        return unavailable(why)
    return Support("landlock", abi=abi, netns=True)


def write_spec(spec: Mapping[str, Any], directory: Path) -> Path:
    """Write a compiled spec into ``directory`` (named by its digest, so unchanged specs are reused).

    The directory must not be writable by the sandbox (a command could widen the next one), nor by anyone
    but the user: it is checked at each write (``_specs``)."""
    text = _landlock.format_spec(dict(spec))
    return write_once(directory, f"spec-{hashlib.sha256(text.encode()).hexdigest()[:16]}.txt", text)


def sandbox_argv(
    policy: SandboxPolicy,
    argv: Sequence[str],
    *,
    spec_dir: Path | None = None,
    support: Support | None = None,
    tied: bool = False,
) -> list[str]:
    """``argv`` wrapped so that it runs under ``policy`` whoever starts it (blocking: lists folders and
    writes the spec). ``tied``: it dies with the process that starts it (only from a thread that lives
    as long as that process: the kernel ties it to the thread). ``spec_dir``: where the spec is written
    (``spec_folder(policy)`` unless given). Raises ``SandboxUnavailable`` where there is no sandbox, or no
    folder of the user's own to write the spec to."""
    found = support or probe()
    if found.mechanism == "seatbelt":  # no launcher: env(1) drops the unset variables
        unset = [f"-u{name}" for name in policy.unset_env if name.isidentifier()]
        return seatbelt_argv(policy, ["/usr/bin/env", *unset, *argv] if unset else list(argv))
    if found.mechanism != "landlock":
        raise SandboxUnavailable(f"no sandbox here: {found.reason}")
    spec = compile_spec(policy, found.abi, netns=found.netns)
    path = write_spec(spec, spec_folder(policy) if spec_dir is None else spec_dir)
    return [sys.executable, "-I", "-S", str(LAUNCHER), str(path), *(["--tied"] if tied else []), "--", *argv]


_SH: Final = "/bin/sh"
_COMMAND: Final = "@acp-agent-command@"
"""Stands for the command in the runner's argv (``"$1"`` there)."""
_NOT_IN_DOUBLE_QUOTES: Final = frozenset('"$`\\!\n')
"""What a command shown in double quotes must not hold (it would change meaning, or the quoting shown)."""


def write_runner(policy: SandboxPolicy, *, support: Support | None = None) -> Path:
    """A ``sh`` script that runs its first argument as a bash command line under ``policy``: the
    launcher's whole command line (``sandbox_argv``), written beside the specs (which the sandbox cannot
    write, so no command can change what the next one runs under), named by its digest. Blocking."""
    spec_dir = spec_folder(policy)
    argv = sandbox_argv(policy, ["bash", "-c", _COMMAND], spec_dir=spec_dir, support=support)
    line = " ".join('"$1"' if arg == _COMMAND else shlex.quote(arg) for arg in argv)
    text = f"#!/bin/sh\n# The agent's sandbox: runs its argument with bash, confined.\nexec {line}\n"
    return write_once(spec_dir, f"run-{hashlib.sha256(text.encode()).hexdigest()[:12]}", text)


def wrap_command_line(command: str, policy: SandboxPolicy | None, *, support: Support | None = None) -> str:
    """A bash command line as the command line that runs it under ``policy`` (unchanged when the policy
    is None or off), for a process someone else starts (an editor's terminal, which some editors label
    with the line it runs): ``/bin/sh <runner> "<command>"``, the command last and whole (``write_runner``),
    in double quotes where that shows it as written, else quoted as ``shlex`` does. Blocking."""
    if policy is None or not policy.enabled:
        return command
    runner = write_runner(policy, support=support)
    word = (
        f'"{command}"'
        if command and not _NOT_IN_DOUBLE_QUOTES.intersection(command)
        else shlex.quote(command)
    )
    # /bin/sh by its path: the editor's shell finds a bare name on PATH, outside the sandbox, where a
    # project folder on the user's PATH could hold an ``sh`` a sandboxed command wrote.
    return f"{_SH} {shlex.quote(str(runner))} {word}"


def spawns_in_this_thread() -> bool:
    """Whether the event loop starts processes from its own thread (asyncio does; trio spawns from a
    worker thread that ends when idle, and the kernel's parent-death signal follows the thread)."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


async def open_process(
    argv: Sequence[str],
    policy: SandboxPolicy,
    *,
    cwd: Path,
    env: Mapping[str, str],
    support: Support | None = None,
) -> Any:
    """Start ``argv`` sandboxed in its own process group (stdin /dev/null, stdout+stderr merged into
    ``.stdout``), through the launcher, tied to this process on asyncio (it dies with the agent; on trio
    it ends with its command). Returns an ``anyio.abc.Process``."""
    found = support or await anyio.to_thread.run_sync(probe)
    if found.mechanism == "landlock":
        tied = spawns_in_this_thread()
        wrapped = await anyio.to_thread.run_sync(lambda: sandbox_argv(policy, argv, support=found, tied=tied))
        return await anyio.open_process(
            wrapped,
            cwd=cwd,
            env=policy.child_env(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    if found.mechanism == "seatbelt":
        return await anyio.open_process(
            seatbelt_argv(policy, argv),
            cwd=cwd,
            env=policy.child_env(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    raise SandboxUnavailable(f"no sandbox here: {found.reason}")
