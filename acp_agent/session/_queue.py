"""A session's turns, one at a time, in the order their prompts came.

A ``session/prompt`` that arrives while a turn runs waits here (claude-agent-acp and codex-acp queue it
too) and runs when the turns before it have ended, with its own ``PromptResponse``. The session is handed
from one turn to the next without a gap: a ``session/cancel`` always meets a running turn (the running
one's, never a queued prompt's), so one cancel ends one turn and leaves the queue; a client that wants the
queued prompts gone cancels again as each runs, or sends ``$/cancel_request`` for a queued one (it leaves
the queue and is answered ``cancelled`` without running).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import anyio

__all__ = ["TurnQueue"]


@dataclass(eq=False, slots=True)
class _Waiting:
    ready: anyio.Event
    left: bool = False


class TurnQueue:
    """Who runs a turn of the session now (``busy``), and the prompts waiting for their turn."""

    def __init__(self) -> None:
        self._running: anyio.Event | None = None
        self._waiting: deque[_Waiting] = deque()

    @property
    def busy(self) -> bool:
        return self._running is not None

    @property
    def waiting(self) -> int:
        """How many prompts wait for their turn."""
        return sum(1 for w in self._waiting if not w.left)

    async def enter(self, on_leave: Callable[[Callable[[], None] | None], None] | None = None) -> bool:
        """Wait until this caller's turn: True when it runs now (``turn_ended`` must follow), False when it
        left the queue first (``leave_all``, or the callback given to ``on_leave``: a ``$/cancel_request``
        of the queued prompt)."""
        if self._running is None:
            self._running = anyio.Event()
            return True
        waiting = _Waiting(anyio.Event())
        self._waiting.append(waiting)

        def leave() -> None:
            waiting.left = True
            waiting.ready.set()

        if on_leave is not None:
            on_leave(leave)
        try:
            await waiting.ready.wait()
        except BaseException:
            if waiting in self._waiting:
                self._waiting.remove(waiting)
            elif not waiting.left:  # handed the turn as it was cancelled: pass it on
                self.turn_ended()
            raise
        finally:
            if on_leave is not None:
                on_leave(None)
        if waiting.left:
            if waiting in self._waiting:
                self._waiting.remove(waiting)
            return False
        return True

    def turn_ended(self) -> None:
        """The running turn ended: the next waiting prompt runs, or the session is idle."""
        done = self._running
        self._running = None
        while self._waiting:
            waiting = self._waiting.popleft()
            if not waiting.left:
                self._running = anyio.Event()
                waiting.ready.set()
                break
        if done is not None:
            done.set()

    def leave_all(self) -> None:
        """Every waiting prompt leaves the queue (the session closes)."""
        for waiting in self._waiting:
            waiting.left = True
            waiting.ready.set()
        self._waiting.clear()

    async def wait_idle(self) -> None:
        """Until no turn runs (the queued ones included)."""
        while self._running is not None:
            await self._running.wait()
