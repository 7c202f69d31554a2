"""Typed tool inputs: one frozen dataclass per tool, its JSON schema derived from the fields.

``arg(...)`` declares a field with its description and JSON-schema keywords; ``input_schema`` builds the
object schema the model is offered (``additionalProperties: false``, ``required`` = the fields without a
default); ``parse_input`` turns the (already schema-validated) input into the dataclass. Only the types
the built-in tools need are mapped: ``str``, ``int``, ``bool`` and ``X | None``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

from .._errors import HarnessUsageError

__all__ = ["arg", "input_schema", "parse_input"]

T = TypeVar("T")

_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", bool: "boolean"}


def arg(description: str | None = None, *, default: Any = dataclasses.MISSING, **schema: Any) -> Any:
    """A field of a tool input: ``description`` and JSON-schema keywords (``minimum=1``, ``minLength=1``)."""
    meta = dict(schema)
    if description is not None:
        meta["description"] = description
    return dataclasses.field(default=default, metadata={"schema": meta})


@cache
def input_schema(cls: type[Any]) -> dict[str, Any]:
    """The JSON schema of the input dataclass ``cls`` (cached: treat the result as read-only)."""
    hints = typing.get_type_hints(cls)
    props: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        prop: dict[str, Any] = {"type": _json_type(cls, f.name, hints[f.name])}
        prop.update(f.metadata.get("schema", {}))
        if f.default is dataclasses.MISSING:
            required.append(f.name)
        elif f.default is not None:
            prop["default"] = f.default
        props[f.name] = prop
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _json_type(cls: type[Any], name: str, annotation: Any) -> str:
    if isinstance(annotation, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            annotation = args[0]
    found = _JSON_TYPES.get(annotation)
    if found is None:
        raise HarnessUsageError(f"{cls.__name__}.{name}: unsupported input type {annotation!r}")
    return found


def parse_input(cls: type[T], data: Mapping[str, Any]) -> T:
    """``cls`` built from ``data`` (validated against ``input_schema(cls)``); absent or null keys take
    the field's default. Raises ``TypeError`` when a required field is missing."""
    names = {f.name for f in dataclasses.fields(cls)}  # pyright: ignore[reportArgumentType]
    return cls(**{k: v for k, v in data.items() if k in names and v is not None})
