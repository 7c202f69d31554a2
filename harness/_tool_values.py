"""What a tool declares (``ToolSpec``, ``Hints``) and returns (``Result``): plain values, below the ``Call``
that carries them and the model's ``Prompt`` that offers them (``_tools`` re-exports them)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._errors import HarnessUsageError
from ._messages import Image, Text, part_from_dict

__all__ = ["Hints", "Result", "ToolSpec", "jsonable"]


@dataclass(frozen=True, slots=True)
class Hints:
    """What a tool does to the world. Read-only calls of a step run concurrently."""

    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False

    def to_dict(self) -> dict[str, bool]:
        return {
            "readOnly": self.read_only,
            "destructive": self.destructive,
            "idempotent": self.idempotent,
            "openWorld": self.open_world,
        }


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model is offered it. ``schema`` is the JSON schema of the input, ``"type": "object"``."""

    name: str
    description: str
    schema: Mapping[str, Any] = field(default_factory=lambda: {"type": "object"})
    hints: Hints = Hints()
    meta: Mapping[str, Any] = field(default_factory=dict[str, Any], compare=False)

    def __post_init__(self) -> None:
        if not self.name:
            raise HarnessUsageError("a tool needs a name")
        if self.schema.get("type") != "object":
            raise HarnessUsageError(
                f'tool {self.name!r}: the input schema must have "type": "object", got {self.schema.get("type")!r}'
            )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "schema": dict(self.schema),
            "hints": self.hints.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Result:
    """A call's outcome: ``content`` for the model, ``value`` for the application, ``meta`` for logs only;
    ``ends_turn``: the turn ends once this step's calls are done (the step is kept, the turn ends ``DONE``:
    a hook's ``"continue": false``, say), calls of the step not started by then are not run."""

    content: tuple[Text | Image, ...] = ()
    value: Any = None
    meta: Mapping[str, Any] = field(default_factory=dict[str, Any])
    error: bool = False
    ends_turn: bool = False

    @classmethod
    def text(cls, text: str, *, value: Any = None, meta: Mapping[str, Any] | None = None) -> Result:
        return cls((Text(text),), value, dict(meta or {}), False)

    @classmethod
    def failure(cls, text: str, *, value: Any = None, meta: Mapping[str, Any] | None = None) -> Result:
        """An error result: the model sees ``text`` and may correct itself."""
        return cls((Text(text),), value, dict(meta or {}), True)

    def as_text(self) -> str:
        return "".join(p.text for p in self.content if isinstance(p, Text))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "content": [p.to_dict() for p in self.content],
            "value": jsonable(self.value),
            "meta": {k: jsonable(v) for k, v in self.meta.items()},
            "error": self.error,
        }
        if self.ends_turn:  # (only then: the shape of every other result is unchanged)
            out["ends_turn"] = True
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Result:
        content: list[Text | Image] = []
        for raw in data.get("content", []):
            p = part_from_dict(raw)
            if isinstance(p, Text | Image):
                content.append(p)
        meta: Mapping[str, Any] = data.get("meta") or {}
        return cls(
            tuple(content),
            data.get("value"),
            dict(meta),
            bool(data.get("error")),
            bool(data.get("ends_turn")),
        )


def jsonable(value: Any) -> Any:
    """``value`` as JSON can hold it: its ``to_dict()``, itself, or else its ``repr``."""
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value
