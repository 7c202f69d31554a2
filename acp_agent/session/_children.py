"""The session's side of its sub-agents (``_threads``): what their threads showed goes out on the
connection, a child waits on the user or runs again (``requires_action`` / ``running``), and a client
cancels one child alone (``session/cancel`` with the child's id: ``Run.cancel_call``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..protocol.models import SessionNotification

if TYPE_CHECKING:
    from harness import Run

    from ..protocol.connection import Connection
    from ._store import SessionMeta
    from ._threads import SubagentThreads

__all__ = ["SubagentSide"]


class SubagentSide:
    """Mixed into ``Session``: the parts of it its sub-agents' threads need."""

    meta: SessionMeta
    _threads: SubagentThreads | None
    _run: Run | None
    _conn: Connection

    def cancel_child(self, child_id: str) -> bool:
        """``session/cancel`` of an announced sub-agent's session: that sub-agent alone; False when
        ``child_id`` is no running child the client may cancel."""
        threads, run = self._threads, self._run
        return threads is not None and run is not None and threads.cancel(child_id, run)

    def child_session(self, call_id: str) -> str | None:
        """The session of the announced child that call ``call_id`` runs (its permission requests and
        questions go there)."""
        return self._threads.announced(call_id) if self._threads is not None else None

    async def child_waits(self, call_id: str, waiting: bool) -> None:
        """The child of call ``call_id`` waits on the user (``requires_action``) or runs again."""
        if self._threads is not None and self._threads.waiting(call_id, waiting):
            await self._send_threads()

    async def _send_threads(self) -> None:
        """What the turn's sub-agents showed in their threads since the last time: the parent's
        ``subagent_update``s first (a child is announced before its traffic), then each thread's updates."""
        if self._threads is None:
            return

        parent = self.meta.id
        for update in self._threads.take_parent_updates():
            await self._conn.notify("session/update", {"sessionId": parent, "update": update})
        for thread, update in self._threads.take_updates():
            await self._conn.notify("session/update", SessionNotification(session_id=thread, update=update))
