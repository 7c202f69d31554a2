"""What a session's turns write, and when.

The messages of each complete step are appended to the transcript in the ``StepEnded`` handler, i.e. before
the next step begins; a cancelled or failed step is never written (the harness drops it). What a step's start
adds (the prompt) is written beside the step's model request, not before it (``_durable.WriteBehind``), and
joined before the session's next write.

A turn's last writes (its messages, what it showed, a new title) are written and flushed before the prompt
is answered, so a kill of the process right after the answer loses nothing and a ``session/load`` replays
them. Their fsync (which guards against a power loss only, and costs milliseconds) comes after the answer,
in the background and grouped with the writes of the turns that follow at once (``after_answer``,
``_durable.GROUP_COMMIT_S``), and ``close`` (so the process's exit too) does it without that delay. A step's
writes within the turn are flushed the same way and fsync'd in the background alike: neither the model
request nor the stream waits for the disk. The metadata's ``updatedAt`` alone is written then too (a rename
is several journal operations, each of which can wait for another process's fsync): a kill in between
leaves the previous ``updatedAt``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from . import _harness
from ._durable import Unsynced, WriteBehind

if TYPE_CHECKING:
    from harness import Message, Run

    from ._replay import ShownLog
    from ._store import SessionMeta, SessionStore
    from ._threads import SubagentThreads

__all__ = ["PERSIST_TIMEOUT", "SessionGone", "TurnWrites"]

PERSIST_TIMEOUT = 30.0


class SessionGone(Exception):
    """The session's folder was removed outside this agent while it was live (another process deleted the
    session): its writes stop, none of it is written again."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id}: its folder was removed outside this agent")
        self.session_id = session_id


class _Owner(Protocol):
    meta: SessionMeta


class TurnWrites:
    """The writes of ``owner``'s turns (the module docstring): its transcript, what it showed, its
    threads' lines and its metadata."""

    def __init__(
        self,
        owner: _Owner,
        store: SessionStore,
        spawn: Callable[[Callable[[], Awaitable[None]]], object] | None,
        shown: ShownLog,
        threads: SubagentThreads | None,
        persisted: int,
    ) -> None:
        self._owner = owner
        self._store = store
        session_id = owner.meta.id
        self._transcript: _harness.JsonlTranscript = _harness.JsonlTranscript(
            store.transcript_path(session_id)
        )
        self._persisted = persisted
        self.unsynced = Unsynced(session_id, store, spawn)
        self._behind = WriteBehind(spawn)
        self.saved_title = owner.meta.title
        """The title on disk: a different one is saved with the turn's last writes."""
        self._shown = shown
        self._threads = threads

    async def last(self, run: Run) -> None:
        """The turn's last writes, before its answer (shielded, bounded)."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(PERSIST_TIMEOUT):
            await self.persist(run, final=True)

    async def persist(self, run: Run, *, final: bool, behind: bool = False) -> None:
        """Write what the turn added; the ``final`` writes, which the prompt's answer waits for, are
        flushed and left to ``sync`` to fsync. ``behind``: written while the turn goes on (a step's
        start: the prompt goes to disk as the model request goes out), joined before the next write."""
        await self._behind.join()
        messages = run.messages()
        new = messages[self._persisted :]
        self._persisted = len(messages)
        lines = self._threads.take_lines() if self._threads is not None else {}
        shown = self._shown.take()
        if final:
            owner = self._owner
            owner.meta = owner.meta.touched()
            titled = owner.meta.title != self.saved_title  # a new title is saved with the last writes
            await self._write(new, lines, shown, owner.meta if titled else None, final=True)
            self.saved_title = owner.meta.title
        elif behind:
            await self._behind.start(lambda: self._write(new, lines, shown, None))
        else:
            await self._write(new, lines, shown, None)

    async def _write(
        self,
        new: Sequence[Message],
        lines: Mapping[str, list[dict[str, Any]]],
        shown: list[dict[str, Any]],
        meta: SessionMeta | None,
        *,
        final: bool = False,
    ) -> None:
        async with self._in_folder() as session_id:
            if new:
                await self._transcript.append(new, sync=False)
                self.unsynced.add((self._transcript.path,))
            for thread, thread_lines in lines.items():
                await self._store.append_thread(session_id, thread, thread_lines)
            if final:  # the metadata not written here (no new title) is saved by the answer's fsync
                self.unsynced.meta_unsaved = meta is None
                self.unsynced.add(await self._store.write_flushed(session_id, shown, meta))
                return
            self.unsynced.add(await self._store.write_flushed(session_id, shown))
        if new:
            self._owner.meta = self._owner.meta.touched()
        self.unsynced.soon(lambda: self._owner.meta)

    async def outside_turn(self, write: Callable[[], Awaitable[None]]) -> None:
        """A write of the session's between turns (a slash command's reply, the user's title), under the
        same rule as a turn's (``_in_folder``)."""
        async with self._in_folder():
            await write()

    @contextlib.asynccontextmanager
    async def _in_folder(self) -> AsyncGenerator[str]:
        """Around a write into the session's folder (yields the session's id): ``SessionGone`` once the
        folder was removed outside this agent, then or before (no write makes it again: each needs it)."""
        session_id = self._owner.meta.id
        if self.unsynced.gone:
            raise SessionGone(session_id)
        try:
            yield session_id
        except FileNotFoundError:
            if await anyio.Path(self._store.directory(session_id)).is_dir():
                raise
            self.unsynced.gone = True
            raise SessionGone(session_id) from None

    async def after_answer(self) -> None:
        """Once the prompt's answer is out: ``sync`` in the background, grouped (``_durable``); now when
        the session has no task group to run it in."""
        if not self.unsynced.soon(lambda: self._owner.meta):
            await self.sync()

    async def sync(self) -> None:
        """Save the metadata's ``updatedAt`` and fsync what the turns wrote without it, now (``close``;
        ``_durable``)."""
        await self.unsynced.sync(lambda: self._owner.meta)
