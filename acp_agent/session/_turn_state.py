"""The ``_meta.turn`` marker of a turn that no prompt answer ends: a steering message's own turn
(``startedNewTurn``) or the follow-up a turn left (``_inbox``). ACP v1 has no session state (v2 reports it
as a ``state_update``), so such a turn is bracketed by ``session_info_update``s carrying v2's state shape
in ``_meta``: ``{"turn": {"state": "running"}}`` before its first update, ``{"turn": {"state": "idle",
"stopReason": ...}}`` after its last (``"error"``, with the error's ``message``, when it failed). A
follow-up's running marker comes before the answer of the turn it follows: the session does not go idle
in between, and a client learns it before it sees the answer. A client that does not know the key
ignores it: the update has no title, so nothing changes (Zed reads only ``title``)."""

from __future__ import annotations

from typing import Any, Literal

from ..protocol.models import SessionInfoUpdate

__all__ = ["turn_state"]


def turn_state(
    state: Literal["running", "idle"], stop: str | None = None, error: str | None = None
) -> SessionInfoUpdate:
    """The marker update: the turn starts (``running``), or ended with ``stop`` (``idle``)."""
    turn: dict[str, Any] = {"state": state}
    if stop is not None:
        turn["stopReason"] = stop
    if error is not None:
        turn["message"] = error
    update = SessionInfoUpdate()
    update.field_meta = {"turn": turn}
    return update
