"""Opening a path beneath a directory in one step: no symlink followed, no ``..``, nothing outside reached.

The file tools check a path (``Root.resolve``: its real path lies in a root) and use it afterwards;
between the two a symlink can be swapped in (by a background job a sandboxed command left running). So
every use goes through here: the checked real path is opened *beneath* its root directory without
following any symlink, in one step: ``openat2(2)`` with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
RESOLVE_NO_MAGICLINKS`` where the kernel has it (Linux 5.6+), else a walk that opens one component at a
time with ``O_NOFOLLOW | O_DIRECTORY`` relative to the directory opened before it (macOS, older kernels, a
seccomp filter that refuses the call). The path is the real one, without symlinks, at the check: a
symlink met now was swapped in since, and is refused (``BeneathError``), never followed. The last
component is opened (or stat'ed, created, renamed, removed) relative to its parent's descriptor with
``O_NOFOLLOW`` / ``follow_symlinks=False``, never by path string.

What no descriptor walk can stop: a directory already opened can be *moved* (renamed) elsewhere while
held, and what is written into it then lands where it was moved, which is a place the mover could write
anyway (a rename needs write access at both ends); a symlink, which can point anywhere, is never followed.

``open_regular`` opens a regular file that way (never a FIFO, socket, device or folder). Standard library
only, so the agent's configuration readers, which run before ``initialize`` is answered, use it too.

No PyPI binding fits: ``pathrs`` needs the system library ``libpathrs.so`` and is Linux-only, so
``openat2`` is called through ``ctypes`` (its syscall number, 437, is the same on every architecture the
check below admits).
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO, cast

__all__ = [
    "BeneathError",
    "NotRegularFileError",
    "Place",
    "lstat_in",
    "open_dir",
    "open_in",
    "open_regular",
    "openat2_works",
    "real_path",
    "use_openat2",
]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_DIR_FLAGS = os.O_RDONLY | _O_DIRECTORY | os.O_NOFOLLOW | _O_CLOEXEC
_MAX_TRIES = 4  # openat2 answers EAGAIN when a rename raced the lookup; after this many the walk runs


class BeneathError(OSError):
    """A path the walk refuses: a symlink on the way (swapped in after the check), ``..``, an absolute
    or empty component, a name outside every root. ``str()`` is the message for the model."""

    def __init__(self, message: str, code: int = errno.ELOOP) -> None:
        super().__init__(code, message)

    def __str__(self) -> str:
        return str(self.strerror)


@dataclass(frozen=True, slots=True)
class Place:
    """A path as a directory everything stays beneath (``top``, a real absolute path) and the names below it."""

    top: Path
    parts: tuple[str, ...]

    @property
    def path(self) -> Path:
        return self.top.joinpath(*self.parts)

    @property
    def parent(self) -> Place:
        return Place(self.top, self.parts[:-1])

    @property
    def name(self) -> str:
        return self.parts[-1]

    def child(self, name: str) -> Place:
        """``name`` (one directory entry's name, or a relative path) below this place."""
        if "/" in name or name in ("", ".", "..") or "\x00" in name:
            return Place(self.top, (*self.parts, *split(name)))
        return Place(self.top, (*self.parts, name))

    @classmethod
    def of(cls, path: Path, tops: Sequence[Path]) -> Place:
        """``path`` (absolute, normalised) below the first of ``tops`` that holds it; ``BeneathError``
        when none does."""
        if not path.is_absolute():
            raise BeneathError(f"{path}: not an absolute path", errno.EINVAL)
        for top in tops:
            if path == top or path.is_relative_to(top):
                return cls(top, split(path.relative_to(top).as_posix()))
        raise BeneathError(f"{path} is outside the allowed directories", errno.EXDEV)


def split(rel: str) -> tuple[str, ...]:
    """The names of the relative path ``rel`` (``.`` and empty ones dropped); ``..``, an absolute path
    or a NUL byte is refused, not interpreted."""
    if "\x00" in rel:
        raise BeneathError("the path contains a NUL byte", errno.EINVAL)
    if rel.startswith("/"):
        raise BeneathError(f"{rel}: an absolute path where a relative one was expected", errno.EXDEV)
    parts = tuple(p for p in PurePosixPath(rel).parts if p not in (".", ""))
    if ".." in parts:
        raise BeneathError(f"{rel}: '..' is not followed here", errno.EXDEV)
    return parts


def real_path(path: Path | str) -> Path:
    """``os.path.realpath``, which fails (``EINVAL`` from ``readlink``) when a link on the way is swapped
    for a folder between its ``lstat`` and its ``readlink``: retried, then that ``OSError`` is raised
    for the caller to turn into a refusal, not a crash."""
    for _ in range(_MAX_TRIES - 1):
        try:
            return Path(os.path.realpath(path))
        except OSError:
            continue
    return Path(os.path.realpath(path))


# --- openat2 ---------------------------------------------------------------------------------------

_SYS_OPENAT2 = 437
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_ARCHES = {"x86_64", "amd64", "aarch64", "arm64", "riscv64", "ppc64le", "ppc64", "s390x", "i686", "i386"}


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _syscall() -> Callable[..., int] | None:
    if sys.platform != "linux" or os.uname().machine.lower() not in _ARCHES:
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_long
    fn.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(_OpenHow), ctypes.c_size_t]
    return cast("Callable[..., int]", fn)


_call = _syscall()
_enabled = _call is not None  # turned off for good at the first ENOSYS/EPERM (seccomp), or by use_openat2


def use_openat2(enabled: bool) -> bool:
    """Turn the ``openat2`` path on or off (tests force the walk); the previous setting."""
    global _enabled
    before = _enabled
    _enabled = enabled and _call is not None
    return before


def openat2_works() -> bool:
    """Whether opens go through ``openat2`` now (the kernel has it and nothing refused it)."""
    return _enabled


def _openat2(dir_fd: int, rel: str, flags: int) -> int | None:
    """``rel`` opened beneath ``dir_fd`` with no symlink followed; None when ``openat2`` cannot serve."""
    global _enabled
    assert _call is not None
    how = _OpenHow(flags | _O_CLOEXEC, 0, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    for _ in range(_MAX_TRIES):
        fd = _call(_SYS_OPENAT2, dir_fd, os.fsencode(rel), ctypes.byref(how), ctypes.sizeof(how))
        if fd >= 0:
            return fd
        code = ctypes.get_errno()
        if code == errno.EAGAIN:
            continue
        if code in (errno.ENOSYS, errno.EPERM, errno.E2BIG, errno.EINVAL):
            _enabled = False
            return None
        if code == errno.ELOOP:
            raise BeneathError(_swapped(rel))
        if code == errno.EXDEV:
            raise BeneathError(f"{rel} leads out of the directory it must stay in", errno.EXDEV)
        raise OSError(code, os.strerror(code), rel)
    return None


# --- the walk --------------------------------------------------------------------------------------


def _swapped(shown: str) -> str:
    return (
        f"{shown}: a symbolic link is on the way now (there was none when the path was checked); "
        "refused, nothing was read or written through it"
    )


def _step(dir_fd: int, name: str, shown: str) -> int:
    """The directory ``name`` in ``dir_fd``, opened without following a symlink."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as e:
        # ELOOP/EMLINK (BSD)/ENOTDIR (Linux, with O_DIRECTORY): a symlink, or not a directory
        if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and _is_link(dir_fd, name):
            raise BeneathError(_swapped(shown)) from None
        raise


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def open_dir(place: Place, *, made: list[Place] | None = None) -> int:
    """A descriptor of the directory ``place``, each component a real directory beneath ``place.top``.

    ``made``: missing directories are created (``mkdir(dir_fd=)``) and appended to it, shallowest first.
    ``BeneathError`` when a component is a symlink; ``FileNotFoundError``/``NotADirectoryError`` as usual."""
    top = os.open(place.top, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    if not place.parts:
        return top
    shown = "/".join(place.parts)
    try:
        if _enabled:
            try:
                fd = _openat2(top, shown, os.O_RDONLY | _O_DIRECTORY)
            except FileNotFoundError:
                if made is None:
                    raise
                fd = None
            if fd is not None:
                return fd
        return _walk(top, place, made)
    finally:
        os.close(top)


def _walk(top: int, place: Place, made: list[Place] | None) -> int:
    fd = os.dup(top)
    try:
        for i, name in enumerate(place.parts):
            shown = "/".join(place.parts[: i + 1])
            try:
                nxt = _step(fd, name, shown)
            except FileNotFoundError:
                if made is None:
                    raise
                try:
                    os.mkdir(name, 0o777, dir_fd=fd)
                    made.append(Place(place.top, place.parts[: i + 1]))
                except FileExistsError:
                    pass  # made meanwhile: opened below like any other (a symlink is refused there)
                nxt = _step(fd, name, shown)
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def lstat_in(dir_fd: int, name: str, shown: str) -> os.stat_result | None:
    """What ``name`` in ``dir_fd`` is (None: absent); ``BeneathError`` for a symlink."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise BeneathError(_swapped(shown))
    return st


def open_in(dir_fd: int, name: str, flags: int, shown: str, mode: int = 0o666) -> int:
    """``name`` in ``dir_fd`` opened with ``flags`` and never through a symlink (``O_NOFOLLOW``)."""
    try:
        return os.open(name, flags | os.O_NOFOLLOW | _O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR) and _is_link(dir_fd, name):
            raise BeneathError(_swapped(shown)) from None
        raise


class NotRegularFileError(OSError):
    """The path is a FIFO, socket, device or directory: the tools never open those."""

    def __init__(self, shown: str) -> None:
        super().__init__(f"{shown} is not a regular file")

    def __str__(self) -> str:
        return str(self.args[0])


def open_regular(place: Place) -> BinaryIO:
    """``place`` opened for binary reading when it is a regular file, else ``NotRegularFileError``.

    Checked before opening (``lstat`` in the opened parent) and again on the descriptor (``fstat``); the
    open is ``O_NOFOLLOW | O_NONBLOCK``, so neither a symlink nor a FIFO swapped in meanwhile is
    followed or waited on. Blocking: call it in a thread."""
    shown = str(place.path)
    if not place.parts:
        raise NotRegularFileError(shown)
    parent = open_dir(place.parent)
    try:
        st = lstat_in(parent, place.name, shown)
        if st is None:
            raise FileNotFoundError(2, "No such file or directory", shown)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(shown)
        fd = open_in(parent, place.name, os.O_RDONLY | os.O_NONBLOCK, shown)
    finally:
        os.close(parent)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFileError(shown)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
