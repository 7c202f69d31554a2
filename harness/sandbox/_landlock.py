"""A small layer over Linux Landlock (C calls through ``_libc``), and the compiled spec the launcher reads.

Standard library only, and light to import (no ``ctypes``, no dataclasses): the launcher (``_launch``,
started as ``_start.py``) runs it under ``python -I -S`` for every sandboxed command, where each
millisecond of start-up counts. It is also imported normally by ``harness.sandbox``.

Kernel interface (``linux/landlock.h``, ``Documentation/userspace-api/landlock.rst``):

- ``landlock_create_ruleset(attr, size, flags)`` is syscall 444 on every architecture that has it;
  ``flags = LANDLOCK_CREATE_RULESET_VERSION`` with a NULL attr returns the ABI version.
- ``landlock_add_rule(fd, LANDLOCK_RULE_PATH_BENEATH, attr, 0)`` (445) grants rights beneath a path
  (the rule holds an ``O_PATH`` descriptor, so it follows the inode, not the name).
- ``landlock_restrict_self(fd, 0)`` (446) enforces it on the calling *thread* and the processes it
  starts later; it needs ``no_new_privs`` (``prctl(PR_SET_NO_NEW_PRIVS)``), also per thread.

A spec (see ``harness.sandbox._policy.compile_spec``) is a plain dict:
``{"handled_fs", "handled_net", "scoped", "rules": [[path, access], ...], "netns", "env", "unset", "rw",
"ro"}`` (``env``: variables to set, ``unset``: names to remove before the command starts; ``rw``: the
mounts kept writable, ``ro``: paths inside them bound read-only, ``hide``: denied paths inside a readable
root, covered by empty read-only ones; see ``_ns``). It crosses
to the launcher as text (``format_spec``/``parse_spec``: one item a line; importing ``json`` would
cost the launcher more than the rest of its work).
"""

from __future__ import annotations

import errno
import os
import stat

if __package__:
    from ._libc import errno as _errno
    from ._libc import libc as _libc
    from ._libc import packed
else:  # the launcher, run as a script
    from _libc import errno as _errno
    from _libc import libc as _libc
    from _libc import packed

TYPE_CHECKING = False  # typing costs the launcher more than all its work
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "ACCESS_FS",
    "FILE_RIGHTS",
    "LandlockError",
    "NET_BIND_TCP",
    "NET_CONNECT_TCP",
    "SCOPE_ABSTRACT_UNIX_SOCKET",
    "SCOPE_SIGNAL",
    "abi_version",
    "apply_spec",
    "format_spec",
    "fs_rights",
    "net_rights",
    "parse_spec",
    "restrict",
    "scope_rights",
    "spec_environ",
]

_SYS_CREATE_RULESET = 444
_SYS_ADD_RULE = 445
_SYS_RESTRICT_SELF = 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# LANDLOCK_ACCESS_FS_*, with the ABI that introduced each.
ACCESS_FS: dict[str, tuple[int, int]] = {
    "execute": (1 << 0, 1),
    "write_file": (1 << 1, 1),
    "read_file": (1 << 2, 1),
    "read_dir": (1 << 3, 1),
    "remove_dir": (1 << 4, 1),
    "remove_file": (1 << 5, 1),
    "make_char": (1 << 6, 1),
    "make_dir": (1 << 7, 1),
    "make_reg": (1 << 8, 1),
    "make_sock": (1 << 9, 1),
    "make_fifo": (1 << 10, 1),
    "make_block": (1 << 11, 1),
    "make_sym": (1 << 12, 1),
    "refer": (1 << 13, 2),
    "truncate": (1 << 14, 3),
    "ioctl_dev": (1 << 15, 5),
}
FILE_RIGHTS = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)
"""The rights a rule on a non-directory may carry (the kernel refuses others with EINVAL)."""
NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1


class LandlockError(OSError):
    """A Landlock (or namespace) call failed; ``errno`` says why."""


def _c() -> Any:
    return _libc()


def _check(result: int, what: str) -> int:
    if result < 0:
        err = _errno()
        raise LandlockError(err, f"{what}: {os.strerror(err)}")
    return result


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when there is none (not Linux, too old, disabled at boot)."""
    try:
        libc = _c()
    except OSError:
        return 0
    version = int(libc.syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION))
    return version if version > 0 else 0


def fs_rights(abi: int) -> int:
    """Every filesystem right the ABI knows (a ruleset handling them all denies what it does not grant)."""
    bits = 0
    for bit, since in ACCESS_FS.values():
        if abi >= since:
            bits |= bit
    return bits


def net_rights(abi: int) -> int:
    """TCP bind and connect, from ABI 4 (UDP and other protocols are not covered by Landlock here)."""
    return NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0


def scope_rights(abi: int) -> int:
    """Abstract unix sockets and signals outside the sandbox, from ABI 6."""
    return SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0


def restrict(handled_fs: int, handled_net: int, scoped: int, rules: list[tuple[str, int]]) -> None:
    """Enforce a ruleset on the calling thread (and every process it starts from now on).

    A rule on a path that does not exist (any more) is skipped; rights a file cannot carry are
    dropped for files. Irreversible for this thread: call it in a thread or process of its own."""
    libc = _c()
    attr = packed((handled_fs, 8), (handled_net, 8), (scoped, 8))  # struct landlock_ruleset_attr
    fd = _check(
        int(libc.syscall(_SYS_CREATE_RULESET, attr, len(attr), 0)),
        "landlock_create_ruleset",
    )
    try:
        for path, access in rules:
            try:
                # O_NOFOLLOW: a rule is never moved onto a symlink's target.
                parent = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EACCES):
                    continue
                raise
            try:
                mode = os.fstat(parent).st_mode
                if stat.S_ISLNK(mode):
                    continue
                allowed = access & handled_fs
                if not stat.S_ISDIR(mode):
                    allowed &= FILE_RIGHTS
                if not allowed:
                    continue
                rule = packed((allowed, 8), (parent, 4))  # struct landlock_path_beneath_attr (packed)
                _check(
                    int(libc.syscall(_SYS_ADD_RULE, fd, _RULE_PATH_BENEATH, rule, 0)),
                    f"landlock_add_rule {path}",
                )
            finally:
                os.close(parent)
        _check(int(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)), "prctl(PR_SET_NO_NEW_PRIVS)")
        _check(int(libc.syscall(_SYS_RESTRICT_SELF, fd, 0)), "landlock_restrict_self")
    finally:
        os.close(fd)


def spec_environ(spec: dict[str, Any], base: Any) -> dict[str, str]:
    """``base`` (a mapping of variables) as the sandboxed command gets it: the spec's ``unset`` names
    removed, its ``env`` set."""
    hidden = frozenset(str(n) for n in spec.get("unset", []))
    out = {str(k): str(v) for k, v in dict(base).items() if k not in hidden}
    out.update({str(k): str(v) for k, v in dict(spec.get("env", {})).items()})
    return out


def apply_spec(spec: dict[str, Any]) -> None:
    """Apply a compiled spec's Landlock rules to this thread (its namespaces are ``_ns``'s, applied
    before)."""
    rules = [(str(p), int(a)) for p, a in spec.get("rules", [])]
    restrict(int(spec["handled_fs"]), int(spec.get("handled_net", 0)), int(spec.get("scoped", 0)), rules)


_MAGIC = "acp-agent-sandbox 1"


def format_spec(spec: dict[str, Any]) -> str:
    """The spec as text: a header, then ``env NAME VALUE``, ``unset NAME`` and ``rule ACCESS PATH`` lines.
    A path or value holding a newline is left out (its rule then grants nothing: the sandbox only
    narrows); so is a name that cannot be a variable's."""
    lines = [
        _MAGIC,
        f"ruleset {int(spec['handled_fs'])} {int(spec.get('handled_net', 0))} "
        f"{int(spec.get('scoped', 0))} {1 if spec.get('netns') else 0}",
    ]
    for name, value in dict(spec.get("env", {})).items():
        if "\n" not in f"{name}{value}" and " " not in str(name):
            lines.append(f"env {name} {value}")
    for name in spec.get("unset", []):
        if str(name).isidentifier():
            lines.append(f"unset {name}")
    for path, access in spec.get("rules", []):
        if "\n" not in str(path):
            lines.append(f"rule {int(access)} {path}")
    for kind in ("rw", "ro", "hide"):
        for path in spec.get(kind, []):
            if "\n" not in str(path):
                lines.append(f"{kind} {path}")
    return "\n".join(lines) + "\n"


def parse_spec(text: str) -> dict[str, Any]:
    """The inverse of ``format_spec``; raises ``ValueError`` on anything else."""
    lines = text.split("\n")
    if not lines or lines[0] != _MAGIC or len(lines) < 2 or not lines[1].startswith("ruleset "):
        raise ValueError("not an acp-agent sandbox spec")
    fs, net, scoped, netns = (int(x) for x in lines[1].split(" ")[1:5])
    env: dict[str, str] = {}
    unset: list[str] = []
    rules: list[list[Any]] = []
    mounts: dict[str, list[str]] = {"rw": [], "ro": [], "hide": []}
    for line in lines[2:]:
        kind, _, rest = line.partition(" ")
        if kind in mounts:
            mounts[kind].append(rest)
        elif line.startswith("rule "):
            _, access, path = line.split(" ", 2)
            rules.append([path, int(access)])
        elif line.startswith("env "):
            _, name, value = line.split(" ", 2)
            env[name] = value
        elif line.startswith("unset "):
            unset.append(line[len("unset ") :])
        elif line:
            raise ValueError(f"unexpected line in the sandbox spec: {line[:80]!r}")
    return {
        "handled_fs": fs,
        "handled_net": net,
        "scoped": scoped,
        "netns": bool(netns),
        "rules": rules,
        "env": env,
        "unset": unset,
        **mounts,
    }
