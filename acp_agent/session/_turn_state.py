"""The ``_meta.turn`` marker of a turn that no prompt answer ends: a steering message's own turn
(``startedNewTurn``) or the follow-up a turn left (``_inbox``). ACP v1 has no session state (v2 reports it
as a ``state_update``), so the turn's first and last updates are ``session_info_update``s carrying v2's
state shape in ``_meta``: ``{"turn": {"state": "running"}}`` before its first update, ``{"turn":
{"state": "idle", "stopReason": ...}}`` after its last (``"error"`` with the error's ``message`` when it
failed). A ``session/prompt`` answer a follow-up turn comes after carries ``{"turn": {"state":
"running"}}`` in its ``_meta``: the session is not idle when the answer arrives. A client that does not
know the key ignores it (the update has no title: nothing changes; Zed reads only ``title``)."""

from __future__ import annotations

from typing import Any, Literal

from ..protocol.models import SessionInfoUpdate

__all__ = ["answer_meta", "turn_state"]


def answer_meta(follows: bool) -> dict[str, Any] | None:
    """The ``_meta`` of a prompt answer: ``{"turn": {"state": "running"}}`` when a turn ``follows`` it."""
    return {"turn": {"state": "running"}} if follows else None


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
