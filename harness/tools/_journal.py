"""``Journal``: every change the file tools made, grouped by call, so a session can undo the last ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from ._fs import FileSystem, LocalFileSystem

__all__ = ["FileChange", "Journal", "Undone"]


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file's change: ``before`` is None for a created file, ``after`` None for a deleted one."""

    path: Path
    before: str | None
    after: str | None


@dataclass(frozen=True, slots=True)
class Undone:
    """What ``undo`` did to one file: ``action`` is ``restored``, ``deleted`` or ``recreated``.

    ``overwrote`` is True when the file had changed since the tool wrote it (those later changes are lost).
    """

    path: Path
    action: str
    overwrote: bool = False


@dataclass(frozen=True, slots=True)
class _Entry:
    label: str
    changes: tuple[FileChange, ...]


class Journal:
    """Records changes per tool call (``record``); ``undo(n)`` reverts the last ``n`` calls' changes."""

    def __init__(self, fs: FileSystem | None = None, *, limit: int = 200) -> None:
        self._fs: FileSystem = fs or LocalFileSystem()
        self._entries: list[_Entry] = []
        self._limit = limit

    def record(self, changes: Sequence[FileChange], label: str = "") -> None:
        if not changes:
            return
        self._entries.append(_Entry(label, tuple(changes)))
        if len(self._entries) > self._limit:
            del self._entries[: len(self._entries) - self._limit]

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[tuple[str, tuple[FileChange, ...]]]:
        """The recorded calls, oldest first: ``(label, changes)``."""
        return [(e.label, e.changes) for e in self._entries]

    async def undo(self, n: int = 1) -> list[Undone]:
        """Revert the last ``n`` recorded calls, newest first; returns what was done to each file."""
        done: list[Undone] = []
        for _ in range(min(n, len(self._entries))):
            entry = self._entries.pop()
            for change in reversed(entry.changes):
                done.append(await self._revert(change))
        return done

    async def _revert(self, change: FileChange) -> Undone:
        current = await self._current(change.path)
        overwrote = current != change.after
        if change.before is None:
            if current is not None:
                await anyio.Path(change.path).unlink(missing_ok=True)
            return Undone(change.path, "deleted", overwrote)
        await self._fs.write_text(change.path, change.before)
        return Undone(change.path, "recreated" if change.after is None else "restored", overwrote)

    async def _current(self, path: Path) -> str | None:
        try:
            return await self._fs.read_text(path)
        except FileNotFoundError:
            return None
