"""``write_text_atomic``: replace a file so a reader (or a crash) sees the old content or the new, never
half of it. ``private_dir`` and ``open_private_append``: the agent's own data (sessions, transcripts, logs,
caches, keys) in folders only the user can enter (0700) and files only the user can read (0600), whatever
the umask. Blocking: call them in a worker thread."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

__all__ = ["PRIVATE_DIR_MODE", "PRIVATE_FILE_MODE", "open_private_append", "private_dir", "write_text_atomic"]

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """``path`` as a folder only the user can enter: made 0700 when missing (missing parents too), and
    tightened when it is the user's and open to others (a folder an older version made 0755)."""
    missing = [p for p in (path, *path.parents) if not os.path.lexists(p)]
    for folder in reversed(missing):  # ``mkdir(parents=True)`` would make the parents 0777 & ~umask
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=PRIVATE_DIR_MODE)
    with contextlib.suppress(OSError):
        info = path.stat()
        if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
            path.chmod(stat.S_IMODE(info.st_mode) & PRIVATE_DIR_MODE)
    if not path.is_dir():
        _raise_if_removed(path)
        raise NotADirectoryError(f"{path} is not a folder")
    return path


def _raise_if_removed(folder: Path) -> None:
    """``FileNotFoundError`` when ``folder`` is gone: removed by someone else while it was being made or
    written into (a session deleted as it is resumed), which callers handle as such, not as a file in the way."""
    if not os.path.lexists(folder):
        raise FileNotFoundError(errno.ENOENT, "removed meanwhile", str(folder))


def open_private_append(path: Path, flags: int = os.O_WRONLY | os.O_APPEND) -> int:
    """A descriptor of ``path`` opened with ``flags`` (created 0600; an existing file the user owns that
    others can read is tightened to 0600)."""
    fd = os.open(path, flags | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), PRIVATE_FILE_MODE)
    with contextlib.suppress(OSError):
        info = os.fstat(fd)
        if info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & 0o077:
            os.fchmod(fd, PRIVATE_FILE_MODE)
    return fd


def write_text_atomic(path: Path, text: str, *, sync: bool = True) -> None:
    """Write ``text`` to a temporary file beside ``path`` (created readable by the user only), fsync it,
    then rename it over ``path``; the temporary file is removed if anything fails. ``sync=False`` skips
    the fsync: the rename is still atomic and the data survives a killed process (it is in the page
    cache), only not a power loss (a caller that needs that fsyncs ``path`` and its folder later)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # it was there at the mkdir and is not a folder now: a file, or removed since
        _raise_if_removed(path.parent)
        raise
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
