"""Configured MCP servers: ``[mcp_servers.<name>]`` tables (strict: unknown keys are problems) and the entries
of a Claude-Desktop-style ``mcp.json`` (lenient: ``disabled`` entries are skipped, other keys ignored)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..meta_keys import MCP_TIMEOUT_META
from ._checks import At, Choice, Problems, check_url, listed, str_list, str_map

__all__ = ["MCP_TIMEOUT_META", "MCP_TYPES", "McpServerEntry", "check_mcp_servers", "mcp_json_servers"]

MCP_TYPES: Final = ("stdio", "http", "sse")
"""``_meta`` key of an ``mcpServers`` entry (from the config, or an editor) setting its call timeout."""

_STDIO_KEYS: Final = ("type", "command", "args", "env", "cwd", "timeout_s", "trusted")
_HTTP_KEYS: Final = ("type", "url", "headers", "timeout_s", "trusted")


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
    headers: Mapping[str, str] = field(default_factory=dict[str, str], repr=False)
    source: str = ""
    timeout_s: float | None = None
    """Per-call timeout; None is the default (60 s)."""
    trusted: bool = False
    """``trusted = true`` in the user's own configuration: the server's tool annotations are believed
    (its ``readOnlyHint`` tools run as reads). Ignored from a project's file (``_files.read_dir``)."""

    def to_acp(self) -> dict[str, Any]:
        """The entry as an ACP ``session/new`` ``mcpServers`` item (a timeout rides in ``_meta``)."""
        if self.type == "stdio":
            out: dict[str, Any] = {
                "name": self.name,
                "command": self.command or "",
                "args": list(self.args),
                "env": [{"name": k, "value": v} for k, v in self.env.items()],
            }
            if self.cwd is not None:
                out["cwd"] = self.cwd
        else:
            out = {
                "type": self.type,
                "name": self.name,
                "url": self.url or "",
                "headers": [{"name": k, "value": v} for k, v in self.headers.items()],
            }
        if self.timeout_s is not None:
            out["_meta"] = {MCP_TIMEOUT_META: self.timeout_s}
        return out

    def describe(self) -> str:
        """What starting this server does, in one line (the trust request lists it)."""
        import shlex

        if self.type == "stdio":
            line = shlex.join([self.command or "", *self.args])
            env = f" with {', '.join(sorted(self.env))} set" if self.env else ""
            return f"runs `{line}`{env} (MCP server {self.name})"
        headers = f" sending headers {', '.join(sorted(self.headers))}" if self.headers else ""
        return f"connects to {self.url}{headers} (MCP server {self.name})"

    def fingerprint(self) -> dict[str, Any]:
        """Everything that decides what the server does (the trust digest covers it)."""
        return {**self.to_acp(), "cwd": self.cwd}


def _timeout(entry: Mapping[str, Any], at: At) -> float | None:
    value = entry.get("timeout_s")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 86400:
        at.sub("timeout_s").bad("must be a number of seconds, 0 < s <= 86400.")
        return None
    return float(value)


def _trusted(entry: Mapping[str, Any], at: At) -> bool:
    value = entry.get("trusted", False)
    if not isinstance(value, bool):
        at.sub("trusted").bad("must be true or false.")
        return False
    return value


def _entry(name: str, raw: Any, at: At, *, strict: bool) -> McpServerEntry | None:
    """One server from a TOML table (``strict``: unknown keys are problems) or an ``mcp.json`` entry."""
    if not isinstance(raw, Mapping):
        at.bad("must be a table with command/args/env or url/type/headers.")
        return None
    entry: Mapping[str, Any] = raw  # pyright: ignore[reportUnknownVariableType]
    if not strict and entry.get("disabled") is True:
        return None
    kind_raw = entry.get("type", entry.get("transport"))
    if kind_raw is None:
        kind_raw = "http" if "url" in entry else "stdio"
    if not strict and kind_raw in ("streamable-http", "streamableHttp"):
        kind_raw = "http"
    kind = Choice(*MCP_TYPES)(kind_raw, at.sub("type"))
    if kind is None:
        return None
    allowed = _STDIO_KEYS if kind == "stdio" else _HTTP_KEYS
    if strict:
        for key in entry:
            if key not in allowed:
                at.sub(key).bad(f"unknown key for a {kind} server; allowed keys: {listed(allowed)}.")
    if kind == "stdio":
        command = entry.get("command")
        if not isinstance(command, str) or not command:
            at.sub("command").bad("a stdio server needs a command (or give url and type for a remote one).")
            return None
        args = str_list(entry.get("args", []), at.sub("args"))
        env = str_map(entry.get("env", {}), at.sub("env"))
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            at.sub("cwd").bad("must be a directory path string.")
            cwd = None
        if args is None or env is None:
            return None
        timeout = _timeout(entry, at)
        trusted = _trusted(entry, at)
        return McpServerEntry(
            name, "stdio", command, args, env, cwd, source=at.source, timeout_s=timeout, trusted=trusted
        )
    url = entry.get("url")
    checked = check_url(url, at.sub("url")) if url is not None else None
    if url is None:
        at.sub("url").bad(f"an {kind} server needs a url.")
    headers = str_map(entry.get("headers", {}), at.sub("headers"))
    if checked is None or headers is None:
        return None
    timeout = _timeout(entry, at)
    trusted = _trusted(entry, at)
    return McpServerEntry(
        name, kind, url=checked, headers=headers, source=at.source, timeout_s=timeout, trusted=trusted
    )


def check_mcp_servers(value: Any, at: At) -> dict[str, McpServerEntry] | None:
    """``[mcp_servers.<name>]`` tables of a ``config.toml``."""
    if not isinstance(value, Mapping):
        at.bad("must hold one table per server, e.g. [mcp_servers.files].")
        return None
    servers: dict[str, McpServerEntry] = {}
    for name, raw in value.items():  # pyright: ignore[reportUnknownVariableType]
        server = _entry(str(name), raw, at.sub(str(name)), strict=True)  # pyright: ignore[reportUnknownArgumentType]
        if server is not None:
            servers[server.name] = server
    return servers


def mcp_json_servers(text: str, source: str, out: Problems) -> dict[str, McpServerEntry]:
    """The servers of an ``mcp.json``'s ``text`` (``_files`` reads the file; ``source``: its path)."""
    try:
        data: Any = json.loads(text)
    except (ValueError, RecursionError) as exc:
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
    at = At(source, "mcpServers", out)
    for name, raw in servers.items():  # pyright: ignore[reportUnknownVariableType]
        entry = _entry(str(name), raw, at.sub(str(name)), strict=False)  # pyright: ignore[reportUnknownArgumentType]
        if entry is not None:
            found[entry.name] = entry
    return found
