"""What an MCP server is, as configured: stdio command, HTTP/SSE endpoint, or streams the host opens;
config file and ACP parsing."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..secrets import Secrets

__all__ = [
    "HttpConfig",
    "McpConfigError",
    "ServerConfig",
    "StdioConfig",
    "StreamConfig",
    "parse_acp_servers",
    "parse_mcp_config",
    "safe_env",
]


class McpConfigError(ValueError):
    """A server configuration (config file or ACP entry) that cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class StdioConfig:
    """A server run as a child process speaking JSON-RPC on its stdin/stdout."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    cwd: str | None = None

    @property
    def transport(self) -> Literal["stdio"]:
        return "stdio"


@dataclass(frozen=True, slots=True)
class HttpConfig:
    """A server reached over Streamable HTTP (``transport="http"``) or the older HTTP+SSE (``"sse"``)."""

    name: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    transport: Literal["http", "sse"] = "http"


@dataclass(frozen=True, slots=True)
class StreamConfig:
    """A server reached over streams the host opens: ``open()`` is an async context manager yielding the
    ``(read, write)`` streams of ``SessionMessage``s the mcp ``Client`` expects, as the SDK's transports
    do (a host's own transport, e.g. one tunnelled through its client connection)."""

    name: str
    open: Callable[[], AbstractAsyncContextManager[tuple[Any, Any]]] = field(compare=False, repr=False)

    @property
    def transport(self) -> Literal["streams"]:
        return "streams"


ServerConfig = StdioConfig | HttpConfig | StreamConfig

# What a stdio server inherits from us: enough to run (find binaries, locale, home), none of our secrets.
_SAFE_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
)


def safe_env(extra: Mapping[str, str] | None = None, secrets: Secrets | None = None) -> dict[str, str]:
    """The minimal base environment of a stdio server (``Secrets.child_env`` kept to ``_SAFE_ENV``: no
    credential, whatever its name), with ``extra`` (the env configured for the server) on top."""
    base = (secrets or Secrets.from_env(os.environ)).child_env(os.environ, keep=_SAFE_ENV)
    env = {k: v for k, v in base.items() if not v.startswith("()")}  # no exported bash functions
    env.update(extra or {})
    return env


def _str_map(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise McpConfigError(f"{where}: expected an object of strings, got {type(value).__name__}")
    out: dict[str, str] = {}
    for k, v in value.items():  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(v, str | int | float | bool):
            raise McpConfigError(f"{where}.{k}: expected a string")
        out[str(k)] = str(v)  # pyright: ignore[reportUnknownArgumentType]
    return out


def _name_value_list(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, list):
        raise McpConfigError(f"{where}: expected a list of {{name, value}}")
    out: dict[str, str] = {}
    for i, item in enumerate(value):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):  # pyright: ignore[reportUnknownMemberType]
            raise McpConfigError(f"{where}[{i}]: expected {{name, value}}")
        out[str(item["name"])] = str(item.get("value", ""))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    return out


def _args(value: Any, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise McpConfigError(f"{where}: expected a list of strings")
    return tuple(str(a) for a in value)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]


def _check_name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not name:
        raise McpConfigError(f"{where}: a server needs a non-empty name")
    return name


def parse_mcp_config(data: Mapping[str, Any], *, base_dir: Path | None = None) -> list[ServerConfig]:
    """Servers of a Claude-Desktop-style config: ``{"mcpServers": {"name": {"command", "args", "env", "cwd"}
    | {"type": "http"|"streamable-http"|"sse", "url", "headers"}}}``. Disabled entries
    (``"disabled": true``) are skipped. A relative ``cwd`` is taken from ``base_dir``."""
    servers = data.get("mcpServers")
    if servers is None:
        return []
    if not isinstance(servers, Mapping):
        raise McpConfigError("mcpServers: expected an object of servers by name")
    out: list[ServerConfig] = []
    for name, raw in servers.items():  # pyright: ignore[reportUnknownVariableType]
        where = f"mcpServers.{name}"
        name = _check_name(name, where)
        if not isinstance(raw, Mapping):
            raise McpConfigError(f"{where}: expected an object")
        entry: Mapping[str, Any] = raw  # pyright: ignore[reportUnknownVariableType]
        if entry.get("disabled") is True:
            continue
        kind = entry.get("type") or entry.get("transport")
        if "url" in entry or kind in ("http", "streamable-http", "streamableHttp", "sse"):
            url = entry.get("url")
            if not isinstance(url, str) or not url:
                raise McpConfigError(f"{where}: an http/sse server needs a url")
            t: Literal["http", "sse"] = "sse" if kind == "sse" else "http"
            out.append(HttpConfig(name, url, _str_map(entry.get("headers"), f"{where}.headers"), t))
            continue
        command = entry.get("command")
        if not isinstance(command, str) or not command:
            raise McpConfigError(f"{where}: a stdio server needs a command (or give a url)")
        cwd = entry.get("cwd")
        if cwd is not None:
            cwd_path = Path(str(cwd)).expanduser()
            if not cwd_path.is_absolute() and base_dir is not None:
                cwd_path = base_dir / cwd_path
            cwd = str(cwd_path)
        out.append(
            StdioConfig(
                name,
                command,
                _args(entry.get("args"), f"{where}.args"),
                _str_map(entry.get("env"), f"{where}.env"),
                cwd,
            )
        )
    return out


def read_mcp_config(path: str | Path) -> list[ServerConfig]:
    """Read and parse a config file (blocking: call it in a worker thread from async code)."""
    p = Path(path).expanduser()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as e:
        raise McpConfigError(f"{p}: {e}") from e
    if not isinstance(data, Mapping):
        raise McpConfigError(f"{p}: expected a JSON object")
    return parse_mcp_config(data, base_dir=p.parent)  # pyright: ignore[reportUnknownArgumentType]


def parse_acp_servers(entries: Sequence[Mapping[str, Any]]) -> list[ServerConfig]:
    """Servers of an ACP ``session/new`` ``mcpServers`` list: stdio entries have no ``type`` and carry
    ``name, command, args, env: [{name, value}]``; ``http``/``sse`` ones ``type, name, url, headers``."""
    out: list[ServerConfig] = []
    for i, entry in enumerate(entries):
        where = f"mcpServers[{i}]"
        name = _check_name(entry.get("name"), where)
        kind = entry.get("type")
        if kind in ("http", "sse"):
            url = entry.get("url")
            if not isinstance(url, str) or not url:
                raise McpConfigError(f"{where}: an {kind} server needs a url")
            t: Literal["http", "sse"] = "sse" if kind == "sse" else "http"
            out.append(HttpConfig(name, url, _name_value_list(entry.get("headers"), f"{where}.headers"), t))
        elif kind in (None, "stdio"):
            command = entry.get("command")
            if not isinstance(command, str) or not command:
                raise McpConfigError(f"{where}: a stdio server needs a command")
            out.append(
                StdioConfig(
                    name,
                    command,
                    _args(entry.get("args"), f"{where}.args"),
                    _name_value_list(entry.get("env"), f"{where}.env"),
                )
            )
        else:
            raise McpConfigError(f"{where}: unknown transport type {kind!r}")
    return out
