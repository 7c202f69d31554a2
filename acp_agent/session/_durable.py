"""A session's writes that are flushed but not yet fsync'd, and their fsync (``_session``'s docstring says
when): a kill of the process loses nothing once a write returned; the fsync, which guards against a power
loss only and costs milliseconds (more when another process's fsync holds the disk's journal), comes after
the prompt's answer, or in the background during a turn, one at a time; ``sync`` waits for one under way."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from . import _harness

if TYPE_CHECKING:
    from ._store import SessionMeta, SessionStore

__all__ = ["Unsynced", "WriteBehind"]

log = logging.getLogger(__name__)

_SYNC_TIMEOUT = 30.0


class Unsynced:
    """The files a session wrote without fsync'ing them, and whether its metadata awaits its save."""

    def __init__(
        self,
        session_id: str,
        store: SessionStore,
        spawn: Callable[[Callable[[], Awaitable[None]]], object] | None,
    ) -> None:
        self._id = session_id
        self._store = store
        self._spawn = spawn
        self._paths: set[Path] = set()
        self.meta_unsaved = False
        """The metadata changed (``updatedAt`` only) and is saved at the next ``sync``."""
        self._scheduled = False
        self._lock = anyio.Lock()

    @property
    def lock(self) -> anyio.Lock:
        """Held while a ``sync`` runs (tests look at who waits for it)."""
        return self._lock

    def add(self, paths: Iterable[Path]) -> None:
        self._paths.update(paths)

    def soon(self, meta: Callable[[], SessionMeta]) -> None:
        """``sync`` in the background (a no-op when one is scheduled; without a task group to run it in,
        the next ``sync`` does)."""
        spawn = self._spawn
        if spawn is None or self._scheduled or not (self._paths or self.meta_unsaved):
            return
        self._scheduled = True

        async def run() -> None:
            self._scheduled = False  # what is written from here on schedules another
            try:
                await self.sync(meta)
            except Exception:
                log.exception("session %s: syncing its files failed", self._id)

        spawn(run)

    async def sync(self, meta: Callable[[], SessionMeta]) -> None:
        """Save the metadata (``meta()``, fsync'd) when it awaits it and fsync the files: shielded,
        bounded, one at a time."""
        async with self._lock:
            paths, self._paths = sorted(self._paths), set()
            save, self.meta_unsaved = self.meta_unsaved, False
            if not paths and not save:
                return
            with anyio.CancelScope(shield=True), anyio.move_on_after(_SYNC_TIMEOUT) as scope:
                if save:
                    await self._store.save_meta(meta())
                if paths:
                    await anyio.to_thread.run_sync(_harness.fsync_paths, paths)
            if scope.cancelled_caught:
                log.warning(
                    "session %s: fsync of %d files took over %g s", self._id, len(paths), _SYNC_TIMEOUT
                )


class WriteBehind:
    """One write that runs while the turn goes on (a step's first writes: the model request does not wait
    for them), joined before the session's next write; its failure is raised there."""

    def __init__(self, spawn: Callable[[Callable[[], Awaitable[None]]], object] | None) -> None:
        self._spawn = spawn
        self._done: anyio.Event | None = None
        self._error: Exception | None = None

    async def start(self, write: Callable[[], Awaitable[None]]) -> None:
        """Run ``write`` in the background (shielded, bounded); inline without a task group."""
        await self.join()
        if self._spawn is None:
            await write()
            return
        done = self._done = anyio.Event()

        async def run() -> None:
            try:
                with anyio.CancelScope(shield=True), anyio.move_on_after(_SYNC_TIMEOUT):
                    await write()
            except Exception as exc:  # raised by the next join, in the turn
                self._error = exc
            finally:
                done.set()

        self._spawn(run)

    async def join(self) -> None:
        """Until the write under way (if any) is done; raises what it failed with."""
        done = self._done
        if done is not None:
            await done.wait()
            if self._done is done:
                self._done = None
        error, self._error = self._error, None
        if error is not None:
            raise error
