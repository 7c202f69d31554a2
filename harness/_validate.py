"""Validation of tool input against the tool's JSON schema (jsonschema, imported on first use).

Importing jsonschema takes tens of milliseconds (60-90 ms on a shared 2-core machine): ``load_validation``
does it, blocking, for a worker thread (the tool loop's first call, ``_step_tools``; an application's
warm-up), so that no event loop stalls on it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

__all__ = ["Invalid", "first_invalid", "input_error", "load_validation", "validation_loaded"]

_engine: list[Any] = []  # (jsonschema's Draft202012Validator and validator_for, once imported)


def load_validation() -> None:
    """Import the schema engine now. Blocking: call it in a worker thread."""
    if not _engine:
        import jsonschema
        from jsonschema.validators import validator_for

        _engine[:] = [jsonschema.Draft202012Validator, validator_for]


def validation_loaded() -> bool:
    """Whether validating costs no import any more."""
    return bool(_engine)


@lru_cache(maxsize=512)
def _validator(schema_json: str) -> Any:
    load_validation()
    default, validator_for = _engine
    schema = json.loads(schema_json)
    cls: Any = validator_for(schema, default=default)
    return cls(schema)


@dataclass(frozen=True, slots=True)
class Invalid:
    """The first place ``value`` breaks the schema: its path, the value there, and why (with how many more)."""

    message: str
    path: list[Any]
    instance: Any
    more: int
    missing: str | None = None  # a required property that is absent


def first_invalid(schema: Mapping[str, Any], value: Any) -> Invalid | None:
    """None when ``value`` fits ``schema``; else where it first does not."""
    validator = _validator(json.dumps(schema, sort_keys=True, default=str))
    errors: list[Any] = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    first = errors[0]
    missing: str | None = None
    if first.validator == "required":
        instance: Any = first.instance
        given: Mapping[str, Any] = cast(Mapping[str, Any], instance) if isinstance(instance, Mapping) else {}
        wanted: list[Any] = list(first.validator_value or [])
        missing = next((str(k) for k in wanted if k not in given), None)
    return Invalid(first.message, list(first.absolute_path), first.instance, len(errors) - 1, missing)


def input_error(schema: Mapping[str, Any], value: Any) -> str | None:
    """None when ``value`` fits ``schema``; else one short sentence naming where and why."""
    validator = _validator(json.dumps(schema, sort_keys=True, default=str))
    errors: list[Any] = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    first = errors[0]
    where = "/".join(str(p) for p in first.absolute_path) or "(root)"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"invalid input at {where}: {first.message}{more}"
