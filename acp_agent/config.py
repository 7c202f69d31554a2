"""The agent's configuration: flags > environment > project ``.acp-agent/config.toml`` > user
``~/.config/acp-agent/config.toml`` > defaults.

The project file is looked for from the session's cwd upward, stopping at the repository root (the first
directory holding ``.git``) or the filesystem root. A Claude-Desktop-style ``mcp.json`` beside either
``config.toml`` adds MCP servers (the TOML ``[mcp_servers.<name>]`` tables win on a name clash).

Secrets never live in a config file: the API key comes from ``ACP_AGENT_API_KEY`` (or the provider's own
variable) or from the file named by ``api_key_file``. Every problem found (unknown key, bad value, broken
file) is collected into one ``ConfigError``, each as one sentence naming the file, the key and the fix.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

__all__ = [
    "DEFAULT_MODES",
    "LOG_LEVELS",
    "PROVIDERS",
    "Config",
    "ConfigError",
    "ConfigProblem",
    "McpServerEntry",
    "find_project_config",
    "load_config",
    "missing_key_problem",
    "user_config_dir",
]

PROVIDERS: Final = ("openai", "openai-responses", "anthropic", "script")
DEFAULT_MODES: Final = ("read-only", "default", "accept-edits", "plan", "full-access")
LOG_LEVELS: Final = ("debug", "info", "warning", "error", "critical")
MCP_TYPES: Final = ("stdio", "http", "sse")
DEFAULT_HOME: Final = "~/.local/share/acp-agent"
DEFAULT_SHELL_TIMEOUT_S: Final = 120.0

_TOP_KEYS: Final = (
    "provider",
    "model",
    "base_url",
    "api_key_file",
    "default_mode",
    "log_level",
    "mcp_servers",
    "tools",
    "permissions",
    "sandbox",
    "network",
    "sandbox_writable",
    "sandbox_deny_read",
)
SANDBOX_MODES: Final = ("workspace-write", "read-only", "off")
NETWORK_MODES: Final = ("off", "on")
# Narrowest first: a project file may pick a narrower value than the user's, never a wider one.
_NARROWEST: Final[Mapping[str, tuple[str, ...]]] = {
    "sandbox": ("read-only", "workspace-write", "off"),
    "network": ("off", "on"),
}
_TOOLS_KEYS: Final = ("shell_timeout_s", "searxng_url")
_PERMISSIONS_KEYS: Final = ("project_file", "user_file")
_STDIO_KEYS: Final = ("type", "command", "args", "env", "cwd", "timeout_s", "trusted")
_HTTP_KEYS: Final = ("type", "url", "headers", "timeout_s", "trusted")

# Environment variables, in the order they are consulted for each setting.
_ENV: Final[Mapping[str, tuple[str, ...]]] = {
    "provider": ("ACP_AGENT_PROVIDER",),
    "model": ("ACP_AGENT_MODEL",),
    "base_url": ("ACP_AGENT_BASE_URL",),
    "api_key_file": ("ACP_AGENT_API_KEY_FILE",),
    "default_mode": ("ACP_AGENT_DEFAULT_MODE",),
    "log_level": ("ACP_AGENT_LOG_LEVEL",),
    "home": ("ACP_AGENT_HOME",),
    "shell_timeout_s": ("ACP_AGENT_SHELL_TIMEOUT",),
    "searxng_url": ("ACP_AGENT_SEARXNG_URL", "SEARXNG_URL"),
    "sandbox": ("ACP_AGENT_SANDBOX",),
    "network": ("ACP_AGENT_NETWORK",),
}
_FLAG_NAMES: Final[Mapping[str, str]] = {
    "provider": "--provider",
    "model": "--model",
    "base_url": "--base-url",
    "api_key_file": "--api-key-file",
    "default_mode": "--default-mode",
    "log_level": "--log-level",
    "home": "--home",
    "sandbox": "--sandbox",
    "network": "--network",
}


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """One problem: where (a file, ``environment``, ``flags``), which key, and a sentence with the fix."""

    source: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.key}: {self.message}"


class ConfigError(Exception):
    """The configuration cannot be used; ``problems`` lists every problem found, one sentence each."""

    def __init__(self, problems: Sequence[ConfigProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


@dataclass(frozen=True, slots=True)
class McpServerEntry:
    """One configured MCP server: a command (``stdio``) or an endpoint (``http``/``sse``)."""

    name: str
    type: str = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    source: str = ""
    timeout_s: float | None = None
    """Per-call timeout; None is the default (60 s)."""
    trusted: bool = False
    """``trusted = true`` in the user's own configuration: the server's tool annotations are believed
    (its ``readOnlyHint`` tools run as reads). Ignored from a project's file."""

    def to_acp(self) -> dict[str, Any]:
        """The entry as an ACP ``session/new`` ``mcpServers`` item (a timeout rides in ``_meta``)."""
        if self.type == "stdio":
            out: dict[str, Any] = {
                "name": self.name,
                "command": self.command or "",
                "args": list(self.args),
                "env": [{"name": k, "value": v} for k, v in self.env.items()],
            }
        else:
            out = {
                "type": self.type,
                "name": self.name,
                "url": self.url or "",
                "headers": [{"name": k, "value": v} for k, v in self.headers.items()],
            }
        if self.timeout_s is not None:
            # Named where `_meta` is read; the session layer is loaded by the time a session's servers are.
            from .session._mcp import MCP_TIMEOUT_META

            out["_meta"] = {MCP_TIMEOUT_META: self.timeout_s}
        return out


@dataclass(frozen=True, slots=True)
class Config:
    """The resolved configuration. ``origins`` says where each non-default setting came from."""

    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    api_key_source: str | None = None
    default_mode: str = "default"
    log_level: str = "warning"
    home: Path = field(default_factory=lambda: Path(DEFAULT_HOME).expanduser())
    mcp_servers: tuple[McpServerEntry, ...] = ()
    shell_timeout_s: float = DEFAULT_SHELL_TIMEOUT_S
    searxng_url: str | None = None
    sandbox: str = "workspace-write"
    network: str = "off"
    sandbox_writable: tuple[Path, ...] = ()
    sandbox_deny_read: tuple[Path, ...] = ()
    permissions_project_file: Path | None = None
    permissions_user_file: Path | None = None
    project_root: Path | None = None
    files: tuple[Path, ...] = ()
    origins: Mapping[str, str] = field(default_factory=dict[str, str])


def user_config_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/acp-agent`` or ``~/.config/acp-agent``."""
    xdg = env.get("XDG_CONFIG_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "acp-agent"
    return _home_dir(env) / ".config" / "acp-agent"


def _home_dir(env: Mapping[str, str]) -> Path:
    home = env.get("HOME")
    return Path(home) if home else Path.home()


def find_project_config(cwd: Path) -> Path | None:
    """The ``.acp-agent`` directory holding a config, searched from ``cwd`` up to the repository root."""
    here = cwd.resolve() if cwd.exists() else cwd.absolute()
    for directory in (here, *here.parents):
        candidate = directory / ".acp-agent"
        if (candidate / "config.toml").is_file() or (candidate / "mcp.json").is_file():
            return candidate
        if (directory / ".git").exists():
            return None
    return None


class _Collector:
    def __init__(self) -> None:
        self.problems: list[ConfigProblem] = []

    def add(self, source: str, key: str, message: str) -> None:
        self.problems.append(ConfigProblem(source, key, message))


def _allowed(values: Sequence[str]) -> str:
    return ", ".join(values)


def _check_choice(value: Any, choices: Sequence[str], source: str, key: str, out: _Collector) -> str | None:
    if isinstance(value, str) and value in choices:
        return value
    out.add(source, key, f"{value!r} is not allowed; use one of: {_allowed(choices)}.")
    return None


def _check_url(value: Any, source: str, key: str, out: _Collector) -> str | None:
    if isinstance(value, str) and value.startswith(("http://", "https://")) and len(value) > 8:
        return value.rstrip("/")
    out.add(
        source,
        key,
        f"{value!r} is not a URL; give an http:// or https:// address, e.g. http://127.0.0.1:8080/v1.",
    )
    return None


def _check_str(value: Any, source: str, key: str, out: _Collector) -> str | None:
    if isinstance(value, str) and value:
        return value
    out.add(source, key, f"{value!r} is not allowed; it must be a non-empty string.")
    return None


def _check_timeout(value: Any, source: str, key: str, out: _Collector) -> float | None:
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = None
    if number is not None and 0 < number <= 86400:
        return number
    out.add(source, key, f"{value!r} is not allowed; give a number of seconds above 0 (at most 86400).")
    return None


def _str_map(value: Any, source: str, key: str, out: _Collector) -> dict[str, str] | None:
    if isinstance(value, Mapping) and all(
        isinstance(k, str) and isinstance(v, str)
        for k, v in value.items()  # pyright: ignore[reportUnknownVariableType]
    ):
        return dict(value)  # pyright: ignore[reportUnknownArgumentType]
    out.add(source, key, 'must be a table of string values, e.g. { NAME = "value" }.')
    return None


def _str_list(value: Any, source: str, key: str, out: _Collector) -> tuple[str, ...] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):  # pyright: ignore[reportUnknownVariableType]
        items: list[str] = value  # pyright: ignore[reportUnknownVariableType]
        return tuple(items)
    out.add(source, key, 'must be a list of strings, e.g. ["--flag", "value"].')
    return None


def _timeout(entry: Mapping[str, Any], source: str, where: str, out: _Collector) -> float | None:
    value = entry.get("timeout_s")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 86400:
        out.add(source, f"{where}.timeout_s", "must be a number of seconds, 0 < s <= 86400.")
        return None
    return float(value)


def _mcp_entry(
    name: str, raw: Any, source: str, where: str, out: _Collector, *, strict: bool
) -> McpServerEntry | None:
    """One server from a TOML table (``strict``: unknown keys are problems) or an ``mcp.json`` entry."""
    if not isinstance(raw, Mapping):
        out.add(source, where, "must be a table with command/args/env or url/type/headers.")
        return None
    entry: Mapping[str, Any] = raw  # pyright: ignore[reportUnknownVariableType]
    if not strict and entry.get("disabled") is True:
        return None
    kind_raw = entry.get("type", entry.get("transport"))
    if kind_raw is None:
        kind_raw = "http" if "url" in entry else "stdio"
    if not strict and kind_raw in ("streamable-http", "streamableHttp"):
        kind_raw = "http"
    kind = _check_choice(kind_raw, MCP_TYPES, source, f"{where}.type", out)
    if kind is None:
        return None
    allowed = _STDIO_KEYS if kind == "stdio" else _HTTP_KEYS
    if strict:
        for key in entry:
            if key not in allowed:
                out.add(
                    source,
                    f"{where}.{key}",
                    f"unknown key for a {kind} server; allowed keys: {_allowed(allowed)}.",
                )
    if kind == "stdio":
        command = entry.get("command")
        if not isinstance(command, str) or not command:
            out.add(
                source,
                f"{where}.command",
                "a stdio server needs a command (or give url and type for a remote one).",
            )
            return None
        args = _str_list(entry.get("args", []), source, f"{where}.args", out)
        env = _str_map(entry.get("env", {}), source, f"{where}.env", out)
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            out.add(source, f"{where}.cwd", "must be a directory path string.")
            cwd = None
        if args is None or env is None:
            return None
        timeout = _timeout(entry, source, where, out)
        trusted = _trusted(entry, source, where, out)
        return McpServerEntry(
            name, "stdio", command, args, env, cwd, source=source, timeout_s=timeout, trusted=trusted
        )
    url = entry.get("url")
    checked = _check_url(url, source, f"{where}.url", out) if url is not None else None
    if url is None:
        out.add(source, f"{where}.url", f"an {kind} server needs a url.")
    headers = _str_map(entry.get("headers", {}), source, f"{where}.headers", out)
    if checked is None or headers is None:
        return None
    timeout = _timeout(entry, source, where, out)
    trusted = _trusted(entry, source, where, out)
    return McpServerEntry(
        name, kind, url=checked, headers=headers, source=source, timeout_s=timeout, trusted=trusted
    )


def _trusted(entry: Mapping[str, Any], source: str, where: str, out: _Collector) -> bool:
    value = entry.get("trusted", False)
    if not isinstance(value, bool):
        out.add(source, f"{where}.trusted", "must be true or false.")
        return False
    return value


@dataclass(slots=True)
class _Layer:
    """The settings one file contributed (``None``: not set there)."""

    source: str
    values: dict[str, Any] = field(default_factory=dict[str, Any])
    servers: dict[str, McpServerEntry] = field(default_factory=dict[str, McpServerEntry])
    base_dir: Path | None = None


def _read_toml(path: Path, base_dir: Path, out: _Collector) -> _Layer:
    source = str(path)
    layer = _Layer(source, base_dir=base_dir)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return layer
    except OSError as exc:
        out.add(source, "(file)", f"cannot be read ({exc.strerror}); fix its permissions or remove it.")
        return layer
    except UnicodeDecodeError:
        out.add(source, "(file)", "is not UTF-8 text; save it as UTF-8.")
        return layer
    except tomllib.TOMLDecodeError as exc:
        out.add(source, "(file)", f"is not valid TOML ({exc}); fix the syntax.")
        return layer
    for key, value in data.items():
        if key == "api_key":
            out.add(
                source,
                key,
                "secrets are not read from config files; set ACP_AGENT_API_KEY in the environment "
                "or put the key in a file and name it with api_key_file.",
            )
        elif key not in _TOP_KEYS:
            out.add(source, key, f"unknown key; allowed keys: {_allowed(_TOP_KEYS)}.")
        elif key == "provider":
            layer.values[key] = _check_choice(value, PROVIDERS, source, key, out)
        elif key == "default_mode":
            layer.values[key] = _check_choice(value, DEFAULT_MODES, source, key, out)
        elif key == "log_level":
            layer.values[key] = _check_choice(value, LOG_LEVELS, source, key, out)
        elif key == "base_url":
            layer.values[key] = _check_url(value, source, key, out)
        elif key in ("model", "api_key_file"):
            layer.values[key] = _check_str(value, source, key, out)
        elif key in ("sandbox", "network"):
            layer.values[key] = _check_choice(
                value, SANDBOX_MODES if key == "sandbox" else NETWORK_MODES, source, key, out
            )
        elif key in ("sandbox_writable", "sandbox_deny_read"):
            layer.values[key] = _str_list(value, source, key, out)
        elif key == "tools":
            _read_section(value, _TOOLS_KEYS, "tools", source, layer, out)
        elif key == "permissions":
            _read_section(value, _PERMISSIONS_KEYS, "permissions", source, layer, out)
        elif key == "mcp_servers":
            if not isinstance(value, Mapping):
                out.add(source, key, "must hold one table per server, e.g. [mcp_servers.files].")
                continue
            for name, raw in value.items():  # pyright: ignore[reportUnknownVariableType]
                server = _mcp_entry(str(name), raw, source, f"mcp_servers.{name}", out, strict=True)  # pyright: ignore[reportUnknownArgumentType]
                if server is not None:
                    layer.servers[server.name] = server
    layer.values = {k: v for k, v in layer.values.items() if v is not None}
    return layer


def _read_section(
    value: Any, keys: Sequence[str], section: str, source: str, layer: _Layer, out: _Collector
) -> None:
    if not isinstance(value, Mapping):
        out.add(source, section, f"must be a table ([{section}]) with keys: {_allowed(keys)}.")
        return
    table: Mapping[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
    for key, item in table.items():
        where = f"{section}.{key}"
        if key not in keys:
            out.add(source, where, f"unknown key; allowed keys in [{section}]: {_allowed(keys)}.")
        elif key == "shell_timeout_s":
            layer.values["shell_timeout_s"] = _check_timeout(item, source, where, out)
        elif key == "searxng_url":
            layer.values["searxng_url"] = _check_url(item, source, where, out)
        else:
            layer.values[f"permissions_{key}"] = _check_str(item, source, where, out)


def _read_mcp_json(path: Path, out: _Collector) -> dict[str, McpServerEntry]:
    source = str(path)
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except OSError as exc:
        out.add(source, "(file)", f"cannot be read ({exc.strerror}); fix its permissions or remove it.")
        return {}
    except ValueError as exc:
        out.add(source, "(file)", f"is not valid JSON ({exc}); fix the syntax.")
        return {}
    top: dict[str, Any] = data if isinstance(data, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    servers: Any = top.get("mcpServers")
    if not isinstance(servers, dict):
        out.add(
            source, "mcpServers", 'must be an object of servers by name: {"mcpServers": {"name": {...}}}.'
        )
        return {}
    found: dict[str, McpServerEntry] = {}
    for name, raw in servers.items():  # pyright: ignore[reportUnknownVariableType]
        entry = _mcp_entry(str(name), raw, source, f"mcpServers.{name}", out, strict=False)  # pyright: ignore[reportUnknownArgumentType]
        if entry is not None:
            found[entry.name] = entry
    return found


def _read_dir(directory: Path, out: _Collector) -> _Layer | None:
    toml_path = directory / "config.toml"
    json_path = directory / "mcp.json"
    if not toml_path.is_file() and not json_path.is_file():
        return None
    layer = _read_toml(toml_path, directory.parent, out)
    if not toml_path.is_file():
        layer.source = str(json_path)
    for name, server in _read_mcp_json(json_path, out).items():
        layer.servers.setdefault(name, server)
    return layer


def _resolve_path(value: str, base: Path, env: Mapping[str, str]) -> Path:
    if value == "~" or value.startswith("~/"):
        return _home_dir(env) / value[2:]
    path = Path(value)
    return path if path.is_absolute() else base / path


def _read_key_file(path: Path, source: str, out: _Collector) -> str | None:
    try:
        key = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        out.add(
            source, "api_key_file", f"{path} does not exist; create it holding only the key, or fix the path."
        )
        return None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        out.add(source, "api_key_file", f"{path} cannot be read ({reason}); fix its permissions or the path.")
        return None
    if not key:
        out.add(source, "api_key_file", f"{path} is empty; put the API key in it.")
        return None
    return key


def _check_setting(key: str, value: Any, source: str, name: str, out: _Collector) -> Any:
    """A flag or environment value, checked like the same key in a config file (``None``: rejected)."""
    if key == "provider":
        return _check_choice(value, PROVIDERS, source, name, out)
    if key == "default_mode":
        return _check_choice(value, DEFAULT_MODES, source, name, out)
    if key == "log_level":
        return _check_choice(str(value).lower(), LOG_LEVELS, source, name, out)
    if key in ("base_url", "searxng_url"):
        return _check_url(value, source, name, out)
    if key == "shell_timeout_s":
        return _check_timeout(value, source, name, out)
    if key in ("sandbox", "network"):
        return _check_choice(value, SANDBOX_MODES if key == "sandbox" else NETWORK_MODES, source, name, out)
    return value


def _flag_and_env_layers(
    flags: Mapping[str, Any], env: Mapping[str, str], out: _Collector
) -> tuple[dict[str, tuple[Any, str]], dict[str, tuple[Any, str]]]:
    """Flag and environment values, each checked, as ``key -> (value, source)``."""
    from_flags: dict[str, tuple[Any, str]] = {}
    for key, flag in _FLAG_NAMES.items():
        value = flags.get(key)
        if value is None or value == "":
            continue
        checked = _check_setting(key, value, "command line", flag, out)
        if checked is not None:
            from_flags[key] = (checked, f"flag {flag}")
    from_env: dict[str, tuple[Any, str]] = {}
    for key, names in _ENV.items():
        for name in names:
            value = env.get(name)
            if not value:
                continue
            checked = _check_setting(key, value, "environment", name, out)
            if checked is not None:
                from_env[key] = (checked, f"environment {name}")
            break
    return from_flags, from_env


def load_config(cwd: Path | str, flags: Mapping[str, Any], env: Mapping[str, str]) -> Config:
    """Resolve the configuration for a session in ``cwd``. Raises ``ConfigError`` listing every problem.

    ``flags`` holds the command-line values by setting name (``provider``, ``model``, ``base_url``,
    ``home``, ``log_level``, ``api_key_file``, ``default_mode``); ``None`` means not given.
    """
    out = _Collector()
    cwd_path = Path(cwd)
    from_flags, from_env = _flag_and_env_layers(flags, env, out)
    user_dir = user_config_dir(env)
    user_layer = _read_dir(user_dir, out)
    project_dir = find_project_config(cwd_path)
    project_layer = None
    if project_dir is not None and project_dir.resolve() != user_dir.resolve():
        project_layer = _read_dir(project_dir, out)
    file_layers = [layer for layer in (project_layer, user_layer) if layer is not None]

    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    keys = (
        "provider",
        "model",
        "base_url",
        "api_key_file",
        "default_mode",
        "log_level",
        "home",
        "shell_timeout_s",
        "searxng_url",
        "permissions_project_file",
        "permissions_user_file",
        "sandbox",
        "network",
    )
    for key in keys:
        if key in _NARROWEST:
            _narrowest(key, values, origins, from_flags, from_env, project_layer, user_layer)
            continue
        if key in from_flags:
            values[key], origins[key] = from_flags[key]
            continue
        if key in from_env:
            values[key], origins[key] = from_env[key]
            continue
        for layer in file_layers:
            if key in layer.values:
                values[key], origins[key] = layer.values[key], layer.source
                break

    if "base_url" not in values and values.get("provider") in ("openai", "openai-responses"):
        fallback = env.get("OPENAI_BASE_URL")
        if fallback:
            checked = _check_url(fallback, "environment", "OPENAI_BASE_URL", out)
            if checked is not None:
                values["base_url"], origins["base_url"] = checked, "environment OPENAI_BASE_URL"

    servers: dict[str, McpServerEntry] = {}
    for layer in reversed(file_layers):  # user first, project overrides by name
        # Only the user's own configuration can mark a server trusted (its annotations believed).
        own = layer is user_layer
        servers.update({n: s if own else replace(s, trusted=False) for n, s in layer.servers.items()})

    base_dir = project_dir.parent if project_dir is not None else cwd_path
    writable = [
        _resolve_path(p, base_dir, env)
        for p in (user_layer.values.get("sandbox_writable", ()) if user_layer else ())
    ]
    deny_read = [
        _resolve_path(p, base_dir, env)
        for layer in file_layers
        for p in layer.values.get("sandbox_deny_read", ())
    ]
    api_key, key_source = _api_key(values, origins, file_layers, cwd_path, env, out)
    project_root = project_dir.parent if project_dir is not None else None
    base = project_root or cwd_path
    project_file = values.get("permissions_project_file", ".acp-agent/permissions.jsonl")
    user_file = values.get("permissions_user_file")
    if out.problems:
        raise ConfigError(out.problems)
    home = _resolve_path(str(values.get("home", DEFAULT_HOME)), cwd_path, env)
    return Config(
        provider=values.get("provider"),
        model=values.get("model"),
        base_url=values.get("base_url"),
        api_key=api_key,
        api_key_source=key_source,
        default_mode=values.get("default_mode", "default"),
        log_level=values.get("log_level", "warning"),
        home=home,
        mcp_servers=tuple(servers[name] for name in sorted(servers)),
        shell_timeout_s=float(values.get("shell_timeout_s", DEFAULT_SHELL_TIMEOUT_S)),
        searxng_url=values.get("searxng_url"),
        sandbox=values.get("sandbox", "workspace-write"),
        network=values.get("network", "off"),
        sandbox_writable=tuple(writable),
        sandbox_deny_read=tuple(deny_read),
        permissions_project_file=_resolve_path(project_file, base, env),
        permissions_user_file=(
            _resolve_path(user_file, base, env) if user_file else user_config_dir(env) / "permissions.jsonl"
        ),
        project_root=project_root,
        files=tuple(
            Path(p)
            for d in (project_dir if project_layer is not None else None, user_dir if user_layer else None)
            if d is not None
            for p in (d / "config.toml", d / "mcp.json")
            if p.is_file()
        ),
        origins=origins,
    )


def _narrowest(
    key: str,
    values: dict[str, Any],
    origins: dict[str, str],
    from_flags: Mapping[str, tuple[Any, str]],
    from_env: Mapping[str, tuple[Any, str]],
    project: _Layer | None,
    user: _Layer | None,
) -> None:
    """``sandbox``/``network``: flags > environment > user file > default, then a project file's value
    only where it is narrower (a cloned repository cannot widen the sandbox)."""
    order = _NARROWEST[key]
    if key in from_flags:
        values[key], origins[key] = from_flags[key]
    elif key in from_env:
        values[key], origins[key] = from_env[key]
    elif user is not None and key in user.values:
        values[key], origins[key] = user.values[key], user.source
    current = values.get(key, order[1] if key == "sandbox" else order[0])
    wanted = project.values.get(key) if project is not None else None
    if wanted is not None and order.index(wanted) < order.index(current):
        values[key], origins[key] = wanted, project.source if project is not None else ""


def _api_key(
    values: Mapping[str, Any],
    origins: Mapping[str, str],
    layers: Sequence[_Layer],
    cwd: Path,
    env: Mapping[str, str],
    out: _Collector,
) -> tuple[str | None, str | None]:
    """The key from the environment, else from ``api_key_file`` (relative to the file that names it)."""
    provider = values.get("provider")
    names = ["ACP_AGENT_API_KEY"]
    if provider in ("openai", "openai-responses"):
        names.append("OPENAI_API_KEY")
    elif provider == "anthropic":
        names.append("ANTHROPIC_API_KEY")
    for name in names:
        if env.get(name):
            return env[name], f"environment {name}"
    key_file = values.get("api_key_file")
    if key_file is None:
        return None, None
    source = origins.get("api_key_file", "")
    base = cwd
    for layer in layers:
        if layer.source == source and layer.base_dir is not None:
            base = Path(source).parent
    path = _resolve_path(str(key_file), base, env)
    key = _read_key_file(path, source, out)
    return (key, str(path)) if key is not None else (None, None)


def missing_key_problem(config: Config) -> str | None:
    """One sentence when a hosted provider has no API key (local servers, with a ``base_url``, need none)."""
    if config.api_key is not None or config.base_url is not None:
        return None
    if config.provider in ("openai", "openai-responses"):
        var = "OPENAI_API_KEY"
    elif config.provider == "anthropic":
        var = "ANTHROPIC_API_KEY"
    else:
        return None
    return (
        f"provider {config.provider} has no API key: set ACP_AGENT_API_KEY (or {var}) in the environment, "
        "or name a file holding the key with api_key_file in config.toml."
    )
