"""The session closes under way, each owned here: every close the agent starts (a request's, a session
replaced by a second load's in the background, shutdown's) is counted from the moment it begins, and
shutdown (``AcpAgent.aclose``) waits for them all, so none is cut off with its sandbox folder and last
writes left behind; a delete (or load) of an id waits for that id's closes."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from ._session import Session

__all__ = ["Closes"]


class Closes:
    """The session closes under way, each with the id of its session (two at once for one id: a session
    two loads opened, and the one that replaced it)."""

    def __init__(self) -> None:
        self._under_way: dict[anyio.Event, str] = {}

    def begin(self, session: Session) -> Callable[[], Coroutine[Any, Any, None]]:
        """Count the close of ``session`` as under way from now (before a background task that runs it has
        started, so shutdown cannot miss it); the function returned runs it."""
        done = anyio.Event()
        self._under_way[done] = session.id

        async def run() -> None:
            try:
                await session.close()
            finally:
                del self._under_way[done]
                done.set()

        return run

    async def close(self, session: Session) -> None:
        await self.begin(session)()

    async def wait(self, session_id: str | None = None) -> None:
        """Until the closes of ``session_id`` (None: every close) under way now, and any begun while
        waiting, have finished."""
        while pending := [d for d, i in self._under_way.items() if session_id in (None, i)]:
            for done in pending:
                await done.wait()
