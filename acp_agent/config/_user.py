"""Writing the user's ``config.toml`` (for ``acp-harness-agent setup`` and the like), checked by the same table.

``write_user_config({"provider": "openai", "model": "m", "base_url": "http://…/v1"}, env)`` sets the values in
the user's file (keys by their table name: ``tools.shell_timeout_s`` lands in ``[tools]``; ``None`` removes
a key), refuses every problem the resolver would report (``ConfigError``; ``check=False`` leaves that to the
caller), and replaces the file atomically. The file is edited in place with ``tomlkit``, so the user's
comments, order and formatting stay as they were (the standard library reads TOML but cannot edit it).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._checks import ConfigError, ConfigProblem, Problems
from ._files import read_values, user_config_dir

__all__ = ["check_user_settings", "user_config_file", "write_user_config"]

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


def check_user_settings(values: Mapping[str, Any], source: str = "(new settings)") -> list[ConfigProblem]:
    """The problems ``values`` (by table key) would have in the user's ``config.toml``; ``[]`` when none."""
    out = Problems()
    read_values(_nested(values), source, out)
    return out.items


def write_user_config(
    values: Mapping[str, Any], env: Mapping[str, str], *, path: Path | None = None, check: bool = True
) -> Path:
    """Set ``values`` (by table key; ``None`` removes) in the user's ``config.toml`` (or ``path``) and write
    it; returns its path. Raises ``ConfigError`` (nothing written) when the file cannot be read as TOML, or,
    with ``check``, when the result would have any problem."""
    import tomllib

    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    target = path or user_config_file(env)
    try:
        text = target.read_text(encoding="utf-8") if target.is_file() else _HEADER
        doc = tomlkit.parse(text)
        for key, value in values.items():
            _set(doc, key.split("."), value)
        out_text = doc.as_string()
        data = tomllib.loads(out_text)  # what the resolver will read
    except (OSError, UnicodeDecodeError, TOMLKitError, tomllib.TOMLDecodeError, ValueError) as exc:
        raise ConfigError(
            [ConfigProblem(str(target), "(file)", f"cannot be updated ({exc}); fix it first.")]
        ) from None
    if check:
        out = Problems()
        read_values(data, str(target), out)
        if out.items:
            raise ConfigError(out.items)
    from harness.atomic import write_text_atomic

    write_text_atomic(target, out_text)
    return target


def _set(table: Any, keys: list[str], value: Any) -> None:
    """Set (``None``: remove) ``keys`` in a tomlkit document or table, making the tables on the way."""
    import tomlkit

    *parents, last = keys
    for name in parents:
        inner = table.get(name)
        if inner is None:
            if value is None:
                return
            inner = table[name] = tomlkit.table()
        table = inner
    if value is None:
        if last in table:
            del table[last]
    else:
        table[last] = value
