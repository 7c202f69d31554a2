"""A ``session/delete`` runs alone on its session: it waits for the requests using that id under way (a load, a
resume, a fork, a title or archive change), and those that come while it runs wait for it, then find the
session gone.

Without this, a delete that ran while a reopen was setting the session up (its metadata read, the session not
yet live) removed the folder and the reopen then wrote the metadata back: the session came back, empty, and
stayed listed. A reopen read while a delete waited for the session's close found the metadata still there and
opened it again; a fork could copy a folder being removed, and a title or archive change write the metadata
back. Users of one id still run beside each other (of two loads, the later replaces the earlier).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio

__all__ = ["Deletes"]


class _Id:
    """One session id's requests using it under way, and its delete if one runs."""

    __slots__ = ("delete", "idle", "users", "waiting")

    def __init__(self) -> None:
        self.users = 0
        self.idle: anyio.Event | None = None  # set when ``users`` falls to 0, for a delete that waits
        self.delete: anyio.Event | None = None  # set when the delete under way has finished
        self.waiting = 0  # users (or another delete) waiting for that delete


class Deletes:
    """The requests using a session and the deletes under way, by session id (the module docstring)."""

    def __init__(self) -> None:
        self._ids: dict[str, _Id] = {}

    @asynccontextmanager
    async def using(self, session_id: str) -> AsyncGenerator[None]:
        """Held while a request uses ``session_id`` (a load or resume opens it, a fork copies it, a title or
        archive change writes its metadata); waits for a delete under way."""
        state = await self._after_delete(session_id)
        state.users += 1
        try:
            yield
        finally:
            state.users -= 1
            if not state.users and state.idle is not None:
                state.idle.set()
                state.idle = None
            self._drop_if_unused(session_id, state)

    @asynccontextmanager
    async def deleting(self, session_id: str) -> AsyncGenerator[None]:
        """Held while ``session_id`` is deleted: once its users under way are done, and before any that
        come meanwhile (they wait, then find it gone); a second delete of it waits for the first."""
        state = await self._after_delete(session_id)
        done = state.delete = anyio.Event()
        try:
            while state.users:
                idle = state.idle = state.idle or anyio.Event()
                await idle.wait()
            yield
        finally:
            state.delete = None
            done.set()
            self._drop_if_unused(session_id, state)

    async def _after_delete(self, session_id: str) -> _Id:
        """The id's state once no delete of it runs (waiting for the one under way, if any)."""
        while True:
            state = self._ids.setdefault(session_id, _Id())
            if state.delete is None:
                return state
            state.waiting += 1
            try:
                await state.delete.wait()
            finally:
                state.waiting -= 1
                self._drop_if_unused(session_id, state)

    def delete_waits(self, session_id: str) -> bool:
        """Whether a delete of ``session_id`` waits for users under way (tests)."""
        state = self._ids.get(session_id)
        return state is not None and state.delete is not None and state.users > 0

    def use_waits(self, session_id: str) -> bool:
        """Whether a user (or a second delete) of ``session_id`` waits for its delete (tests)."""
        state = self._ids.get(session_id)
        return state is not None and state.waiting > 0

    def tracked(self) -> int:
        """How many session ids have a request using them or a delete under way (tests: none once done)."""
        return len(self._ids)

    def _drop_if_unused(self, session_id: str, state: _Id) -> None:
        if (
            not state.users
            and state.delete is None
            and not state.waiting
            and self._ids.get(session_id) is state
        ):
            del self._ids[session_id]
