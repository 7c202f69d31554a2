"""The file-system seam: how the file tools read and write text (the disk, or an editor's buffers).

``open_regular`` is the one way the tools open a file on disk for reading, and ``LocalFileSystem`` writes
the same way: a FIFO, socket or device is refused without being opened (opening a FIFO blocks until the
other end comes; opening a device can act).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO, Protocol, runtime_checkable

import anyio
import anyio.to_thread

__all__ = ["FileSystem", "LocalFileSystem", "NotRegularFileError", "open_regular"]


class NotRegularFileError(OSError):
    """The path is a FIFO, socket, device or directory: the tools never open those."""


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


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for binary reading when it is a regular file, else ``NotRegularFileError``.

    Checked before opening (``stat``) and again on the open descriptor (``fstat``: the path may have
    been swapped in between); the open itself is non-blocking, so a FIFO swapped in cannot hang it.
    Blocking: call it in a thread."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise NotRegularFileError(f"{path} is not a regular file")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFileError(f"{path} is not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _read_bytes(path: Path) -> bytes:
    with open_regular(path) as f:
        return f.read()


def _write_bytes(path: Path, data: bytes) -> None:
    """Create or replace the regular file ``path``; a FIFO, socket or device there is refused, not
    opened for writing (which would block until a reader comes)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise NotRegularFileError(f"{path} is not a regular file")
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFileError(f"{path} is not a regular file")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb", closefd=False) as f:
            f.write(data)
    finally:
        os.close(fd)


class LocalFileSystem:
    """The local disk, UTF-8, line endings untouched (no universal-newline translation)."""

    async def read_text(self, path: Path) -> str:
        data = await anyio.to_thread.run_sync(_read_bytes, path)
        return data.decode("utf-8", errors="replace")

    async def write_text(self, path: Path, text: str) -> None:
        await anyio.to_thread.run_sync(_write_bytes, path, text.encode("utf-8"))
