"""The kit's names for JSON values. What ``json.loads`` gives (a line the agent wrote, a scenario file, a
request the fake model got) is ``Any`` where it enters; these guards narrow it before the kit reaches into it,
so a value of another shape takes the other branch instead of raising, and strict typing holds without casts.
"""

from __future__ import annotations

from typing import Any, TypeAlias

from typing_extensions import TypeIs

__all__ = ["JsonArray", "JsonObject", "is_array", "is_object", "member"]

JsonObject: TypeAlias = dict[str, Any]
"""A JSON object: string keys (``json.loads`` gives no others), any JSON values."""

JsonArray: TypeAlias = list[Any]


def is_object(value: object) -> TypeIs[JsonObject]:
    return isinstance(value, dict)


def is_array(value: object) -> TypeIs[JsonArray]:
    return isinstance(value, list)


def member(value: object, key: str) -> Any:
    """``value[key]`` when ``value`` is an object holding it; else None (``a.b.c`` of a message of any shape
    is ``member(member(a, "b"), "c")``)."""
    return value.get(key) if is_object(value) else None
