"""JSON helpers of the event mapping: the object a prefix of streamed JSON describes, and ``rawOutput``."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["partial_json", "raw_output"]


def partial_json(text: str) -> dict[str, Any] | None:
    """The object a prefix of streamed JSON describes so far (open strings, arrays and objects closed),
    or None when it cannot be completed into an object."""
    closers: list[str] = []
    in_string = False
    escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            closers.append("}" if ch == "{" else "]")
        elif ch in "}]" and closers:
            closers.pop()
    candidate = text
    if in_string:
        if escaped:
            candidate = candidate[:-1]
        candidate += '"'
    stripped = candidate.rstrip()
    for attempt in (stripped, stripped.rstrip(",:"), stripped.rsplit(",", 1)[0]):
        try:
            value = json.loads(attempt + "".join(reversed(closers)))
        except ValueError:
            continue
        if isinstance(value, dict):
            return value  # pyright: ignore[reportUnknownVariableType]
    return None


def raw_output(value: Any) -> dict[str, Any] | None:
    """``Result.value`` as ``rawOutput``: always a JSON object (clients validate it as one; a list or a
    scalar is wrapped as ``{"value": ...}``), None when there is no value."""
    if value is None:
        return None
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        value = to_dict()
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        value = repr(value)
    if isinstance(value, dict):
        return value  # pyright: ignore[reportUnknownVariableType]
    return {"value": value}
