"""``Journal``: every change the file tools made, grouped by call, so a session can undo the last ones.

Undoing is two steps: ``plan_undo`` says what reverting the last calls would do to each file (and what
stands in the way), ``apply`` does it. A path is re-resolved through the root at both steps: a file whose
path now passes through a symlink (``sub/`` replaced by a link), or lies outside the root, is skipped,
never written or deleted; and the write or delete itself opens the path beneath the root without
following a symlink (``harness.beneath``), so a link swapped in after that check is refused too. The host asks the user before applying a plan that overwrites changes made
since the edit (``Revert.changed_since``). ``undo`` is both steps without asking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread

from ..beneath import real_path
from ._fs import FileSystem, LocalFileSystem
from ._root import Root

__all__ = ["FileChange", "Journal", "Revert", "UndoPlan", "Undone"]

MAX_JOURNAL_BYTES = 64 * 1024 * 1024  # the texts kept for undo; the oldest calls are forgotten past it


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file's change: ``before`` is None for a created file, ``after`` None for a deleted one."""

    path: Path
    before: str | None
    after: str | None

    @property
    def size(self) -> int:
        return len(self.before or "") + len(self.after or "")


@dataclass(frozen=True, slots=True)
class Undone:
    """What ``undo`` did to one file: ``action`` is ``restored``, ``deleted``, ``recreated``,
    ``skipped`` or ``failed`` (``problem`` says why).

    ``overwrote`` is True when the file had changed since the tool wrote it (those later changes are lost).
    """

    path: Path
    action: str
    overwrote: bool = False
    problem: str | None = None


@dataclass(frozen=True, slots=True)
class Revert:
    """What undoing will do to one file. ``blocked``: why it cannot be done (it will be skipped);
    ``changed_since``: the file is not what the tool left, so undoing loses the later changes."""

    change: FileChange
    action: str
    changed_since: bool
    blocked: str | None = None

    @property
    def path(self) -> Path:
        return self.change.path


@dataclass(frozen=True, slots=True)
class UndoPlan:
    """The last ``calls`` recorded calls (labels, newest first) and what undoing them does, per file."""

    labels: tuple[str, ...]
    reverts: tuple[Revert, ...]
    calls: int


@dataclass(frozen=True, slots=True)
class _Entry:
    label: str
    changes: tuple[FileChange, ...]


class Journal:
    """Records changes per tool call (``record``); ``undo(n)`` reverts the last ``n`` calls' changes.

    ``root``: the directories the changes may touch (undo re-checks every path through it); without one
    only the symlink check applies."""

    def __init__(
        self,
        fs: FileSystem | None = None,
        *,
        root: Root | None = None,
        limit: int = 200,
        max_bytes: int = MAX_JOURNAL_BYTES,
    ) -> None:
        self._disk = LocalFileSystem(root)  # deletions (and the default file system)
        self._fs: FileSystem = fs or self._disk
        self._root = root
        self._entries: list[_Entry] = []
        self._limit = limit
        self._max_bytes = max_bytes
        self._bytes = 0

    def record(self, changes: Sequence[FileChange], label: str = "") -> None:
        if not changes:
            return
        entry = _Entry(label, tuple(changes))
        self._entries.append(entry)
        self._bytes += sum(c.size for c in entry.changes)
        while len(self._entries) > 1 and (len(self._entries) > self._limit or self._bytes > self._max_bytes):
            dropped = self._entries.pop(0)
            self._bytes -= sum(c.size for c in dropped.changes)

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self) -> list[tuple[str, tuple[FileChange, ...]]]:
        """The recorded calls, oldest first: ``(label, changes)``."""
        return [(e.label, e.changes) for e in self._entries]

    async def plan_undo(self, n: int = 1) -> UndoPlan:
        """What reverting the last ``n`` recorded calls would do (nothing is changed yet)."""
        chosen = self._entries[len(self._entries) - min(n, len(self._entries)) :]
        reverts: list[Revert] = []
        for entry in reversed(chosen):
            for change in reversed(entry.changes):
                reverts.append(await self._plan(change))
        return UndoPlan(tuple(e.label for e in reversed(chosen)), tuple(reverts), len(chosen))

    async def apply(self, plan: UndoPlan) -> list[Undone]:
        """Carry out ``plan`` and forget its calls; each path is checked again just before it is touched."""
        del self._entries[len(self._entries) - plan.calls :]
        self._bytes = sum(c.size for e in self._entries for c in e.changes)
        done: list[Undone] = []
        for revert in plan.reverts:
            problem = revert.blocked or await anyio.to_thread.run_sync(self._problem, revert.path)
            if problem is not None:
                done.append(Undone(revert.path, "skipped", revert.changed_since, problem))
                continue
            try:
                done.append(await self._revert(revert))
            except OSError as e:
                done.append(Undone(revert.path, "failed", revert.changed_since, str(e)))
        return done

    async def undo(self, n: int = 1) -> list[Undone]:
        """Revert the last ``n`` recorded calls, newest first, without asking; what was done to each file."""
        return await self.apply(await self.plan_undo(n))

    async def _plan(self, change: FileChange) -> Revert:
        action = "deleted" if change.before is None else "recreated" if change.after is None else "restored"
        problem = await anyio.to_thread.run_sync(self._problem, change.path)
        if problem is not None:
            return Revert(change, action, False, problem)
        try:
            current = await self._current(change.path)
        except OSError:  # cannot be read now: not what the tool left
            return Revert(change, action, True)
        return Revert(change, action, current != change.after)

    def _problem(self, path: Path) -> str | None:
        """Why ``path`` may not be touched now (a link on its way, outside the root), else None. Blocking."""
        try:
            real = real_path(path)
        except OSError:
            return "its path was changing while it was checked (a link on the way replaced); nothing was written there"
        if real != path:
            return f"its path now leads through a symbolic link (to {real}); nothing was written there"
        if self._root is not None and not self._root.contains(real):
            return "it is outside the project"
        return None

    async def _revert(self, revert: Revert) -> Undone:
        change = revert.change
        if change.before is None:
            await self._disk.remove(change.path)
            return Undone(change.path, "deleted", revert.changed_since)
        await self._fs.write_text(change.path, change.before)
        return Undone(change.path, revert.action, revert.changed_since)

    async def _current(self, path: Path) -> str | None:
        try:
            return await self._fs.read_text(path)
        except FileNotFoundError:
            return None
