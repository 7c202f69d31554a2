"""Writing the user's ``config.toml`` (for ``acp-agent setup`` and the like), checked by the same table.

``write_user_config({"provider": "openai", "model": "m", "base_url": "http://…/v1"}, env)`` merges the values
into the user's file (keys by their table name; ``tools.shell_timeout_s`` lands in ``[tools]``), refuses
every problem the resolver would report (``ConfigError``), and replaces the file atomically. Comments in an
existing file are not kept (the standard library reads TOML but does not edit it in place).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from ._checks import ConfigError, ConfigProblem, Problems
from ._files import read_values, user_config_dir

__all__ = ["check_user_settings", "render_toml", "user_config_file", "write_user_config"]

_HEADER = "# acp-agent user configuration (see the README's Configuration section)\n"


def user_config_file(env: Mapping[str, str]) -> Path:
    return user_config_dir(env) / "config.toml"


def _nested(values: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in values.items():
        head, dot, tail = key.partition(".")
        if dot:
            out.setdefault(head, {})[tail] = value
        else:
            out[key] = value
    return out


def _merge(into: dict[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in new.items():
        old = into.get(key)
        if isinstance(old, dict) and isinstance(value, Mapping):
            into[key] = _merge(cast("dict[str, Any]", old), cast("Mapping[str, Any]", value))
        else:
            into[key] = value
    return into


def check_user_settings(values: Mapping[str, Any], source: str = "(new settings)") -> list[ConfigProblem]:
    """The problems ``values`` (by table key) would have in the user's ``config.toml``; ``[]`` when none."""
    out = Problems()
    read_values(_nested(values), source, out)
    return out.items


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_scalar(v) for v in cast("list[Any]", value)) + "]"
    if isinstance(value, Mapping):
        items = cast("Mapping[str, Any]", value).items()
        return "{ " + ", ".join(f"{_key(k)} = {_scalar(v)}" for k, v in items) + " }"
    raise TypeError(f"cannot write {type(value).__name__} to config.toml")


def _key(name: str) -> str:
    return name if name.replace("_", "").replace("-", "").isalnum() else json.dumps(name)


def render_toml(data: Mapping[str, Any]) -> str:
    """``data`` (nested as TOML reads it) as ``config.toml`` text: plain keys first, then one table per
    section, and one per named entry of ``mcp_servers``-like tables of tables."""
    lines = [_HEADER]
    tables: list[tuple[str, Mapping[str, Any]]] = []
    for key, value in data.items():
        if isinstance(value, Mapping):
            table = cast("Mapping[str, Any]", value)
            if table and all(isinstance(v, Mapping) for v in table.values()):
                tables.extend(
                    (f"{_key(key)}.{_key(k)}", cast("Mapping[str, Any]", v)) for k, v in table.items()
                )
            else:
                tables.append((_key(key), table))
        else:
            lines.append(f"{_key(key)} = {_scalar(value)}\n")
    for name, table in tables:
        lines.append(f"\n[{name}]\n")
        lines.extend(f"{_key(k)} = {_scalar(v)}\n" for k, v in table.items())
    return "".join(lines)


def write_user_config(values: Mapping[str, Any], env: Mapping[str, str]) -> Path:
    """Merge ``values`` (by table key) into the user's ``config.toml`` and write it; returns its path.
    Raises ``ConfigError`` (nothing written) when the result would have any problem."""
    import tomllib

    path = user_config_file(env)
    existing: dict[str, Any] = {}
    if path.is_file():
        try:
            existing = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(
                [ConfigProblem(str(path), "(file)", f"cannot be updated ({exc}); fix it first.")]
            ) from None
    data = _merge(existing, _nested(values))
    out = Problems()
    read_values(data, str(path), out)
    if out.items:
        raise ConfigError(out.items)
    from harness.atomic import write_text_atomic

    write_text_atomic(path, render_toml(data))
    return path
