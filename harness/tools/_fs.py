"""The file-system seam: how the file tools read and write text (the disk, or an editor's buffers)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

import anyio

__all__ = ["FileSystem", "LocalFileSystem"]


@runtime_checkable
class FileSystem(Protocol):
    """Reads and writes whole text files by absolute path.

    ``read_text`` raises ``FileNotFoundError`` for a missing file and returns the text with its line
    endings as they are; ``write_text`` creates the file (and its parent directories) or replaces it.
    Deleting (``apply_patch``, ``Journal.undo``) always happens on the local disk.
    """

    async def read_text(self, path: Path) -> str: ...

    async def write_text(self, path: Path, text: str) -> None: ...


class LocalFileSystem:
    """The local disk, UTF-8, line endings untouched (no universal-newline translation)."""

    async def read_text(self, path: Path) -> str:
        data = await anyio.Path(path).read_bytes()
        return data.decode("utf-8", errors="replace")

    async def write_text(self, path: Path, text: str) -> None:
        p = anyio.Path(path)
        await p.parent.mkdir(parents=True, exist_ok=True)
        await p.write_bytes(text.encode("utf-8"))
