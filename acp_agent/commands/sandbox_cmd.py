"""``acp-harness-agent sandbox [--policy FILE | --write PATH ...] [--read-only] [--network] -- CMD [ARG...]``:
apply a sandbox policy to this process, then exec ``CMD`` under it.

Without ``--policy`` the current folder (and ``--write`` paths) are writable, with the default protected
paths kept read-only, and the network is off. ``--policy`` takes a ``SandboxPolicy`` as JSON (the
``to_dict`` form). Exit status 126 when no sandbox can be applied: the command never runs unsandboxed.
The agent itself wraps editor-terminal commands with the leaner launcher (``harness/sandbox/_start.py``),
which applies the same compiled rules without loading the CLI.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from ..config import home_dir

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--policy", help="a policy as JSON (a file path); default: the current folder")
    parser.add_argument("--write", action="append", default=[], metavar="PATH", help="also writable")
    parser.add_argument("--deny-read", action="append", default=[], metavar="PATH", help="not readable")
    parser.add_argument("--read-only", action="store_true", help="writes only to the temp folder")
    parser.add_argument("--network", action="store_true", help="allow the network")
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="-- COMMAND [ARG...]")


def _policy(args: argparse.Namespace) -> Any:
    from harness.sandbox import SandboxPolicy

    from ..coding.reports import (  # the agent's list (the harness's names none)
        AGENT_ROOT_PATHS,
        home_sandbox_paths,
    )

    if args.policy:
        data: Any = json.loads(Path(args.policy).read_text(encoding="utf-8"))
        if isinstance(data, dict):
            data = {"protected": list(AGENT_ROOT_PATHS), **cast("dict[str, Any]", data)}
        policy = SandboxPolicy.from_dict(data)
    else:
        home = home_sandbox_paths(home_dir(os.environ), [Path.cwd()])  # ``~/bin``, as a session's sandbox
        policy = SandboxPolicy(roots=(Path.cwd(),), protected=(*AGENT_ROOT_PATHS, *home))
    extra = tuple(Path(p).absolute() for p in args.write)
    denied = tuple(Path(p).absolute() for p in args.deny_read)
    return SandboxPolicy.from_dict(
        {
            **policy.to_dict(),
            "mode": "read-only" if args.read_only else policy.mode,
            "network": bool(args.network or policy.network),
            "writable": [str(p) for p in (*policy.writable, *extra)],
            "deny_read": [str(p) for p in (*policy.deny_read, *denied)],
        }
    )


def main(args: argparse.Namespace, config: Any = None) -> int:
    argv = list(args.argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print("acp-harness-agent sandbox: give the command after --", file=sys.stderr)
        return 2
    from harness.sandbox import (
        compile_spec,
        confine_and_run,
        probe,
        seatbelt_profile,
        spec_environ,
    )

    try:
        policy = _policy(args)
    except (OSError, ValueError) as exc:
        print(f"acp-harness-agent sandbox: bad policy: {exc}", file=sys.stderr)
        return 2
    temp: str | None = None
    if policy.temp is None:  # a private temp folder (TMPDIR): /tmp itself is not writable inside
        import tempfile

        temp = tempfile.mkdtemp(prefix="acp-agent-sandbox-cli-")
        policy = dataclasses.replace(policy, temp=Path(temp))
    support = probe()
    if support.mechanism not in ("landlock", "seatbelt"):
        print(f"acp-harness-agent sandbox: {support.describe()}; not running the command", file=sys.stderr)
        return 126

    def enter() -> int:
        """Apply the sandbox to this process and exec the command; the status when that fails."""
        run, environ = argv, policy.child_env(os.environ)
        try:
            if support.mechanism == "landlock":  # namespaces, then Landlock, as the launcher does
                spec = compile_spec(policy, support.abi, netns=support.netns)
                return confine_and_run(spec, argv, spec_environ(spec, os.environ), tied=False)
            else:
                run = ["/usr/bin/sandbox-exec", "-p", seatbelt_profile(policy), *argv]
        except OSError as exc:
            print(
                f"acp-harness-agent sandbox: cannot apply the sandbox, not running the command: {exc}",
                file=sys.stderr,
            )
            return 126
        try:
            os.execvpe(run[0], run, environ)
        except OSError as exc:
            print(f"acp-harness-agent sandbox: {argv[0]}: {exc.strerror}", file=sys.stderr)
        return 127

    if temp is None:
        return enter()
    return _in_child_then_remove(enter, temp)


def _in_child_then_remove(enter: Callable[[], int], temp: str) -> int:
    """``enter`` in a forked child (this process stays outside the sandbox, which cannot remove its own
    temp folder), then remove the temp folder; the child's status is ours. Signals that would end this
    process are passed on (Ctrl-C reaches the child through the terminal's process group)."""
    import signal

    try:
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            pid = os.fork()  # the CLI runs no thread: a plain fork
        except OSError as exc:
            print(f"acp-harness-agent sandbox: cannot start the command: {exc}", file=sys.stderr)
            return 126
        if pid == 0:
            os._exit(enter())
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, lambda n, _f: os.kill(pid, n))
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
