"""Finding and reading the configuration files: the user's and the project's ``config.toml`` and ``mcp.json``.

The project directory (``.acp-agent``) is looked for from the session's cwd upward, stopping at the
repository root (the first directory holding ``.git``) or the filesystem root. It counts when it holds a
``config.toml``, an ``mcp.json`` or a ``permissions.jsonl``.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from ._checks import At, Problems, listed
from ._table import SETTINGS, file_keys

if TYPE_CHECKING:
    from ._mcp import McpServerEntry

__all__ = [
    "Layer",
    "find_project_config",
    "home_dir",
    "read_dir",
    "read_config_text",
    "read_values",
    "resolve_path",
    "user_config_dir",
]

PROJECT_DIR: Final = ".acp-agent"
_MARKERS: Final = ("config.toml", "mcp.json", "permissions.jsonl")


@dataclass(eq=False)
class Layer:
    """The settings one configuration directory contributed, by table key (absent: not set there)."""

    kind: Literal["user", "project"]
    directory: Path
    source: str
    values: dict[str, Any] = field(default_factory=dict[str, Any])
    files: tuple[Path, ...] = ()


def home_dir(env: Mapping[str, str]) -> Path:
    home = env.get("HOME")
    return Path(home) if home else Path.home()


def user_config_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/acp-agent`` or ``~/.config/acp-agent``."""
    xdg = env.get("XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "acp-agent"
    return home_dir(env) / ".config" / "acp-agent"


def resolve_path(value: str, base: Path, env: Mapping[str, str]) -> Path:
    """``~`` is the user's home (from ``env``); a relative path is taken from ``base``."""
    if value == "~" or value.startswith("~/"):
        return home_dir(env) / value[2:]
    path = Path(value)
    return path if path.is_absolute() else base / path


def find_project_config(cwd: Path) -> Path | None:
    """The ``.acp-agent`` directory of the project, searched from ``cwd`` up to the repository root."""
    here = cwd.resolve() if cwd.exists() else cwd.absolute()
    # Strings and one stat per name: this runs for every session/new (pathlib costs more than the stats).
    for directory in (here, *here.parents):
        candidate = os.path.join(directory, PROJECT_DIR)
        # ``lexists``: a link, FIFO or folder where a file should be still makes it the project's (it is
        # then reported, never read).
        if os.path.isdir(candidate) and any(os.path.lexists(os.path.join(candidate, n)) for n in _MARKERS):
            return Path(candidate)
        if os.path.exists(os.path.join(directory, ".git")):
            return None
    return None


CONFIG_FILE_LIMIT: Final = 1024 * 1024
"""A configuration file is small: a bigger one is reported, not read (a cloned project may ship anything)."""


def read_config_text(path: Path, out: Problems, *, beneath: Path | None = None) -> str | None:
    """``path``'s text (None, with its problem reported, when it cannot be read as a UTF-8 regular file of
    at most ``CONFIG_FILE_LIMIT``; None, unreported, when it does not exist). Never blocks on a FIFO.
    ``beneath``: the project folder it came with: a symlink from there down (the file, ``.acp-agent``) is
    refused, not followed; the user's own file follows the user's own links (``acp_agent.small_files``)."""
    from ..small_files import UnreadableFile, read_small_file

    try:
        data = read_small_file(path, CONFIG_FILE_LIMIT, beneath=beneath, follow=beneath is None)
    except UnreadableFile as exc:
        out.add(str(path), "(file)", f"{exc}; it is not read. Make it a regular file or remove it.")
        return None
    if data is None:
        return None
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        out.add(str(path), "(file)", "is not UTF-8 text; save it as UTF-8.")
        return None


def _load_toml(text: str, path: Path, out: Problems) -> dict[str, Any]:
    import tomllib  # only when there is a file to read (start-up budget)

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        out.add(str(path), "(file)", f"is not valid TOML ({exc}); fix the syntax.")
    except RecursionError:
        out.add(str(path), "(file)", "is nested too deeply to be a configuration file.")
    return {}


def _not_in_files(key: str, source: str, out: Problems) -> None:
    s = SETTINGS[key]
    if s.secret:
        out.add(
            source,
            key,
            "secrets are not read from config files; set ACP_AGENT_API_KEY in the environment "
            "or put the key in a file and name it with api_key_file.",
        )
        return
    how = " or ".join(x for x in (s.flag, *s.env_names()) if x)
    out.add(source, key, f"is not read from config files; set it with {how}.")


def read_values(data: Mapping[str, Any], source: str, out: Problems) -> dict[str, Any]:
    """The checked values of a parsed ``config.toml``, by table key; every bad key or value reported."""
    top = file_keys()
    values: dict[str, Any] = {}
    for key, value in data.items():
        s = SETTINGS.get(key)
        if s is not None and s.files:
            values[key] = s.check(value, At(source, key, out))
        elif s is not None:
            _not_in_files(key, source, out)
        elif key in top:  # a [section]
            section = [k.split(".", 1)[1] for k, x in SETTINGS.items() if x.files and k.startswith(key + ".")]
            if not isinstance(value, Mapping):
                out.add(source, key, f"must be a table ([{key}]) with keys: {listed(section)}.")
                continue
            table: Mapping[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
            for name, item in table.items():
                full = f"{key}.{name}"
                if name not in section:
                    out.add(source, full, f"unknown key; allowed keys in [{key}]: {listed(section)}.")
                else:
                    values[full] = SETTINGS[full].check(item, At(source, full, out))
        else:
            out.add(source, key, f"unknown key; allowed keys: {listed(top)}.")
    return {k: v for k, v in values.items() if v is not None}


def read_dir(directory: Path, kind: Literal["user", "project"], out: Problems) -> Layer | None:
    """The layer of one ``.acp-agent`` (or user config) directory; None when it holds no config file."""
    toml_path = directory / "config.toml"
    json_path = directory / "mcp.json"
    if not (kind == "project" or os.path.lexists(toml_path) or os.path.lexists(json_path)):
        return None
    # A project's files are read from its folder with no symlink followed (the file, .acp-agent itself);
    # a FIFO, a device or a folder where a file should be is reported, never read (nor waited on).
    beneath = directory.parent if kind == "project" else None
    toml_text = read_config_text(toml_path, out, beneath=beneath)
    json_text = read_config_text(json_path, out, beneath=beneath)
    present = tuple(p for p, t in ((toml_path, toml_text), (json_path, json_text)) if t is not None)
    if not present and not (kind == "project" and directory.is_dir()):
        return None
    layer = Layer(kind, directory, str(present[0] if present else directory), files=present)
    if toml_text is not None:
        layer.values = read_values(_load_toml(toml_text, toml_path, out), str(toml_path), out)
    from_json: dict[str, McpServerEntry] = {}
    if json_text is not None:
        from ._mcp import mcp_json_servers

        from_json = mcp_json_servers(json_text, str(json_path), out)
    if from_json:
        servers: dict[str, McpServerEntry] = dict(from_json)
        servers.update(layer.values.get("mcp_servers", {}))  # the TOML tables win on a name clash
        layer.values["mcp_servers"] = servers
    if "mcp_servers" in layer.values:  # a server's relative cwd is taken from the project folder
        layer.values["mcp_servers"] = {
            name: entry
            if entry.cwd is None or os.path.isabs(entry.cwd)
            else dataclasses.replace(entry, cwd=str(directory.parent / entry.cwd))
            for name, entry in layer.values["mcp_servers"].items()
        }
    if kind == "project" and "mcp_servers" in layer.values:
        layer.values["mcp_servers"] = _untrusted(layer.values["mcp_servers"])
    if kind == "project":
        _project_only(layer)
    return layer


def _project_only(layer: Layer) -> None:
    """A project's hooks are marked as such (always sandboxed); its ``user_only`` settings are dropped."""
    if "hooks" in layer.values:
        layer.values["hooks"] = tuple(h.for_project() for h in layer.values["hooks"])
    for key in [k for k in layer.values if SETTINGS[k].user_only]:
        import logging

        logging.getLogger(__name__).warning(
            "%s: %s is ignored in a project's configuration", layer.source, key
        )
        del layer.values[key]


def _untrusted(servers: Mapping[str, McpServerEntry]) -> dict[str, McpServerEntry]:
    """A project's servers without ``trusted``: only the user's own file can have a server's annotations
    believed (a trusted project still runs its servers, their hints are not taken on its word)."""
    return {n: dataclasses.replace(e, trusted=False) if e.trusted else e for n, e in servers.items()}
