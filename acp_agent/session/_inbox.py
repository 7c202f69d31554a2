"""The steering messages of a session's turn (``_session/steering``, answered ``injected``) until the
model reads them: none is ever dropped.

A message goes into the harness's running turn, which lands it at its next step boundary (a turn about to
end takes one more step for it). One that came while no turn of the run was running (the turn still being
prepared, or already ended and being written) waits here and lands when the run's turn starts. What the
turn ended without landing (it was cancelled, failed or ended first: the harness's ``Ended.queued``, and
what waited here) becomes the next turn (``next_turn``), ahead of any queued prompt since it belongs to
the turn that ended, and after a cancel too, as a queued prompt runs after one (``Session._turn``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness import Ended, Message, Run

__all__ = ["SteeringInbox"]

log = logging.getLogger(__name__)


class SteeringInbox:
    """The steering messages not yet in a running turn of the session's run."""

    def __init__(self) -> None:
        self._waiting: list[Message] = []
        self._seen: Ended | None = None  # the run's last end whose left-overs were taken
        self.held: Message | None = None
        """A prompt's follow-up turn, started once that prompt's answer is on the wire (``Session.answered``):
        its updates must not reach the client before the answer that ends the turn before it."""

    def add(self, message: Message, run: Run | None) -> None:
        """Into ``run``'s turn when it runs, else kept for the next one to start."""
        if run is not None and run.is_running():
            run.interject(message)
        else:
            self._waiting.append(message)

    def into(self, run: Run) -> None:
        """The run's turn started: what waited lands at its first step boundary."""
        while self._waiting:
            run.interject(self._waiting.pop(0))

    def next_turn(self, run: Run | None, *, closed: bool) -> Message | None:
        """The turn that just ended: the first message it did not land (the next turn's prompt; the others
        land as that turn starts), None when it took them all or the session ``closed`` (logged)."""
        left, self._waiting = self._waiting, []
        ended = run.ended() if run is not None else None
        if ended is not None and ended is not self._seen:
            self._seen = ended
            left = [*ended.queued, *left]  # (those came while it ran: before the ones kept here)
        if not left:
            return None
        if closed:
            log.warning("%d steering message(s) not delivered: the session closed", len(left))
            return None
        self._waiting = left[1:]
        return left[0]
