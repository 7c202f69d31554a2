"""``SandboxPolicy``: what a sandboxed command may touch, and its compilation to Landlock rules.

The policy: writes only beneath the session's roots, its temp folder and configured extra paths, never
to a protected path (``.git``, ``.acp-agent``, … relative to each root) nor to a denied one; reads
everywhere except the denied paths (by default the agent's own configuration, credentials and data);
TCP bind/connect denied unless the network is allowed (plus a network namespace where one can be made).

Landlock only *grants* (a rule allows rights beneath a path), so "all of the project except ``.git``"
is compiled by splitting: the project folder gets no folder-making rule of its own, each of its entries
but the protected ones gets every right, and a protected path deeper down splits its parents the same
way. The project folder itself grants plain files (``_NEW_FILES``: ``touch new.txt``, ``> out.txt``): a
*folder* directly in it is made through the shell's ``make_dirs``; a protected file name made there is
removed once the command ends (``_guard``). Reads split the same way around denied paths (their
parents stay listable). Listings happen at compile time, once per command, and never follow a symlink.

The spec also names the mounts the launcher's namespaces keep writable (``rw``: the writable roots, the
temp folder, /dev/pts, /dev/shm; everything else is remounted read-only, which closes metadata: chmod,
chown, utimes, xattrs) and the paths inside them bound read-only (``ro``: the protected paths that exist,
denied ones, and nested repositories' ``.git`` found by ``nested_repositories``' bounded walk).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final, Literal

from ..protected import ROOT_PATHS
from . import _landlock as ll

__all__ = [
    "DEFAULT_PROTECTED",
    "MODES",
    "SandboxMode",
    "SandboxPolicy",
    "compile_spec",
    "explain_denial",
    "nested_repositories",
]

SandboxMode = Literal["workspace-write", "read-only", "off"]
MODES: Final[tuple[SandboxMode, ...]] = ("workspace-write", "read-only", "off")

DEFAULT_PROTECTED: Final[tuple[str, ...]] = ROOT_PATHS
"""Paths (relative to each root) a sandboxed command never writes: the permission gate's list
(``harness.protected``), so a sandboxed command and a file tool are refused the same files."""

_READ: Final = ll.ACCESS_FS["read_file"][0] | ll.ACCESS_FS["read_dir"][0] | ll.ACCESS_FS["execute"][0]
_READ_ALL: Final = _READ | ll.ACCESS_FS["ioctl_dev"][0]
_ALL: Final = ll.fs_rights(99)
_WRITE: Final = _ALL & ~_READ_ALL
_READ_DIR: Final = ll.ACCESS_FS["read_dir"][0]
_NEW_FILES: Final = (
    ll.ACCESS_FS["make_reg"][0]
    | ll.ACCESS_FS["remove_file"][0]
    | ll.ACCESS_FS["write_file"][0]
    | ll.ACCESS_FS["truncate"][0]
    | ll.ACCESS_FS["refer"][0]
)
"""What a split folder (a writable root with protected entries) grants beneath itself: plain files
(``touch new.txt``, ``go mod init``), never folders, symlinks or special files. Existing protected
entries are read-only mounts (no write, no removal, no rename onto them); a protected name the command
creates is removed after it ends (``_guard``)."""
# Device files every command may write (and open as terminals); /dev/shm holds POSIX semaphores.
_DEVICE_DIRS: Final = ("/dev/pts", "/dev/shm")
"""Kept writable in the mount namespace too (new terminals, POSIX semaphores)."""
NESTED_DEPTH: Final = 3
NESTED_MAX_DIRS: Final = 2000
_SKIP: Final = frozenset(
    {"node_modules", ".venv", "venv", "target", "__pycache__", ".tox", ".cache", ".mypy_cache"}
)
_DEVICES: Final = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/shm")


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """One sandbox: ``mode`` (``workspace-write``, ``read-only`` or ``off``) and ``network``; the paths
    are absolute (``roots`` are the session's folders, ``temp`` its private temp folder, exported as
    ``TMPDIR``)."""

    mode: SandboxMode = "workspace-write"
    network: bool = False
    roots: tuple[Path, ...] = ()
    temp: Path | None = None
    writable: tuple[Path, ...] = ()
    deny_read: tuple[Path, ...] = ()
    protected: tuple[str, ...] = DEFAULT_PROTECTED
    extra_env: Mapping[str, str] = field(default_factory=dict[str, str])
    unset_env: tuple[str, ...] = ()
    """Variables removed from the command's environment, whoever starts it (the credentials the caller
    holds: an editor's terminal starts the launcher with the editor's own environment)."""
    state_dir: Path | None = None
    """Where compiled specs for the launcher go: a folder the sandbox itself cannot write."""

    @property
    def enabled(self) -> bool:
        return self.mode != "off"

    def narrowed(self, *, read_only: bool = False, network: bool | None = None) -> SandboxPolicy:
        """This policy with writes limited to the temp folder and/or the network set."""
        mode: SandboxMode = "read-only" if read_only and self.mode != "off" else self.mode
        return replace(self, mode=mode, network=self.network if network is None else network)

    def protected_paths(self) -> tuple[Path, ...]:
        return tuple(root / rel for root in self.roots for rel in self.protected)

    def env(self) -> dict[str, str]:
        """The variables a sandboxed command gets (its temp folder)."""
        out = dict(self.extra_env)
        if self.temp is not None:
            out["TMPDIR"] = str(self.temp)
        return out

    def child_env(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` as the command gets it: without ``unset_env``, with ``env()``."""
        hidden = frozenset(self.unset_env)
        return {**{k: v for k, v in base.items() if k not in hidden}, **self.env()}

    def without_env(self, names: Iterable[str]) -> SandboxPolicy:
        """This policy with ``names`` also removed from the command's environment."""
        return replace(self, unset_env=tuple(sorted({*self.unset_env, *names})))

    def describe(self) -> str:
        """One sentence for people and the model: what the command may do."""
        if not self.enabled:
            return "no sandbox: the command can do anything you can"
        if self.mode == "read-only":
            where = "only to its temp folder"
        else:
            where = "only inside the project and its temp folder"
            if self.writable:
                where += " (and " + ", ".join(str(p) for p in self.writable) + ")"
            where += ", never to " + ", ".join(self.protected[:4]) + (" …" if len(self.protected) > 4 else "")
        net = "with network" if self.network else "no network"
        return f"sandboxed: writes {where}; {net}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "network": self.network,
            "roots": [str(p) for p in self.roots],
            "temp": str(self.temp) if self.temp is not None else None,
            "writable": [str(p) for p in self.writable],
            "deny_read": [str(p) for p in self.deny_read],
            "protected": list(self.protected),
            "env": dict(self.extra_env),
            "unset_env": list(self.unset_env),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SandboxPolicy:
        """The inverse of ``to_dict``; raises ``ValueError`` on a malformed policy."""
        mode = data.get("mode", "workspace-write")
        if mode not in MODES:
            raise ValueError(f"sandbox mode {mode!r} is not one of {', '.join(MODES)}")

        def paths(key: str) -> tuple[Path, ...]:
            value = data.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):  # pyright: ignore[reportUnknownVariableType]
                raise ValueError(f"sandbox policy {key} must be a list of paths")
            items: list[str] = value  # pyright: ignore[reportUnknownVariableType]
            return tuple(_absolute(v, key) for v in items)

        temp = data.get("temp")
        protected = data.get("protected", list(DEFAULT_PROTECTED))
        env = data.get("env", {})
        unset = data.get("unset_env", [])
        if not isinstance(protected, list) or not isinstance(env, dict) or not isinstance(unset, list):
            raise ValueError("sandbox policy protected and unset_env must be lists and env an object")
        return cls(
            mode=mode,
            network=bool(data.get("network", False)),
            roots=paths("roots"),
            temp=_absolute(temp, "temp") if isinstance(temp, str) else None,
            writable=paths("writable"),
            deny_read=paths("deny_read"),
            protected=tuple(str(p) for p in protected),  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            extra_env={str(k): str(v) for k, v in env.items()},  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            unset_env=tuple(str(n) for n in unset),  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        )


def _absolute(value: str, key: str) -> Path:
    path = Path(value)
    if not path.is_absolute():
        raise ValueError(f"sandbox policy {key}: {value!r} is not an absolute path")
    return path


def _under(path: str, base: str) -> bool:
    """Whether ``path`` is ``base`` or beneath it (both absolute and normalised: ``realpath``'s). Strings,
    not ``pathlib``: thousands of ``is_relative_to`` made the spec cost tens of ms per command."""
    return path == base or path.startswith(base if base.endswith("/") else base + "/")


def _protected_real(policy: SandboxPolicy, roots: list[str]) -> list[str]:
    """``realpath`` of every protected path of every root, with one ``lstat`` for most (a name that is
    no symlink, in a folder already resolved) instead of one per component of the whole path."""
    folders: dict[str, str] = {}
    out: list[str] = []
    for root, real_root in zip(policy.roots, roots, strict=True):
        for rel in policy.protected:
            parent, _, name = str(rel).rpartition("/")
            if str(rel).startswith("/") or {"", ".", ".."} & {*str(rel).split("/")}:  # (not in ROOT_PATHS)
                out.append(os.path.realpath(os.path.join(root, rel)))
                continue
            where = f"{root}/{parent}" if parent else str(root)
            if (real_parent := folders.get(where)) is None:
                real_parent = folders[where] = real_root if not parent else os.path.realpath(where)
            path = f"{real_parent}/{name}" if real_parent != "/" else f"/{name}"
            try:
                link = stat.S_ISLNK(os.lstat(path).st_mode)
            except OSError:
                link = False
            out.append(os.path.realpath(path) if link else path)
    return out


def _split(base: str, access: int, excluded: list[str], dir_access: int) -> list[tuple[str, int]]:
    """Rules granting ``access`` beneath ``base`` except beneath each ``excluded`` path.

    A folder on the way to an excluded path gets only ``dir_access`` itself; its other entries get
    ``access`` (symlinks none: their targets are judged where they lie)."""
    if any(_under(base, e) for e in excluded):
        return []
    inside = [e for e in excluded if _under(e, base)]
    if not inside:
        return [(base, access)]
    rules: list[tuple[str, int]] = [(base, dir_access)] if dir_access else []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return rules
    for entry in entries:
        try:
            if entry.is_symlink():
                continue
            is_dir = stat.S_ISDIR(entry.stat(follow_symlinks=False).st_mode)
        except OSError:
            continue
        child = entry.path
        if is_dir:
            rules.extend(_split(child, access, inside, dir_access))
        elif not any(_under(child, e) for e in inside):
            rules.append((child, access))
    return rules


def _dedupe(rules: Iterable[tuple[str, int]]) -> list[list[Any]]:
    merged: dict[str, int] = {}
    for path, access in rules:
        merged[path] = merged.get(path, 0) | access
    return [[p, a] for p, a in merged.items() if a]


def compile_spec(policy: SandboxPolicy, abi: int, *, netns: bool = False) -> dict[str, Any]:
    """The Landlock spec of ``policy`` for a kernel with ``abi`` (see ``_landlock.apply_spec``).

    ``netns``: also run the command in a network namespace of its own when the network is off."""
    if not policy.enabled:
        raise ValueError("a policy with mode off has no sandbox to compile")
    # Strings, not ``Path``s: this runs before every sandboxed command (~120 protected paths a root).
    roots = [os.path.realpath(r) for r in policy.roots]
    denied = [os.path.realpath(p) for p in policy.deny_read]
    # Roots stay readable even when they lie under a denied path (a project inside the agent's data).
    read_denied = [d for d in denied if not any(_under(r, d) for r in roots)]
    no_write = [*_protected_real(policy, roots), *denied]
    if policy.state_dir is not None:  # the specs of later commands
        no_write.append(os.path.realpath(policy.state_dir))
    rules: list[tuple[str, int]] = _split("/", _READ_ALL, read_denied, _READ_DIR)
    rules.extend((r, _READ_ALL) for r in roots)
    writable: list[str] = []
    if policy.mode == "workspace-write":
        writable.extend(roots)
        writable.extend(os.path.realpath(p) for p in policy.writable)
    if policy.temp is not None:
        writable.append(os.path.realpath(policy.temp))
    for path in writable:
        split = _split(path, _WRITE, no_write, 0)
        rules.extend((p, a | _READ_ALL) for p, a in split)
        if split and policy.mode == "workspace-write":  # new files at the top (``_guard`` after the fact)
            rules.append((path, _NEW_FILES | _READ_ALL))
    rules.extend((d, _ALL) for d in _DEVICES)
    rw = [*writable, *(d for d in _DEVICE_DIRS if os.path.isdir(d))]
    nested = [str(p) for p in nested_repositories([Path(r) for r in roots])]
    ro = [p for p in [*no_write, *nested] if any(_under(p, w) for w in writable)]
    # Landlock cannot refuse reads beneath a readable root: a denied path inside one is covered instead.
    hide = [d for d in denied if any(d != r and _under(d, r) for r in roots)]
    return {
        "abi": abi,
        "handled_fs": ll.fs_rights(abi),
        "handled_net": 0 if policy.network else ll.net_rights(abi),
        "scoped": ll.scope_rights(abi),
        "rules": _dedupe(rules),
        "netns": bool(netns and not policy.network),
        "env": policy.env(),
        "unset": sorted(set(policy.unset_env)),
        "rw": rw,
        "ro": [p for p in dict.fromkeys(ro) if os.path.lexists(p) and p not in hide],
        "hide": [p for p in dict.fromkeys(hide) if os.path.lexists(p)],
    }


def nested_repositories(roots: Sequence[Path]) -> list[Path]:
    """The ``.git`` entries (folders, or files pointing elsewhere) below the top of each root, found by a
    bounded walk: ``NESTED_DEPTH`` folders deep, ``NESTED_MAX_DIRS`` folders in all, not into symlinks nor
    into ``_SKIP`` (dependency and build folders). Blocking."""
    found: list[Path] = []
    budget = NESTED_MAX_DIRS
    level = [r for r in roots]
    for _ in range(NESTED_DEPTH + 1):
        below: list[Path] = []
        for folder in level:
            if budget <= 0:
                return found
            budget -= 1
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                name = entry.name.lower()
                if name == ".git":
                    if folder not in roots:
                        found.append(Path(entry.path))
                elif name not in _SKIP and entry.is_dir(follow_symlinks=False):
                    below.append(Path(entry.path))
        level = below
    return found


_DENIAL_MARKERS: Final = (
    "Permission denied",
    "Operation not permitted",
    "Read-only file system",
    "Network is unreachable",
    "Temporary failure in name resolution",
    "Could not resolve host",
    "Name or service not known",
    "EACCES",
    "EPERM",
    "ENETUNREACH",
)


def explain_denial(output: str, policy: SandboxPolicy) -> str | None:
    """A note for the model when a sandboxed command's output shows what looks like a sandbox denial:
    what the sandbox allows and how to ask to leave it. None when nothing looks denied."""
    if not policy.enabled or not any(m in output for m in _DENIAL_MARKERS):
        return None
    net = "" if policy.network else " or reach the network (`network: true`)"
    return (
        f"[sandbox: this command ran {policy.describe()}. A 'Permission denied', 'Operation not "
        "permitted' or unreachable network above may be the sandbox: outside the allowed folders, on a "
        "protected path, or creating a folder directly in the project folder. A new folder "
        "there (./build, ./.venv): call shell again with it in `make_dirs`, still sandboxed. If the task "
        f'truly needs to write elsewhere{net}, call shell again with `sandbox: "off"`; the user will be '
        "asked.]"
    )
