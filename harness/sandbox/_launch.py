"""The sandbox launcher: ``python -I -S _start.py SPEC [--tied] -- CMD [ARG...]`` runs ``CMD`` under the
compiled spec, for the local shell runner, an editor's terminal, a hook; ``--probe`` says whether this
machine can (status 0).

What it does (``_ns`` says why each part): enters new user (the user's uid mapped to itself), mount, PID
and (network off) network namespaces; makes every mount read-only but the spec's ``rw`` ones, binds its
``ro`` paths read-only; forks the PID namespace's init, which mounts its own /proc, applies Landlock and
starts ``CMD`` (without the variables the spec unsets: the credentials the agent holds). When ``CMD`` ends
the init ends, and with it every process ``CMD`` left behind. This process waits and ends as ``CMD`` did;
the init dies with it (a SIGTERM or Ctrl-C that ends it ends them all). ``--tied``: it also dies with its
parent (the agent), and so the rest does too (not for an editor's terminal, whose parent thread may come
and go).

Standard library only and run without ``site`` so it starts in tens of milliseconds; it never runs
``CMD`` unsandboxed: a spec it cannot apply ends it with status 126.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing and signal (with enum) would double the launcher's start-up
if TYPE_CHECKING:
    from typing import Any, NoReturn

if __package__:
    from . import _landlock, _ns
else:  # run as a script: the sibling modules, without importing the harness package
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _landlock
    import _ns

__all__ = ["confine_and_run", "main"]

_USAGE = "usage: _start.py SPEC [--tied] -- COMMAND [ARG...] | _start.py --probe"
_PR_SET_PDEATHSIG = 1
_SIGKILL = 9
_SIG_DFL = 0
# Python ignores SIGPIPE and SIGXFSZ and handles SIGINT; a command gets them as they were (as with
# Popen's restore_signals). The asm-generic numbers (x86, arm, riscv…).
_RESTORED = (2, 13, 25)


def _die_with_parent() -> None:
    _ns.libc().prctl(_PR_SET_PDEATHSIG, _SIGKILL, 0, 0, 0)


def _default_signals() -> None:
    for sig in _RESTORED:
        _ns.libc().signal(sig, _SIG_DFL)


def _say(text: str) -> None:
    try:
        os.write(2, f"acp-agent sandbox: {text}\n".encode(errors="replace"))
    except OSError:
        pass


def _exec(command: list[str], environ: dict[str, str]) -> NoReturn:
    try:
        os.execvpe(command[0], command, environ)
    except OSError as exc:
        _say(f"{command[0]}: {exc.strerror}")
    os._exit(127)


def _init(spec: dict[str, Any], command: list[str], environ: dict[str, str], report: int) -> NoReturn:
    """PID 1 of the command's namespace: Landlock, then ``command`` as its child; ends when it ends
    (the kernel then kills everything left), writing its wait status to ``report``. It dies with the
    launcher (a signal that ends the launcher ends everything; the command, in the same process group,
    got it too unless it left the group)."""
    try:
        _die_with_parent()
        _ns.mount_proc()
        _landlock.apply_spec(spec)
    except Exception as exc:  # whatever went wrong, the command does not run unconfined
        _say(f"cannot apply the sandbox, not running the command: {exc}")
        os._exit(126)
    child = os.fork()
    if child == 0:
        os.close(report)
        _exec(command, environ)
    while True:
        try:
            pid, status = os.wait()  # reaps orphans too: this is their init
        except ChildProcessError:
            os._exit(1)
        if pid == child:
            os.write(report, str(status).encode())
            os._exit(0)


def confine_and_run(spec: dict[str, Any], command: list[str], environ: dict[str, str], *, tied: bool) -> int:
    """Run ``command`` under ``spec`` (see the module docstring) and return its exit status; a command
    killed by a signal kills this process with it. Single-threaded callers only (``unshare``)."""
    _default_signals()  # (before the fork: a Ctrl-C ends this process at once, the rest with it)
    if tied:
        _die_with_parent()
    try:
        _ns.enter(net=bool(spec.get("netns")), pid=True)
        _ns.confine_writes(list(spec.get("rw", [])), list(spec.get("ro", [])))
        _ns.private_shm()
        _ns.hide(list(spec.get("hide", [])))
    except Exception as exc:  # whatever went wrong, the command does not run unconfined
        _say(f"cannot apply the sandbox, not running the command: {exc}")
        return 126
    read, report = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(read)
        _init(spec, command, environ, report)
    os.close(report)
    _, init_status = os.waitpid(init, 0)
    text = os.read(read, 64)
    os.close(read)
    status = int(text) if text.isdigit() else init_status
    if os.WIFSIGNALED(status):  # end as the command did (where the signal's default action ends us)
        sig = os.WTERMSIG(status)
        _ns.libc().signal(sig, _SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig
    return os.waitstatus_to_exitcode(status)


def _probe() -> int:
    """Whether the namespaces can be made here (status 0) or not (1, and why on stderr)."""
    try:
        _ns.enter(net=True, pid=True)
        here = os.getcwd()
        _ns.confine_writes([here], [here])
        _ns.hide([here])  # (a private tmpfs too)
    except Exception as exc:
        _say(str(exc))
        return 1
    pid = os.fork()
    if pid == 0:  # the namespace's init
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return 0 if status == 0 else 1


def _read_spec(path: str) -> str:
    """The spec's text, from a file the user owns and only they can write (not through a link): what it
    says confines the command and sets its variables, so a spec someone else could have written is not
    applied (the agent writes its specs so; ``harness.sandbox._specs``)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with open(fd, encoding="utf-8") as f:
        info = os.fstat(fd)
        if info.st_uid != os.getuid() or info.st_mode & 0o022:
            raise ValueError(f"the spec {path} is not the user's own file (others could have changed it)")
        return f.read()


def main(argv: list[str]) -> int:
    if argv == ["--probe"]:
        return _probe()
    tied = len(argv) > 1 and argv[1] == "--tied"
    rest = argv[2:] if tied else argv[1:]
    if len(argv) < 3 or not rest or rest[0] != "--" or len(rest) < 2:
        print(_USAGE, file=sys.stderr)
        return 2
    try:
        spec = _landlock.parse_spec(_read_spec(argv[0]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _say(f"cannot apply the sandbox, not running the command: {exc}")
        return 126
    return confine_and_run(spec, rest[1:], _landlock.spec_environ(spec, os.environ), tied=tied)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
