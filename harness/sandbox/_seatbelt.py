"""macOS (experimental): the same policy as a Seatbelt profile for ``sandbox-exec -p PROFILE CMD``.

Seatbelt can say "all of the project except ``.git``" directly (``require-not``), so unlike Landlock the
project root stays writable. The profile starts from ``(deny default)`` and allows what a build-and-test
command needs (process fork/exec, reads, sysctl reads, the system's Mach services, pseudo-terminals),
writes beneath the writable paths minus the protected and denied ones, network only when allowed. It is
generated and unit-tested here but not run: no macOS machine is at hand.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from ._policy import SandboxPolicy

__all__ = ["SANDBOX_EXEC", "seatbelt_argv", "seatbelt_profile"]

SANDBOX_EXEC: Final = "/usr/bin/sandbox-exec"

_BASE: Final = """(version 1)
(deny default)
(allow process-exec process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow sysctl-read)
(allow mach-lookup)
(allow ipc-posix-shm ipc-posix-sem)
(allow pseudo-tty)
(allow file-ioctl (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$"))
(allow file-read*)
"""


def _quote(path: Path | str) -> str:
    """A path as an SBPL string literal."""
    text = str(path).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def _filters(paths: Iterable[Path]) -> list[str]:
    out: list[str] = []
    for p in paths:
        out.append(f"(subpath {_quote(p)})")
    return out


def _any(filters: Sequence[str]) -> str:
    return filters[0] if len(filters) == 1 else "(require-any " + " ".join(filters) + ")"


def _real(path: Path) -> Path:
    # /tmp and /var are symlinks into /private on macOS: Seatbelt matches the real path.
    return Path(os.path.realpath(path))


def seatbelt_profile(policy: SandboxPolicy) -> str:
    """The SBPL profile of ``policy`` (mode ``workspace-write`` or ``read-only``)."""
    if not policy.enabled:
        raise ValueError("a policy with mode off has no sandbox profile")
    lines = [_BASE.rstrip("\n")]
    denied = [_real(p) for p in policy.deny_read]
    if denied:
        lines.append(f"(deny file-read* {' '.join(_filters(denied))})")
    writable: list[Path] = []
    if policy.mode == "workspace-write":
        writable.extend(_real(r) for r in policy.roots)
        writable.extend(_real(p) for p in policy.writable)
    if policy.temp is not None:
        writable.append(_real(policy.temp))
    devices = '(literal "/dev/null") (literal "/dev/zero") (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$")'
    lines.append(f"(allow file-write* {devices})")
    if writable:
        excluded = [*(_real(p) for p in policy.protected_paths()), *denied]
        allowed = _any(_filters(writable))
        if excluded:
            # require-not on both the path and what lies beneath it: a missing .envrc cannot be created.
            nots = " ".join(f"(require-not {f})" for f in _filters(excluded))
            lines.append(f"(allow file-write* (require-all {allowed} {nots}))")
        else:
            lines.append(f"(allow file-write* {allowed})")
    if policy.network:
        lines.append("(allow network*)")
        lines.append("(allow system-socket)")
    else:
        # Unix sockets on the local file system only (build tools talk to their own daemons).
        lines.append('(allow network-outbound (remote unix-socket (path-regex #"^/private/tmp/")))')
    return "\n".join(lines) + "\n"


def seatbelt_argv(policy: SandboxPolicy, argv: Sequence[str]) -> list[str]:
    """``argv`` run under ``sandbox-exec`` with the policy's profile."""
    return [SANDBOX_EXEC, "-p", seatbelt_profile(policy), *argv]
