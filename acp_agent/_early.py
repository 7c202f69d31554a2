"""Answering ``initialize`` before the rest of the agent is imported.

An editor spawns the agent for every thread and waits for the ``initialize`` answer. The answer needs
nothing but the client's message and the configuration, so the process takes its stdio fds, reads the first
line with plain blocking ``os.read`` and, when it is a well-formed ``initialize``, answers it at once; anyio,
pydantic and the harness are imported afterwards, while the client reads the answer. Anything else about
the first line (bad JSON, a batch, another method, invalid params) is left to the connection, which answers
it as usual. Standard library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from . import __version__

__all__ = [
    "AUTH_METHOD_ID",
    "PROMPT_CAPABILITIES",
    "PROTOCOL_VERSION",
    "EarlyStart",
    "claim_stdio",
    "early_start",
    "initialize_result",
]

PROTOCOL_VERSION: Final = 1
AUTH_METHOD_ID: Final = "configure-model"
SETUP_METHOD_ID: Final = "setup"
"""The ``terminal`` auth method: the client runs ``acp-agent setup`` in a terminal."""
PROMPT_CAPABILITIES: Final[Mapping[str, bool]] = MappingProxyType(
    {"image": True, "audio": False, "embeddedContext": True}
)
"""The prompt blocks the agent takes beyond text and resource links: advertised by ``initialize``, and
``session/prompt`` refuses the others."""
_READ_SIZE = 256 * 1024


@dataclass(frozen=True, slots=True)
class EarlyStart:
    """The protocol fds, the bytes read but not consumed, and the ``initialize`` params if answered."""

    in_fd: int
    out_fd: int
    pending: bytes
    initialized: dict[str, Any] | None


def claim_stdio() -> tuple[int, int]:
    """Take fds 0 and 1 for the protocol: fd 1 is duplicated for the protocol output and fd 2 copied onto
    it (stray prints and child output go to stderr); fd 0 is duplicated for the protocol input and
    ``/dev/null`` put in its place (a child process cannot swallow protocol input). The new fds are
    close-on-exec (``os.dup``'s default)."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    out_fd = os.dup(1)
    in_fd = os.dup(0)
    os.dup2(2, 1)
    null_fd = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null_fd, 0)
    finally:
        os.close(null_fd)
    return in_fd, out_fd


def initialize_result(params: Any, *, configured: bool, how_to_configure: str) -> dict[str, Any]:
    """The ``initialize`` result for ``params``; ``ValueError`` (its message for -32602) when invalid."""
    if not isinstance(params, dict):
        raise ValueError("invalid params: expected an object")
    p: dict[str, Any] = params  # pyright: ignore[reportUnknownVariableType]
    if "protocolVersion" not in p:
        raise ValueError("invalid params: protocolVersion: field required")
    version = p["protocolVersion"]
    if not isinstance(version, int) or isinstance(version, bool) or not 0 <= version <= 65535:
        raise ValueError("invalid params: protocolVersion: must be an integer from 0 to 65535")
    caps = p.get("clientCapabilities")
    if caps is not None and not isinstance(caps, dict):
        raise ValueError("invalid params: clientCapabilities: expected an object")
    auth_methods = [] if configured else _auth_methods(caps, how_to_configure)
    return {
        "protocolVersion": PROTOCOL_VERSION,  # we speak v1, whatever the client asked for
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": dict(PROMPT_CAPABILITIES),
            "mcpCapabilities": {"http": True, "sse": True, "acp": True},
            "sessionCapabilities": {
                "list": {},
                "resume": {},
                "close": {},
                "delete": {},
                "additionalDirectories": {},
                "fork": {},
            },
            "providers": {},
        },
        "authMethods": auth_methods,
        "agentInfo": {"name": "acp-agent", "title": "ACP Agent", "version": __version__},
    }


def _auth_methods(caps: Any, how_to_configure: str) -> list[dict[str, Any]]:
    """With terminal auth (``auth.terminal``, or Zed's ``_meta["terminal-auth"]``), ``acp-agent setup`` in the
    client's terminal; else the explanation of how to configure a model."""
    c: dict[str, Any] = caps if isinstance(caps, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    auth: Any = c.get("auth")
    meta: Any = c.get("_meta")
    terminal = (isinstance(auth, dict) and auth.get("terminal") is True) or (  # pyright: ignore[reportUnknownMemberType]
        isinstance(meta, dict) and meta.get("terminal-auth") is True  # pyright: ignore[reportUnknownMemberType]
    )
    if not terminal:
        return [{"id": AUTH_METHOD_ID, "name": "Configure a model", "description": how_to_configure}]
    return [
        {
            "type": "terminal",
            "id": SETUP_METHOD_ID,
            "name": "Set up a model",
            "description": "Choose the provider, the key or server, and the model, in a terminal",
            "args": ["setup"],
            # Zed before the terminal type was stable reads this instead (its own command line).
            "_meta": {
                "terminal-auth": {
                    "label": "acp-agent setup",
                    "command": sys.executable,
                    "args": ["-m", "acp_agent", "setup"],
                    "env": {},
                }
            },
        }
    ]


def early_start(*, configured: bool, how_to_configure: str) -> EarlyStart:
    """Claim stdio, read the first line, answer it when it is ``initialize`` (see the module docstring)."""
    in_fd, out_fd = claim_stdio()
    data = _read_line(in_fd)
    line, newline, rest = data.partition(b"\n")
    if not newline:
        return EarlyStart(in_fd, out_fd, data, None)  # EOF inside the first line: the connection decides
    try:
        message = json.loads(line)
    except ValueError:
        return EarlyStart(in_fd, out_fd, data, None)
    if not (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"  # pyright: ignore[reportUnknownMemberType]
        and message.get("method") == "initialize"  # pyright: ignore[reportUnknownMemberType]
        and isinstance(message.get("id"), int | str)  # pyright: ignore[reportUnknownMemberType]
        and not isinstance(message.get("id"), bool)  # pyright: ignore[reportUnknownMemberType]
    ):
        return EarlyStart(in_fd, out_fd, data, None)
    request: dict[str, Any] = message  # pyright: ignore[reportUnknownVariableType]
    params: Any = request.get("params")
    try:
        result = initialize_result(params, configured=configured, how_to_configure=how_to_configure)
    except ValueError:
        return EarlyStart(in_fd, out_fd, data, None)
    answer = {"jsonrpc": "2.0", "id": request["id"], "result": result}
    encoded = (json.dumps(answer, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    try:
        _write_all(out_fd, encoded)
    except OSError:
        pass  # the client went away; the connection will see it at its first write
    answered: dict[str, Any] = params  # initialize_result checked it is an object
    return EarlyStart(in_fd, out_fd, rest, answered)


def _read_line(fd: int) -> bytes:
    """Blocking reads until a newline or EOF (nothing else runs yet, so blocking is right here)."""
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, _READ_SIZE)
        except BlockingIOError:  # an fd a parent left non-blocking
            import select

            select.select([fd], [], [])
            continue
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
        if b"\n" in chunk:
            break
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
        except BlockingIOError:
            import select

            select.select([], [fd], [])
            continue
        view = view[written:]
