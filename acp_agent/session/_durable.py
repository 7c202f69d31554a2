"""A session's writes that are flushed but not yet fsync'd, and their fsync (``_turn_writes``'s docstring says
when): a kill of the process loses nothing once a write returned; the fsync, which guards against a power
loss only and costs milliseconds (more when another process's fsync holds the disk's journal), comes in the
background, one at a time, ``GROUP_COMMIT_S`` after the write that asked for it, with whatever was written
meanwhile (a group commit: turns answered back to back, or a prompt queued behind the turn, share one fsync
and its metadata save, which would otherwise run beside the next turn's start, on the same two cores; it
cost a cancel mid-stream 0.6 ms at its median). A direct ``sync`` (a session's close, so the process's exit)
does not wait for that delay, and waits for a sync under way."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

import anyio
import anyio.to_thread

from . import _harness

if TYPE_CHECKING:
    from ._store import SessionMeta, SessionStore

__all__ = ["GROUP_COMMIT_S", "Unsynced", "WriteBehind"]

log = logging.getLogger(__name__)

_SYNC_TIMEOUT = 30.0

GROUP_COMMIT_S: Final = 0.1
"""How long a background sync waits for more writes to join it: what a power loss (not a kill) may take
back beyond the fsync's own time."""


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
        self.gone = False
        """The session's folder was removed outside this agent (``_turn_writes.SessionGone``): nothing is
        saved or fsync'd any more (a save would make the folder again)."""
        self._scheduled = False
        self._waiting: anyio.CancelScope | None = None  # the scheduled sync's wait for more writes
        self._lock = anyio.Lock()

    @property
    def lock(self) -> anyio.Lock:
        """Held while a ``sync`` runs (tests look at who waits for it)."""
        return self._lock

    def add(self, paths: Iterable[Path]) -> None:
        self._paths.update(paths)

    def soon(self, meta: Callable[[], SessionMeta]) -> bool:
        """``sync`` in the background, ``GROUP_COMMIT_S`` from now (a no-op when one is scheduled); False
        when there is no task group to run it in (the caller syncs, or the next ``sync`` does)."""
        spawn = self._spawn
        if spawn is None:
            return False
        if self._scheduled or not (self._paths or self.meta_unsaved):
            return True
        self._scheduled = True
        waiting = self._waiting = anyio.CancelScope()

        async def run() -> None:
            with waiting:  # cancelled by a direct ``sync`` (a close): it takes this one's writes
                await anyio.sleep(GROUP_COMMIT_S)
            self._waiting = None
            self._scheduled = False  # what is written from here on schedules another
            try:
                await self.sync(meta)
            except Exception:
                log.exception("session %s: syncing its files failed", self._id)

        spawn(run)
        return True

    async def sync(self, meta: Callable[[], SessionMeta]) -> None:
        """Save the metadata (``meta()``, fsync'd) when it awaits it and fsync the files: shielded,
        bounded, one at a time; now, a scheduled one's wait cut short."""
        if self._waiting is not None:
            self._waiting.cancel()
        async with self._lock:
            paths, self._paths = sorted(self._paths), set()
            save, self.meta_unsaved = self.meta_unsaved, False
            if self.gone or (not paths and not save):
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
            if not done.is_set():
                await done.wait()
            if self._done is done:
                self._done = None
        error, self._error = self._error, None
        if error is not None:
            raise error
