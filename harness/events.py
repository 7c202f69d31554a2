"""The typed event stream of a turn: a union of dataclasses told apart by their ``type`` field.

Each event has ``turn`` and ``parent`` (the tool call id of the run it comes from when nested, else None).
``to_dict()`` gives ``{"type": "text_delta", ...}`` as one JSON line; ``from_dict()`` rebuilds the typed
event. One codec does both for every event: it walks the dataclass fields (camelCase on the wire) and
converts the nested types (``Message``, ``Usage``, ``Decision``, ``Pending``, an outcome or an error)
with their own ``to_dict``/``from_dict``. Its tables are built on first use, so importing stays cheap.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from ._errors import HarnessUsageError, ToolFailure
from ._fast_init import fast_frozen_init
from ._kinds import Delivery, EndReason, FinishReason
from ._messages import Message
from ._pause import Decision, Pending
from ._tools import Result
from ._usage import Usage

__all__ = [
    "EVENT_TYPES",
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


class _Codec:
    """What every event shares: ``to_dict()``, written once, by the codec at the end of this module."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return _encode(self)


@dataclass(frozen=True, slots=True)
class TurnStarted(_Codec):
    type: Literal["turn_started"] = field(default="turn_started", init=False, repr=False)
    turn: int
    parent: str | None


@dataclass(frozen=True, slots=True)
class TurnEnded(_Codec):
    type: Literal["turn_ended"] = field(default="turn_ended", init=False, repr=False)
    turn: int
    parent: str | None
    reason: EndReason
    usage: Usage
    error: BaseException | None = None
    finish: FinishReason | None = None


@dataclass(frozen=True, slots=True)
class StepStarted(_Codec):
    """``n`` counts the steps of the turn from 1; ``n = 0`` runs the resumed calls of a turn of answers."""

    type: Literal["step_started"] = field(default="step_started", init=False, repr=False)
    turn: int
    parent: str | None
    n: int


@dataclass(frozen=True, slots=True)
class StepEnded(_Codec):
    type: Literal["step_ended"] = field(default="step_ended", init=False, repr=False)
    turn: int
    parent: str | None
    n: int


@dataclass(frozen=True, slots=True)
class MessageStarted(_Codec):
    type: Literal["message_started"] = field(default="message_started", init=False, repr=False)
    turn: int
    parent: str | None
    id: str


@dataclass(frozen=True, slots=True)
class MessageResumed(_Codec):
    type: Literal["message_resumed"] = field(default="message_resumed", init=False, repr=False)
    turn: int
    parent: str | None
    id: str


@dataclass(frozen=True, slots=True)
class Interjected(_Codec):
    type: Literal["interjected"] = field(default="interjected", init=False, repr=False)
    turn: int
    parent: str | None
    message: Message
    delivery: Delivery


@fast_frozen_init  # made once per streamed delta
@dataclass(frozen=True, slots=True)
class TextDelta(_Codec):
    type: Literal["text_delta"] = field(default="text_delta", init=False, repr=False)
    turn: int
    parent: str | None
    id: str
    text: str


@fast_frozen_init  # made once per streamed delta
@dataclass(frozen=True, slots=True)
class ReasoningDelta(_Codec):
    type: Literal["reasoning_delta"] = field(default="reasoning_delta", init=False, repr=False)
    turn: int
    parent: str | None
    id: str
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted(_Codec):
    type: Literal["tool_call_started"] = field(default="tool_call_started", init=False, repr=False)
    turn: int
    parent: str | None
    id: str
    name: str


@fast_frozen_init  # made once per streamed delta
@dataclass(frozen=True, slots=True)
class ToolInputDelta(_Codec):
    type: Literal["tool_input_delta"] = field(default="tool_input_delta", init=False, repr=False)
    turn: int
    parent: str | None
    id: str
    json: str


@dataclass(frozen=True, slots=True)
class ToolCallReady(_Codec):
    type: Literal["tool_call_ready"] = field(default="tool_call_ready", init=False, repr=False)
    turn: int
    parent: str | None
    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolDecided(_Codec):
    type: Literal["tool_decided"] = field(default="tool_decided", init=False, repr=False)
    turn: int
    parent: str | None
    id: str
    need_id: str
    decision: Decision


@dataclass(frozen=True, slots=True)
class ToolProgress(_Codec):
    type: Literal["tool_progress"] = field(default="tool_progress", init=False, repr=False)
    turn: int
    parent: str | None
    id: str
    value: Any


@dataclass(frozen=True, slots=True)
class ToolEnded(_Codec):
    """A call ended: ``outcome`` is its ``Result``, or the exception it raised (the model saw its message)."""

    type: Literal["tool_ended"] = field(default="tool_ended", init=False, repr=False)
    turn: int
    parent: str | None
    id: str
    outcome: Result | BaseException


@dataclass(frozen=True, slots=True)
class MessageEnded(_Codec):
    type: Literal["message_ended"] = field(default="message_ended", init=False, repr=False)
    turn: int
    parent: str | None
    id: str
    message: Message
    usage: Usage
    finish: FinishReason | None


@dataclass(frozen=True, slots=True)
class InputRequested(_Codec):
    type: Literal["input_requested"] = field(default="input_requested", init=False, repr=False)
    turn: int
    parent: str | None
    pending: tuple[Pending, ...]


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


def _event_types() -> dict[str, type[Event]]:
    classes: tuple[type[Event], ...] = typing.get_args(Event)
    return {str(f.default): cls for cls in classes for f in fields(cls) if f.name == "type"}


EVENT_TYPES: Mapping[str, type[Event]] = _event_types()
"""Each event class by its ``type``."""


def error_to_dict(error: BaseException | None) -> dict[str, str] | None:
    if error is None:
        return None
    if isinstance(error, ToolFailure):
        return {"class": error.class_name, "message": error.message}
    return {"class": type(error).__name__, "message": str(error)}


def from_dict(data: Mapping[str, Any]) -> Event:
    """Rebuild a typed event from ``to_dict()`` output."""
    cls = EVENT_TYPES.get(str(data.get("type")))
    if cls is None:
        raise HarnessUsageError(f"unknown event type {data.get('type')!r}")
    values: dict[str, Any] = {}
    for f in _fields_of(cls):
        if f.init:
            values[f.name] = f.decode(data.get(f.wire) if f.optional else data[f.wire])
    return cls(**values)


# -- the codec -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Converter:
    """How a field's type goes to JSON and back; ``optional``: the key may be missing (read as null)."""

    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]
    optional: bool = False


def _same(v: Any) -> Any:
    return v


def _enum_value(v: Any) -> Any:
    return v.value if v is not None else None


def _error_from(data: Any) -> ToolFailure | None:
    if data is None:
        return None
    return ToolFailure(str(data.get("class", "Exception")), str(data.get("message", "")))


def _outcome_to_dict(v: Result | BaseException) -> dict[str, Any] | None:
    return v.to_dict() if isinstance(v, Result) else error_to_dict(v)


def _outcome_from(v: Mapping[str, Any]) -> Result | BaseException:
    if "class" in v:
        return ToolFailure(str(v["class"]), str(v.get("message", "")))
    return Result.from_dict(v)


def _pending_from(v: list[Mapping[str, Any]] | None) -> tuple[Pending, ...]:
    return tuple(Pending.from_dict(x) for x in v or [])


_TAG = _Converter(_same, _same)  # the ``type`` field: a Literal, not in the constructor

# By each field's annotation; a field of a type not here fails the first to_dict/from_dict of its event.
_CONVERTERS: dict[Any, _Converter] = {
    int: _Converter(_same, int),
    str: _Converter(_same, str),
    str | None: _Converter(_same, _same, optional=True),
    Any: _Converter(_same, _same, optional=True),
    dict[str, Any]: _Converter(_same, lambda v: dict(v or {}), optional=True),
    EndReason: _Converter(_enum_value, EndReason),
    Delivery: _Converter(_enum_value, Delivery),
    FinishReason | None: _Converter(_enum_value, lambda v: FinishReason(v) if v is not None else None, True),
    Usage: _Converter(Usage.to_dict, lambda v: Usage.from_dict(v or {}), optional=True),
    Message: _Converter(Message.to_dict, Message.from_dict),
    Decision: _Converter(Decision.to_dict, Decision.from_dict),
    tuple[Pending, ...]: _Converter(lambda v: [p.to_dict() for p in v], _pending_from, optional=True),
    BaseException | None: _Converter(error_to_dict, _error_from, optional=True),
    Result | BaseException: _Converter(_outcome_to_dict, _outcome_from),
}


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    wire: str
    encode: Callable[[Any], Any]
    decode: Callable[[Any], Any]
    optional: bool
    init: bool


_FIELDS: dict[type, tuple[_Field, ...]] = {}


def _fields_of(cls: type) -> tuple[_Field, ...]:
    """Each field of an event class with its wire name and converter, built once per class."""
    known = _FIELDS.get(cls)
    if known is None:
        hints = typing.get_type_hints(cls)
        known = _FIELDS[cls] = tuple(_field(f.name, hints[f.name], f.init) for f in fields(cls))
    return known


def _field(name: str, hint: Any, init: bool) -> _Field:
    conv = _TAG if typing.get_origin(hint) is Literal else _CONVERTERS[hint]
    head, *rest = name.split("_")
    wire = head + "".join(word.title() for word in rest)  # need_id -> needId
    return _Field(name, wire, conv.encode, conv.decode, conv.optional, init)


def _encode(event: object) -> dict[str, Any]:
    return {f.wire: f.encode(getattr(event, f.name)) for f in _fields_of(type(event))}
