"""The folder the launcher's specs and the editor terminals' runners are written to, and the writing.

What a spec says is what confines a command (and the variables it gets), and a runner is a script an editor
runs as the user: whoever can write either runs code as the user, or widens the next sandbox. So the folder
must be the user's alone, and it is checked at every write rather than trusted because it exists under the
expected name: the shared one sits in the temp folder under a name anyone can guess
(``acp-agent-sandbox-<uid>``), and another user of the machine could make it first. A folder that is a
link, not a folder, or someone else's is refused (``SandboxUnavailable``: the command does not run); one
that is the user's but open to others is closed and emptied (what it held may be anyone's). Files are
written under a random name that no one can have planted (``mkstemp``: ``O_EXCL``, mode 0600) and renamed
into place. The shared folder outlives every process, one file per distinct policy: files untouched for
``KEEP_S`` are removed once per process (reusing a file touches it).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ._policy import SandboxPolicy

__all__ = ["KEEP_S", "SandboxUnavailable", "own_folder", "spec_folder", "sweep_folder", "write_once"]

KEEP_S: Final = 7 * 24 * 3600.0
"""How long a spec or runner nobody used stays in its folder."""
_TOUCH_AFTER_S: Final = 24 * 3600.0
"""A reused file's time is refreshed at most this often (one write a day, not one per command)."""
_OURS: Final = ("spec-", "run-", ".spec-", ".run-")
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)


class SandboxUnavailable(OSError):
    """A sandbox was asked for where none can be enforced; the command was not started."""


def spec_folder(policy: SandboxPolicy) -> Path:
    """Where the specs of ``policy`` go: its ``state_dir`` (a session's private folder), else the user's
    shared folder in the temp folder."""
    return policy.state_dir or Path(tempfile.gettempdir()) / f"acp-agent-sandbox-{os.getuid()}"


def own_folder(path: Path, *, uid: int | None = None) -> Path:
    """``path`` as a folder only the user (``uid``, this process's by default) can write: made 0700 when
    missing; closed (0700) and emptied when it is theirs but open to others; refused with
    ``SandboxUnavailable`` when it is a link, not a folder, or belongs to someone else. Blocking."""
    uid = os.getuid() if uid is None else uid
    os.makedirs(path.parent, mode=0o700, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    try:  # by descriptor, never following a link: what is checked is what is changed
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC)
    except OSError as exc:
        raise SandboxUnavailable(
            f"the sandbox's folder {path} is not a folder (a link or a file is in its place): {exc.strerror}; "
            "remove it, no sandboxed command runs until then"
        ) from exc
    try:
        info = os.fstat(fd)
        if info.st_uid != uid:
            raise SandboxUnavailable(
                f"the sandbox's folder {path} belongs to another user (uid {info.st_uid}), who could change "
                "what the sandbox allows; remove it, no sandboxed command runs until then"
            )
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o077:
            os.fchmod(fd, 0o700)
        if mode & 0o022:  # others could write into it: nothing it holds is trusted
            for name in os.listdir(fd):
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)
    return path


def write_once(directory: Path, name: str, text: str) -> Path:
    """``directory/name`` holding ``text``, in a folder checked by ``own_folder``: reused when it holds
    it already, else written under a fresh random name and renamed into place. Blocking."""
    own_folder(directory)
    _sweep_once(directory)
    path = directory / name
    data = text.encode()
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | _CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            held = f.read(len(data) + 1)
            info = os.fstat(f.fileno())
        if held == data and stat.S_ISREG(info.st_mode) and _writable_by_user_alone(info):
            if time.time() - info.st_mtime > _TOUCH_AFTER_S:
                os.utime(path)  # in use: the sweep keeps it
            return path
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def _writable_by_user_alone(info: os.stat_result) -> bool:
    return info.st_uid == os.getuid() and not info.st_mode & 0o022


_swept: set[Path] = set()
_sweeping = threading.Lock()


def _sweep_once(directory: Path) -> None:
    with _sweeping:
        if directory in _swept:
            return
        _swept.add(directory)
    sweep_folder(directory)


def sweep_folder(directory: Path, now: float | None = None) -> list[str]:
    """Remove the specs and runners (and half-written files) in ``directory`` untouched for ``KEEP_S``;
    the names removed. Blocking."""
    cutoff = (time.time() if now is None else now) - KEEP_S
    removed: list[str] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(_OURS):
            continue
        with contextlib.suppress(OSError):
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(info.st_mode) and info.st_mtime < cutoff:
                os.unlink(entry.path)
                removed.append(entry.name)
    return removed
