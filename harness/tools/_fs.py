"""The file-system seam: how the file tools read and write text (the disk, or an editor's buffers), and
the disk operations themselves, each beneath a root (``harness.beneath``: no symlink followed, nothing by path).

``open_regular`` (``harness.beneath``'s, re-exported: the agent's configuration readers use it too) is the
one way the tools open a file on disk for reading, and ``LocalFileSystem`` writes
the same way: a FIFO, socket or device is refused without being opened (opening a FIFO blocks until the
other end comes; opening a device can act). A write goes to a temporary file in the opened parent folder
and is renamed over the name there (``rename`` with both ``dir_fd``), so a reader or a crash sees the old
text or the new, and a name swapped for a symlink or a hard link to a file outside is replaced, not
written through.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import anyio
import anyio.to_thread

from ..beneath import NotRegularFileError, Place, lstat_in, open_dir, open_in, open_regular
from ._root import Root

__all__ = [
    "FileSystem",
    "LocalFileSystem",
    "NotRegularFileError",
    "make_dir",
    "open_regular",
    "remove_file",
    "stat_place",
    "write_bytes",
]


@runtime_checkable
class FileSystem(Protocol):
    """Reads and writes whole text files by absolute path.

    ``read_text`` raises ``FileNotFoundError`` for a missing file and returns the text with its line
    endings as they are; ``write_text`` creates the file (and its parent directories) or replaces it.
    Either raises ``OSError`` (with a message for the model) when it cannot. Deleting (``apply_patch``,
    ``Journal.undo``) always happens on the local disk.
    """

    async def read_text(self, path: Path) -> str: ...

    async def write_text(self, path: Path, text: str) -> None: ...


def stat_place(place: Place) -> os.stat_result | None:
    """What ``place`` is (not following a final symlink: ``BeneathError``), None when it is absent."""
    if not place.parts:
        return os.stat(place.top)
    try:
        parent = open_dir(place.parent)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        return lstat_in(parent, place.name, str(place.path))
    finally:
        os.close(parent)


def write_bytes(place: Place, data: bytes, *, made: list[Place] | None = None) -> None:
    """Create or replace the regular file ``place`` (missing parents made, appended to ``made``).

    A new file, or one of ours: a temporary file in the opened parent, renamed over the name there (the
    mode kept; a hard link to a file elsewhere is replaced, not written through). Another user's file
    that we may write (a shared, group-writable one), or a file in a folder where we may not create the
    temporary one, is written in place instead (opened ``O_NOFOLLOW`` in the parent; its owner and mode
    stay), unless it has other hard links. A FIFO, device or directory there is refused; a file we may
    not write stays as it is (``PermissionError``)."""
    shown = str(place.path)
    if not place.parts:
        raise NotRegularFileError(shown)
    parent = open_dir(place.parent, made=made if made is not None else [])
    try:
        st = lstat_in(parent, place.name, shown)
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(shown)
        if st is not None and not os.access(place.name, os.W_OK, dir_fd=parent, follow_symlinks=False):
            raise PermissionError(13, f"{shown} is not writable", shown)
        in_place = st is not None and st.st_nlink == 1
        if in_place and st is not None and st.st_uid != os.geteuid():
            _overwrite(parent, place.name, data, shown)
            return
        try:
            _replace(parent, place.name, data, st, shown)
        except PermissionError:
            if not in_place:
                raise
            _overwrite(parent, place.name, data, shown)  # the folder is closed to new files
    finally:
        os.close(parent)


def _replace(parent: int, name: str, data: bytes, st: os.stat_result | None, shown: str) -> None:
    """Write ``data`` to a temporary file in ``parent`` and rename it over ``name`` there."""
    tmp = f".{name[:200]}.{secrets.token_hex(4)}.tmp"
    # A new file gets the usual 0o666 less the umask; a replaced one keeps its mode.
    fd = open_in(parent, tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, shown, 0o600 if st else 0o666)
    try:
        try:
            if st is not None:
                os.fchmod(fd, stat.S_IMODE(st.st_mode))
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=parent)
        raise


def _overwrite(parent: int, name: str, data: bytes, shown: str) -> None:
    """Write ``data`` into the existing regular file ``name`` in ``parent``, truncating it; a file that
    is no longer a regular one with a single link when opened is refused before it is truncated."""
    fd = open_in(parent, name, os.O_WRONLY | os.O_NONBLOCK, shown)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(shown)
        if st.st_nlink != 1:  # linked from elsewhere meanwhile: writing it would write there too
            raise OSError(errno.EMLINK, f"{shown} has another hard link now; not written", shown)
        os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
        _write_all(fd, data)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    with os.fdopen(fd, "wb", closefd=False) as f:
        f.write(data)
        f.flush()
        os.fsync(fd)


def remove_file(place: Place) -> bool:
    """Delete the regular file ``place`` (False: it was absent); anything else there is refused."""
    shown = str(place.path)
    if not place.parts:
        raise NotRegularFileError(shown)
    try:
        parent = open_dir(place.parent)
    except FileNotFoundError:
        return False
    try:
        st = lstat_in(parent, place.name, shown)
        if st is None:
            return False
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFileError(shown)
        os.unlink(place.name, dir_fd=parent)
        return True
    finally:
        os.close(parent)


def make_dir(place: Place) -> bool:
    """Create the directory ``place`` in its opened parent (False: a directory is there already);
    ``FileExistsError`` when something else is (a symlink included)."""
    if not place.parts:
        return False
    parent = open_dir(place.parent)
    try:
        try:
            os.mkdir(place.name, 0o777, dir_fd=parent)
            return True
        except FileExistsError:
            st = os.stat(place.name, dir_fd=parent, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                return False
            raise
    finally:
        os.close(parent)


def _remove_dirs(made: Sequence[Place]) -> None:
    """Remove the (still empty) directories ``made`` lists, deepest first, each in its opened parent."""
    for place in reversed(made):
        try:
            parent = open_dir(place.parent)
        except OSError:
            return
        try:
            os.rmdir(place.name, dir_fd=parent)
        except OSError:
            return
        finally:
            os.close(parent)


def _read_bytes(place: Place) -> bytes:
    with open_regular(place) as f:
        return f.read()


class LocalFileSystem:
    """The local disk, UTF-8, line endings untouched (no universal-newline translation).

    Every operation stays beneath ``root``'s directories (a path in none of them is refused) and follows
    no symlink; without a root, beneath ``/`` (the paths the tools pass are real: a symlink met is one
    swapped in since the check)."""

    def __init__(self, root: Root | None = None) -> None:
        self._tops: tuple[Path, ...] = root.paths if root is not None else (Path("/"),)

    def place(self, path: Path) -> Place:
        return Place.of(path, self._tops)

    async def read_text(self, path: Path) -> str:
        data = await anyio.to_thread.run_sync(_read_bytes, self.place(path))
        return data.decode("utf-8", errors="replace")

    async def write_text(self, path: Path, text: str) -> None:
        await anyio.to_thread.run_sync(lambda: write_bytes(self.place(path), text.encode("utf-8")))

    async def remove(self, path: Path) -> bool:
        """Delete the regular file ``path`` (False: it was absent)."""
        return await anyio.to_thread.run_sync(remove_file, self.place(path))

    async def make_dirs(self, path: Path) -> list[Path]:
        """Create the directory ``path`` and its missing parents; those created, shallowest first."""
        made: list[Place] = []

        def make() -> None:
            os.close(open_dir(self.place(path), made=made))

        try:
            await anyio.to_thread.run_sync(make)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_remove_dirs, made)
            raise
        return [p.path for p in made]

    async def remove_dirs(self, made: Sequence[Path]) -> None:
        """Remove the still-empty directories ``make_dirs`` created, deepest first (what can be)."""
        places = [self.place(p) for p in made]
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(_remove_dirs, places)
