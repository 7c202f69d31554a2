"""Namespaces for the sandbox launcher: the user's own uid, a read-only view of everything outside the
writable roots, and a PID namespace whose end ends every process the command started.

Standard library only and light to import, like ``_landlock`` (the launcher runs it under ``python -I -S``).

Why each part (Landlock, ABI 7 here, has no right for metadata, nor for a process's lifetime):

- a user namespace mapping the user's uid and gid to themselves (``uid_map``: ``<uid> <uid> 1``), so
  files the command creates, and ``id``/``ls -l`` inside, show the user, never the overflow id ``nobody``;
- a mount namespace in which every mount is made read-only (``mount_setattr(AT_RECURSIVE)``) after the
  writable roots were cloned (``open_tree(OPEN_TREE_CLONE)``), the clones then moved back over their
  places: ``chmod``, ``chown``, ``touch -d``, ``setfattr`` outside the writable roots fail with ``EROFS``
  whatever the file's owner (Landlock judges only content writes); inside them they work (``chmod +x
  build/x``). The protected paths found inside the roots (``.git``, nested repositories' ``.git`` …) are
  bound over themselves read-only, so their metadata is closed too;
- a PID namespace (the launcher forks its init): when the command ends, its init ends, and the kernel
  kills every process left in the namespace, ``setsid``/``nohup``/double-forked ones included.

Kernel interface: ``unshare(2)``, ``mount(2)``, ``open_tree(2)`` (428), ``move_mount(2)`` (429) and
``mount_setattr(2)`` (442; Linux 5.12), the same numbers on every architecture (after the 2019 unification).
"""

from __future__ import annotations

import os
import stat

if __package__:
    from ._libc import errno, packed
    from ._libc import libc as _libc
else:  # the launcher, run as a script
    from _libc import errno, packed
    from _libc import libc as _libc

TYPE_CHECKING = False  # typing costs the launcher more than all its work
if TYPE_CHECKING:
    from typing import Any

__all__ = ["NamespaceError", "confine_writes", "enter", "hide", "libc", "mount_proc", "private_shm"]

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

_SYS_OPEN_TREE = 428
_SYS_MOVE_MOUNT = 429
_SYS_MOUNT_SETATTR = 442
_SYS_FSOPEN = 430
_SYS_FSCONFIG = 431
_SYS_FSMOUNT = 432
_FSCONFIG_CMD_CREATE = 6
_AT_FDCWD = -100
_AT_EMPTY_PATH = 0x1000
_AT_RECURSIVE = 0x8000
_AT_SYMLINK_NOFOLLOW = 0x100
_OPEN_TREE_CLONE = 1
_OPEN_TREE_CLOEXEC = 0o2000000
_MOVE_MOUNT_F_EMPTY_PATH = 0x4
_MOUNT_ATTR_RDONLY = 0x1
_MS_REC = 0x4000
_MS_PRIVATE = 1 << 18
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8


class NamespaceError(OSError):
    """A namespace or mount call failed; ``errno`` says why."""


def libc() -> Any:
    """The C library (``_libc``: without importing ``ctypes``)."""
    return _libc()


def _check(result: int, what: str) -> int:
    if result < 0:
        err = errno()
        raise NamespaceError(err, f"{what}: {os.strerror(err)}")
    return result


def enter(*, net: bool, pid: bool) -> None:
    """Move this single-threaded process into new user and mount namespaces (and network, PID ones),
    keeping its uid and gid. A new PID namespace holds this process's *next* child (its init)."""
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWUSER | CLONE_NEWNS | (CLONE_NEWNET if net else 0) | (CLONE_NEWPID if pid else 0)
    _check(int(libc().unshare(flags)), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def _clone(path: str) -> int | None:
    """A detached copy of the mount tree at ``path`` (None when it is gone or not a folder/file)."""
    fd = int(
        libc().syscall(
            _SYS_OPEN_TREE,
            _AT_FDCWD,
            path.encode(),
            _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC | _AT_RECURSIVE | _AT_SYMLINK_NOFOLLOW,
        )
    )
    if fd < 0:
        err = errno()
        if err in (2, 20, 40):  # ENOENT, ENOTDIR, ELOOP: nothing to keep writable there
            return None
        raise NamespaceError(err, f"open_tree {path}: {os.strerror(err)}")
    return fd


def _read_only(fd: int, path: bytes, flags: int, what: str) -> None:
    attr = packed((_MOUNT_ATTR_RDONLY, 8), (0, 8), (0, 8), (0, 8))  # struct mount_attr
    _check(
        int(libc().syscall(_SYS_MOUNT_SETATTR, fd, path, flags | _AT_RECURSIVE, attr, len(attr))),
        f"mount_setattr {what}",
    )


def _attach(fd: int, path: str) -> None:
    _check(
        int(libc().syscall(_SYS_MOVE_MOUNT, fd, b"", _AT_FDCWD, path.encode(), _MOVE_MOUNT_F_EMPTY_PATH)),
        f"move_mount {path}",
    )


def confine_writes(writable: list[str], read_only: list[str]) -> None:
    """In this process's own mount namespace: every mount read-only except ``writable`` (absolute
    paths, kept as they were), and ``read_only`` (inside them) read-only again. Call after ``enter``."""
    c = libc()
    try:
        here: str | None = os.getcwd()
    except OSError:
        here = None
    _check(int(c.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None)), "mount --make-rprivate /")
    # Outer roots first, so a root inside another is attached above it.
    keep = [(p, fd) for p in sorted(set(writable), key=len) if (fd := _clone(p)) is not None]
    try:
        _read_only(_AT_FDCWD, b"/", 0, "/")
        for path, fd in keep:
            _attach(fd, path)
    finally:
        for _, fd in keep:
            os.close(fd)
    for path in sorted(set(read_only), key=len):
        fd = _clone(path)
        if fd is None:
            continue
        try:
            _read_only(fd, b"", _AT_EMPTY_PATH, path)
            _attach(fd, path)
        finally:
            os.close(fd)
    if here is not None:  # the working folder was the mount below: enter it again, through the new ones
        os.chdir(here)


def private_shm() -> None:
    """A fresh tmpfs on ``/dev/shm`` (in this mount namespace): the host's is shared with the user's other
    programs, whose shared memory and semaphores a command could otherwise rewrite, and what a command left
    there outlived it. Call after ``confine_writes``."""
    if os.path.isdir("/dev/shm"):
        flags = _MS_NOSUID | _MS_NODEV
        _check(
            int(libc().mount(b"tmpfs", b"/dev/shm", b"tmpfs", flags, b"mode=1777")), "mount tmpfs /dev/shm"
        )


def _blanks() -> int:
    """A detached, private tmpfs holding an empty file ``f`` and an empty folder ``d`` (new mount API)."""
    c = libc()
    fs = _check(int(c.syscall(_SYS_FSOPEN, b"tmpfs", 1)), "fsopen tmpfs")
    try:
        _check(int(c.syscall(_SYS_FSCONFIG, fs, _FSCONFIG_CMD_CREATE, None, None, 0)), "fsconfig")
        mnt = _check(int(c.syscall(_SYS_FSMOUNT, fs, 1, 0)), "fsmount")
    finally:
        os.close(fs)
    os.close(os.open("f", os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o400, dir_fd=mnt))
    os.mkdir("d", 0o500, dir_fd=mnt)
    return mnt


def hide(paths: list[str]) -> None:
    """Cover each path (a file or a folder; a symlink or a missing one is skipped) with an empty,
    read-only one of the same kind: what Landlock cannot refuse to read beneath a readable root (the
    agent's own files inside a home folder opened as a project)."""
    covers: list[tuple[str, bytes]] = []
    for path in paths:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if stat.S_ISDIR(mode) or stat.S_ISREG(mode):
            covers.append((path, b"d" if stat.S_ISDIR(mode) else b"f"))
    if not covers:
        return
    blanks = _blanks()
    try:
        for path, kind in covers:
            fd = _check(
                int(libc().syscall(_SYS_OPEN_TREE, blanks, kind, _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC)),
                f"open_tree {kind.decode()}",
            )
            try:
                _read_only(fd, b"", _AT_EMPTY_PATH, path)
                _attach(fd, path)
            finally:
                os.close(fd)
    finally:
        os.close(blanks)


def mount_proc() -> bool:
    """A /proc of this (new) PID namespace's own, so the command sees only its processes. From the init
    of that namespace; False where the kernel refuses (a container masking parts of /proc)."""
    flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    return int(libc().mount(b"proc", b"/proc", b"proc", flags, None)) == 0
