"""How a turn ended, in ACP's terms: the prompt's stop reason (or the error a failed turn answers with) and
what a replay shows of a turn that did not end normally."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..protocol.errors import INTERNAL_ERROR, RpcError
from . import _harness
from ._failures import failure_message

if TYPE_CHECKING:
    from harness import Ended, Message, Run

__all__ = ["kind_of", "replace_text", "stop_reason", "unfinished"]

log = logging.getLogger("acp_agent.session._session")


def unfinished(run: Run, misuse: BaseException | None) -> tuple[str, str | None] | None:
    """``("cancelled", None)`` or ``("failed", message)`` for a turn that did not end normally."""
    ended = run.ended()
    if misuse is not None:
        return "failed", f"internal error: {misuse}"
    if ended is None or ended.reason in (_harness.EndReason.CANCELLED, _harness.EndReason.INTERRUPTED):
        return "cancelled", None
    if ended.reason is _harness.EndReason.FAILED:
        return "failed", failure_message(kind_of(ended, "model_error"), ended.error)
    return None


def replace_text(message: Message, text: str) -> Message:
    """The prompt with its text replaced by ``text`` (an expanded prompt command); images kept."""
    kept = [p for p in message.parts if not isinstance(p, _harness.Text)]
    return _harness.Message(message.role, (_harness.Text(text), *kept), meta=message.meta)


def stop_reason(ended: Ended | None, misuse: BaseException | None = None) -> str:
    if misuse is not None and (ended is None or ended.reason is not _harness.EndReason.CANCELLED):
        raise RpcError(
            INTERNAL_ERROR,
            f"internal error: {misuse}",
            {"errorKind": kind_of(ended, _harness.ErrorKind.MODEL_ERROR)},
        )
    if ended is None:
        return "cancelled"
    reason = ended.reason
    if reason is _harness.EndReason.DONE:
        if ended.finish is _harness.FinishReason.LENGTH:
            return "max_tokens"
        if ended.finish is _harness.FinishReason.REFUSAL:
            return "refusal"
        return "end_turn"
    if reason is _harness.EndReason.STOPPED:
        return "max_turn_requests"
    if reason in (_harness.EndReason.CANCELLED, _harness.EndReason.INTERRUPTED):
        return "cancelled"
    if reason is _harness.EndReason.FAILED:
        kind = kind_of(ended, _harness.ErrorKind.MODEL_ERROR)
        raise RpcError(INTERNAL_ERROR, failure_message(kind, ended.error), {"errorKind": kind})
    log.warning("turn ended %s, which this agent does not handle yet; answering end_turn", reason)
    return "end_turn"


def kind_of(ended: Ended | None, default: Any) -> str:
    kind = ended.error_kind if ended is not None and ended.error_kind is not None else default
    return str(getattr(kind, "value", kind))
