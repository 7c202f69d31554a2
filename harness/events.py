"""The typed event stream of a turn. Each event has ``turn`` and ``parent`` (the tool call id of the run
it comes from when nested, else None). ``to_dict()`` gives ``{"type": "text_delta", ...}`` as one JSON
line; ``from_dict()`` rebuilds the typed event."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ._errors import ToolFailure
from ._kinds import Delivery, EndReason, FinishReason
from ._messages import Message
from ._pause import Decision, Pending
from ._tools import Result
from ._usage import Usage

__all__ = [
    "Event",
    "InputRequested",
    "Interjected",
    "MessageEnded",
    "MessageResumed",
    "MessageStarted",
    "ReasoningDelta",
    "StepEnded",
    "StepStarted",
    "TextDelta",
    "ToolCallReady",
    "ToolCallStarted",
    "ToolDecided",
    "ToolEnded",
    "ToolInputDelta",
    "ToolProgress",
    "TurnEnded",
    "TurnStarted",
    "error_to_dict",
    "from_dict",
]


def error_to_dict(error: BaseException | None) -> dict[str, str] | None:
    if error is None:
        return None
    if isinstance(error, ToolFailure):
        return {"class": error.class_name, "message": error.message}
    return {"class": type(error).__name__, "message": str(error)}


def _error_from(data: Any) -> ToolFailure | None:
    if data is None:
        return None
    return ToolFailure(str(data.get("class", "Exception")), str(data.get("message", "")))


@dataclass(frozen=True, slots=True)
class TurnStarted:
    type: ClassVar[str] = "turn_started"
    turn: int
    parent: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "turn": self.turn, "parent": self.parent}


@dataclass(frozen=True, slots=True)
class TurnEnded:
    type: ClassVar[str] = "turn_ended"
    turn: int
    parent: str | None
    reason: EndReason
    usage: Usage
    error: BaseException | None = None
    finish: FinishReason | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "turn": self.turn,
            "parent": self.parent,
            "reason": self.reason.value,
            "usage": self.usage.to_dict(),
            "error": error_to_dict(self.error),
            "finish": self.finish.value if self.finish is not None else None,
        }


@dataclass(frozen=True, slots=True)
class StepStarted:
    """``n`` counts the steps of the turn from 1; ``n = 0`` runs the resumed calls of a turn of answers."""

    type: ClassVar[str] = "step_started"
    turn: int
    parent: str | None
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "turn": self.turn, "parent": self.parent, "n": self.n}


@dataclass(frozen=True, slots=True)
class StepEnded:
    type: ClassVar[str] = "step_ended"
    turn: int
    parent: str | None
    n: int

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "turn": self.turn, "parent": self.parent, "n": self.n}


@dataclass(frozen=True, slots=True)
class MessageStarted:
    type: ClassVar[str] = "message_started"
    turn: int
    parent: str | None
    id: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "turn": self.turn, "parent": self.parent, "id": self.id}


@dataclass(frozen=True, slots=True)
class MessageResumed:
    type: ClassVar[str] = "message_resumed"
    turn: int
    parent: str | None
    id: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "turn": self.turn, "parent": self.parent, "id": self.id}


@dataclass(frozen=True, slots=True)
class Interjected:
    type: ClassVar[str] = "interjected"
    turn: int
    parent: str | None
    message: Message
    delivery: Delivery

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "turn": self.turn,
            "parent": self.parent,
            "message": self.message.to_dict(),
            "delivery": self.delivery.value,
        }


@dataclass(frozen=True, slots=True)
class TextDelta:
    type: ClassVar[str] = "text_delta"
    turn: int
    parent: str | None
    id: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "turn": self.turn, "parent": self.parent, "id": self.id, "text": self.text}


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    type: ClassVar[str] = "reasoning_delta"
    turn: int
    parent: str | None
    id: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "turn": self.turn, "parent": self.parent, "id": self.id, "text": self.text}


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    type: ClassVar[str] = "tool_call_started"
    turn: int
    parent: str | None
    id: str
    name: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "turn": self.turn, "parent": self.parent, "id": self.id, "name": self.name}


@dataclass(frozen=True, slots=True)
class ToolInputDelta:
    type: ClassVar[str] = "tool_input_delta"
    turn: int
    parent: str | None
    id: str
    json: str

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "turn": self.turn, "parent": self.parent, "id": self.id, "json": self.json}


@dataclass(frozen=True, slots=True)
class ToolCallReady:
    type: ClassVar[str] = "tool_call_ready"
    turn: int
    parent: str | None
    id: str
    name: str
    input: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "turn": self.turn,
            "parent": self.parent,
            "id": self.id,
            "name": self.name,
            "input": self.input,
        }


@dataclass(frozen=True, slots=True)
class ToolDecided:
    type: ClassVar[str] = "tool_decided"
    turn: int
    parent: str | None
    id: str
    need_id: str
    decision: Decision

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "turn": self.turn,
            "parent": self.parent,
            "id": self.id,
            "needId": self.need_id,
            "decision": self.decision.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class ToolProgress:
    type: ClassVar[str] = "tool_progress"
    turn: int
    parent: str | None
    id: str
    value: Any

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "turn": self.turn,
            "parent": self.parent,
            "id": self.id,
            "value": self.value,
        }


@dataclass(frozen=True, slots=True)
class ToolEnded:
    """A call ended: ``outcome`` is its ``Result``, or the exception it raised (the model saw its message)."""

    type: ClassVar[str] = "tool_ended"
    turn: int
    parent: str | None
    id: str
    outcome: Result | BaseException

    def to_dict(self) -> dict[str, Any]:
        outcome = self.outcome.to_dict() if isinstance(self.outcome, Result) else error_to_dict(self.outcome)
        return {
            "type": self.type,
            "turn": self.turn,
            "parent": self.parent,
            "id": self.id,
            "outcome": outcome,
        }


@dataclass(frozen=True, slots=True)
class MessageEnded:
    type: ClassVar[str] = "message_ended"
    turn: int
    parent: str | None
    id: str
    message: Message
    usage: Usage
    finish: FinishReason | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "turn": self.turn,
            "parent": self.parent,
            "id": self.id,
            "message": self.message.to_dict(),
            "usage": self.usage.to_dict(),
            "finish": self.finish.value if self.finish is not None else None,
        }


@dataclass(frozen=True, slots=True)
class InputRequested:
    type: ClassVar[str] = "input_requested"
    turn: int
    parent: str | None
    pending: tuple[Pending, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "turn": self.turn,
            "parent": self.parent,
            "pending": [p.to_dict() for p in self.pending],
        }


Event = (
    TurnStarted
    | TurnEnded
    | StepStarted
    | StepEnded
    | MessageStarted
    | MessageResumed
    | Interjected
    | TextDelta
    | ReasoningDelta
    | ToolCallStarted
    | ToolInputDelta
    | ToolCallReady
    | ToolDecided
    | ToolProgress
    | ToolEnded
    | MessageEnded
    | InputRequested
)


def _finish(v: Any) -> FinishReason | None:
    return FinishReason(v) if v is not None else None


def _outcome(v: Mapping[str, Any]) -> Result | BaseException:
    if "class" in v:
        return ToolFailure(str(v["class"]), str(v.get("message", "")))
    return Result.from_dict(v)


_BUILDERS: dict[str, Callable[[int, str | None, Mapping[str, Any]], Event]] = {
    "turn_started": lambda t, p, d: TurnStarted(t, p),
    "turn_ended": lambda t, p, d: TurnEnded(
        t,
        p,
        EndReason(d["reason"]),
        Usage.from_dict(d.get("usage") or {}),
        _error_from(d.get("error")),
        _finish(d.get("finish")),
    ),
    "step_started": lambda t, p, d: StepStarted(t, p, int(d["n"])),
    "step_ended": lambda t, p, d: StepEnded(t, p, int(d["n"])),
    "message_started": lambda t, p, d: MessageStarted(t, p, str(d["id"])),
    "message_resumed": lambda t, p, d: MessageResumed(t, p, str(d["id"])),
    "interjected": lambda t, p, d: Interjected(
        t, p, Message.from_dict(d["message"]), Delivery(d["delivery"])
    ),
    "text_delta": lambda t, p, d: TextDelta(t, p, str(d["id"]), str(d["text"])),
    "reasoning_delta": lambda t, p, d: ReasoningDelta(t, p, str(d["id"]), str(d["text"])),
    "tool_call_started": lambda t, p, d: ToolCallStarted(t, p, str(d["id"]), str(d["name"])),
    "tool_input_delta": lambda t, p, d: ToolInputDelta(t, p, str(d["id"]), str(d["json"])),
    "tool_call_ready": lambda t, p, d: ToolCallReady(
        t, p, str(d["id"]), str(d["name"]), dict(d.get("input") or {})
    ),
    "tool_decided": lambda t, p, d: ToolDecided(
        t, p, str(d["id"]), str(d["needId"]), Decision.from_dict(d["decision"])
    ),
    "tool_progress": lambda t, p, d: ToolProgress(t, p, str(d["id"]), d.get("value")),
    "tool_ended": lambda t, p, d: ToolEnded(t, p, str(d["id"]), _outcome(d["outcome"])),
    "message_ended": lambda t, p, d: MessageEnded(
        t,
        p,
        str(d["id"]),
        Message.from_dict(d["message"]),
        Usage.from_dict(d.get("usage") or {}),
        _finish(d.get("finish")),
    ),
    "input_requested": lambda t, p, d: InputRequested(
        t, p, tuple(Pending.from_dict(x) for x in d.get("pending", []))
    ),
}


def from_dict(data: Mapping[str, Any]) -> Event:
    """Rebuild a typed event from ``to_dict()`` output."""
    from ._errors import HarnessUsageError

    builder = _BUILDERS.get(str(data.get("type")))
    if builder is None:
        raise HarnessUsageError(f"unknown event type {data.get('type')!r}")
    return builder(int(data["turn"]), data.get("parent"), data)
