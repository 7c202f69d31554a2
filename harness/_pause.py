"""Pause and resume: what a tool asks the host (needs), the host's answers, and the pending calls."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._errors import HarnessUsageError
from ._messages import ToolCall

__all__ = ["Answer", "Approval", "Decision", "Need", "Pending", "Question", "need_from_dict"]


@dataclass(frozen=True, slots=True)
class Approval:
    """Asks the host to allow or deny the call. Answered with a ``Decision``."""

    reason: str = ""
    id: str = "approval"

    def to_dict(self) -> dict[str, Any]:
        return {"type": "approval", "id": self.id, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Question:
    """Asks the host a question; answered with a value (one of ``choices`` when given) or ``Decision.deny``."""

    id: str
    text: str
    choices: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "question",
            "id": self.id,
            "text": self.text,
            "choices": list(self.choices) if self.choices is not None else None,
        }


Need = Approval | Question


def need_from_dict(data: Mapping[str, Any]) -> Need:
    if data.get("type") == "approval":
        return Approval(str(data.get("reason", "")), str(data.get("id", "approval")))
    if data.get("type") == "question":
        choices = data.get("choices")
        return Question(str(data["id"]), str(data["text"]), tuple(choices) if choices is not None else None)
    raise HarnessUsageError(f"unknown need type {data.get('type')!r}")


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str | None = None

    @classmethod
    def allow(cls) -> Decision:
        return cls(True)

    @classmethod
    def deny(cls, reason: str | None = None) -> Decision:
        return cls(False, reason)

    def to_dict(self) -> dict[str, Any]:
        return {"allowed": self.allowed, "reason": self.reason}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Decision:
        return cls(bool(data["allowed"]), data.get("reason"))


@dataclass(frozen=True, slots=True)
class Answer:
    """The host's answers to one pending call: need id -> ``Decision`` or a value."""

    call_id: str
    answers: Mapping[str, Any] = field(default_factory=dict[str, Any])

    def to_dict(self) -> dict[str, Any]:
        decisions = {k: v.to_dict() for k, v in self.answers.items() if isinstance(v, Decision)}
        values = {k: v for k, v in self.answers.items() if not isinstance(v, Decision)}
        return {"callId": self.call_id, "decisions": decisions, "values": values}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Answer:
        decisions: Mapping[str, Any] = data.get("decisions") or {}
        values: Mapping[str, Any] = data.get("values") or {}
        answers: dict[str, Any] = {str(k): Decision.from_dict(v) for k, v in decisions.items()}
        answers.update(values)
        return cls(str(data["callId"]), answers)


@dataclass(frozen=True, slots=True)
class Pending:
    """A call that waits for the host: its needs, and the tool's own JSON-safe ``state``."""

    call: ToolCall
    needs: tuple[Need, ...]
    state: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "call": self.call.to_dict(),
            "needs": [n.to_dict() for n in self.needs],
            "state": self.state,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Pending:
        c = data["call"]
        return cls(
            ToolCall(str(c["id"]), str(c["name"]), dict(c.get("input") or {})),
            tuple(need_from_dict(n) for n in data.get("needs", [])),
            data.get("state"),
        )
