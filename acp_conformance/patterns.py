"""The scenario pattern language: subset matching of JSON values, and ``${VAR}`` substitution.

Patterns match as subsets: objects need the listed keys (others ignored), lists match element by element,
``"*"`` any value, ``"<absent>"`` a missing key, ``"<string>" "<nonempty>" "<int>" "<number>" "<bool>"
"<object>" "<array>" "<null>"`` types; ``{"$oneOf": [p, ...]}`` alternatives, ``{"$not": p}`` anything but
``p``, ``{"$contains": "text"}`` a string containing the text (case-insensitive), ``{"$any": p}`` a list
with an element matching ``p``, ``{"$none": p}`` a list with no element matching ``p``. Inside an object pattern,
the key ``"$text"`` requires the whole object, serialised, to mention the text (case-insensitive): an error
naming a field in its ``message`` or in its ``data`` both match ``{"$text": "cwd"}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from .json_types import JsonObject, is_array, is_object

__all__ = ["ABSENT", "get_path", "mismatch", "set_path", "short", "substitute"]

ABSENT = "<absent>"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TYPES: dict[str, Callable[[Any], bool]] = {
    "*": lambda v: True,
    "<string>": lambda v: isinstance(v, str),
    "<nonempty>": lambda v: isinstance(v, str) and v != "",
    "<int>": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "<number>": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "<bool>": lambda v: isinstance(v, bool),
    "<object>": lambda v: isinstance(v, dict),
    "<array>": lambda v: isinstance(v, list),
    "<null>": lambda v: v is None,
}


def substitute(value: Any, variables: Mapping[str, Any]) -> Any:
    """``${VAR}`` replaced by captured values; a string that is exactly ``${VAR}`` keeps the value's type."""
    if isinstance(value, str):
        whole = _VAR.fullmatch(value)
        if whole is not None and whole.group(1) in variables:
            return variables[whole.group(1)]
        return _VAR.sub(lambda m: str(variables.get(m.group(1), m.group(0))), value)
    if is_array(value):
        return [substitute(v, variables) for v in value]
    if is_object(value):
        return {k: substitute(v, variables) for k, v in value.items()}
    return value


def mismatch(pattern: Any, value: Any, path: str = "$") -> str | None:
    """None when ``value`` matches ``pattern``; else where and why not."""
    if isinstance(pattern, str) and pattern in _TYPES:
        return None if _TYPES[pattern](value) else f"{path}: expected {pattern}, got {short(value)}"
    if is_object(pattern) and len(pattern) == 1:
        special = _special(pattern, value, path)
        if special is not _NOT_SPECIAL:
            return special
    if is_object(pattern):
        return _mismatch_object(pattern, value, path)
    if is_array(pattern):
        if not is_array(value) or len(value) != len(pattern):
            return f"{path}: expected a list of {len(pattern)}, got {short(value)}"
        for i, (p, v) in enumerate(zip(pattern, value, strict=True)):
            problem = mismatch(p, v, f"{path}[{i}]")
            if problem:
                return problem
        return None
    # 1 matches 1.0, but a boolean is no number either way (`true` must not match 1, nor 1 match `true`)
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (pattern, value))
    if type(pattern) is not type(value) and not numbers:
        return f"{path}: expected {short(pattern)}, got {short(value)}"
    return None if pattern == value else f"{path}: expected {short(pattern)}, got {short(value)}"


_NOT_SPECIAL = object()


def _special(pattern: JsonObject, value: Any, path: str) -> Any:
    (key, arg), *_ = pattern.items()
    if key == "$contains":
        ok = isinstance(value, str) and str(arg).lower() in value.lower()
        return None if ok else f"{path}: expected a string containing {arg!r}, got {short(value)}"
    if key == "$oneOf":
        problems = [mismatch(p, value, path) for p in arg]
        return None if any(p is None for p in problems) else " / ".join(p for p in problems if p)
    if key == "$not":
        return f"{path}: expected anything but {short(arg)}" if mismatch(arg, value, path) is None else None
    if key in ("$any", "$none"):
        if not is_array(value):
            return f"{path}: expected a list, got {short(value)}"
        hits = [v for v in value if mismatch(arg, v, path) is None]
        if key == "$any":
            return None if hits else f"{path}: no element matches {short(arg)} in {short(value)}"
        return (
            None if not hits else f"{path}: expected no element matching {short(arg)}, got {short(hits[0])}"
        )
    return _NOT_SPECIAL


def _mismatch_object(pattern: JsonObject, value: Any, path: str) -> str | None:
    if not is_object(value):
        return f"{path}: expected an object, got {short(value)}"
    obj = value
    for key, sub in pattern.items():
        if key == "$text":
            if str(sub).lower() not in json.dumps(obj, ensure_ascii=False).lower():
                return f"{path}: expected {sub!r} to be named (in the message or the data), got {short(obj)}"
            continue
        if sub == ABSENT:
            if key in obj:
                return f"{path}.{key}: expected absent, got {short(obj[key])}"
            continue
        if key not in obj:
            return f"{path}.{key}: missing"
        problem = mismatch(sub, obj[key], f"{path}.{key}")
        if problem:
            return problem
    return None


def short(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, bytes) else repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def get_path(value: Any, path: str) -> Any:
    """``a.b.0.c`` inside ``value``; raises ``KeyError``/``IndexError`` when absent."""
    for part in path.split(".") if path else []:
        if is_array(value):
            value = value[int(part)]
        elif is_object(value):
            value = value[part]
        else:
            raise KeyError(path)
    return value


def set_path(value: Any, path: str, new: Any) -> None:
    parts = path.split(".")
    for part in parts[:-1]:
        value = value[int(part)] if is_array(value) else value[part]
    last = parts[-1]
    if is_array(value):
        value[int(last)] = new
    else:
        value[last] = new
