"""Typed views of decoded JSON whose shape is not guaranteed (a peer's message, a tool's ``value``): the
value when it has the expected kind, else an empty one. Standard library only, so every layer above the
wire (``session``, ``coding``) can use the same two helpers."""

from __future__ import annotations

from typing import Any, cast

__all__ = ["as_list", "as_object"]


def as_object(value: Any) -> dict[str, Any]:
    """``value`` as a JSON object (``{}`` when it is not one)."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """``value`` as a JSON array (``[]`` when it is not one)."""
    return cast(list[Any], value) if isinstance(value, list) else []
