"""Answering ``initialize`` before the rest of the agent is imported.

An editor spawns the agent for every thread and waits for the ``initialize`` answer. The answer needs
nothing but the client's message and the configuration, so the process takes its stdio fds, reads the first
line with plain blocking ``os.read`` and, when it is a well-formed ``initialize``, answers it at once; anyio,
pydantic and the harness are imported afterwards, while the client reads the answer. Anything else about
the first line (bad JSON, a batch, another method, invalid params) is left to the connection, which answers
it as usual.

When the next line is a plain ``session/new`` (and a model is configured), it is answered here too, from
the configuration and the cached model list (``opening``: the coding agent's ``EarlyOpening``, the same
functions its sessions answer with): an editor opening a thread sends ``initialize``, then ``session/new``
as soon as it has the answer, and waits for both. The session is built when the rest is imported
(``acp_agent.session._opening.EarlySession`` adopts it, before any later request is served; what it finds different
from this answer is sent as updates). Anything unusual about that line (MCP servers or directories of an
unexpected shape, a missing folder, a configuration with problems) leaves it to the connection. While the
rest is imported after that answer, ``EofWatch`` waits for the next input: an end of input right away (an
editor closing the thread it just opened) ends the process then, the session being on disk. Standard
library only.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import sys
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from . import __version__, _ending

__all__ = [
    "AUTH_METHOD_ID",
    "PROMPT_CAPABILITIES",
    "PROTOCOL_VERSION",
    "EarlyOpened",
    "EarlyStart",
    "EofWatch",
    "Opening",
    "advertised",
    "claim_stdio",
    "early_start",
    "initialize_result",
    "new_session_id",
    "record_session",
]

PROTOCOL_VERSION: Final = 1
AUTH_METHOD_ID: Final = "configure-model"
SETUP_METHOD_ID: Final = "setup"
"""The ``terminal`` auth method: the client runs ``acp-harness-agent setup`` in a terminal."""
PROMPT_CAPABILITIES: Final[Mapping[str, bool]] = MappingProxyType(
    {"image": True, "audio": False, "embeddedContext": True}
)
"""The prompt blocks the agent takes beyond text and resource links: advertised by ``initialize``, and
``session/prompt`` refuses the others."""
_READ_SIZE = 256 * 1024
NEXT_LINE_WAIT_S: Final = 0.1
"""How long the first ``session/new`` is waited for once ``initialize`` is answered (an editor sends it as
soon as it reads the answer); then the rest is imported whatever comes."""

Opening = Callable[[Path, Mapping[str, Any]], "dict[str, Any] | None"]
"""``(cwd, clientCapabilities) -> {"modes", "configOptions"}`` of a new session there, or None when it
cannot be said before the agent is imported."""


@dataclass(frozen=True, slots=True)
class EarlyOpened:
    """A ``session/new`` answered early: its request id and params, the session id, and the answer's state
    (``modes``, ``configOptions``)."""

    request_id: int | str
    params: dict[str, Any]
    session_id: str
    state: dict[str, Any]


@dataclass(frozen=True, slots=True)
class EarlyStart:
    """The protocol fds, the bytes read but not consumed, the ``initialize`` params if answered, and the
    ``session/new`` answered after it, if one was."""

    in_fd: int
    out_fd: int
    pending: bytes
    initialized: dict[str, Any] | None
    opened: EarlyOpened | None = None
    watch: EofWatch | None = None
    """Watches the input while the rest is imported, after a ``session/new`` answered here."""

    def claimed(self) -> EarlyStart:
        """This start with the watch stopped (call it before anything but imports is done: until then the
        watch may end the process) and what it read put before the pending input."""
        if self.watch is None:
            return self
        return replace(self, pending=self.pending + self.watch.stop(), watch=None)


class EofWatch:
    """A daemon thread that waits for the input after an early ``session/new`` answer while the main
    thread imports the rest (``select``, in short slices so ``stop`` ends it soon). The first bytes are
    kept for the connection. An end of input with nothing before it, when the answered session is on disk
    as its build would store it (``session_complete``) and ``may_exit``, ends the process at once: nothing
    else was promised, the main thread has only imported since, and an editor closing a thread it just
    opened should not wait for that. Standard library only."""

    _SLICE_S: Final = 0.02

    def __init__(self, fd: int, session_complete: bool, may_exit: bool) -> None:
        self._fd = fd
        self._exit = session_complete and may_exit
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._read: list[bytes] = []
        self._thread = threading.Thread(target=self._run, name="acp-agent-early-eof", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if not select.select([self._fd], [], [], self._SLICE_S)[0]:
                    continue
                chunk = os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                continue
            except (OSError, ValueError):
                return  # the connection's own read says what is wrong
            if chunk:
                self._read.append(chunk)
                return
            with self._lock:  # (not once ``stop`` began: the main thread is past its imports)
                if self._exit and not self._stop.is_set():
                    os._exit(0)
            return  # a pipe's end stays: the connection reads it again

    def stop(self) -> bytes:
        with self._lock:
            self._stop.set()
        self._thread.join()
        return b"".join(self._read)


def advertised(capabilities: Any, *path: str) -> bool:
    """``advertised(caps, "fs", "readTextFile")``: whether ``capabilities`` (a client's, as sent) has that
    capability (present, and not ``false`` or ``null``)."""
    node: Any = capabilities
    for key in path:
        if not isinstance(node, Mapping):
            return False
        mapping: Mapping[str, Any] = node  # pyright: ignore[reportUnknownVariableType]
        node = mapping.get(key)
    return node is not None and node is not False


def new_session_id() -> str:
    return f"sess_{uuid.uuid4().hex}"


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
                "title": {},
                "archive": {},
                "status": {},
                "systemPrompt": {"mode": {"override": {}}},
            },
            "providers": {},
            "auth": {"logout": {}, "status": {}},
        },
        "authMethods": auth_methods,
        "agentInfo": {"name": "acp-harness-agent", "title": "ACP Harness Agent", "version": __version__},
        # ``_session/steering`` (``acp_agent.session._steering``), advertised as claude-agent-acp does.
        "_meta": {"steering": {"supported": True}},
    }


def _auth_methods(caps: Any, how_to_configure: str) -> list[dict[str, Any]]:
    """With terminal auth (``auth.terminal``, or Zed's ``_meta["terminal-auth"]``), ``acp-harness-agent setup`` in the
    client's terminal; else the explanation of how to configure a model."""
    c: dict[str, Any] = caps if isinstance(caps, dict) else {}  # pyright: ignore[reportUnknownVariableType]
    auth: Any = c.get("auth")
    meta: Any = c.get("_meta")
    terminal = (isinstance(auth, dict) and auth.get("terminal") is True) or (  # pyright: ignore[reportUnknownMemberType]
        isinstance(meta, dict) and meta.get("terminal-auth") is True  # pyright: ignore[reportUnknownMemberType]
    )
    if not terminal:
        # Typed "agent" outright (the default when absent): the ACP registry's check looks for the type.
        return [
            {
                "type": "agent",
                "id": AUTH_METHOD_ID,
                "name": "Configure a model",
                "description": how_to_configure,
            }
        ]
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
                    "label": "acp-harness-agent setup",
                    "command": sys.executable,
                    "args": ["-m", "acp_agent", "setup"],
                    "env": {},
                }
            },
        }
    ]


def early_start(
    *,
    configured: bool,
    how_to_configure: str,
    opening: Opening | None = None,
    read: bytes = b"",
    sessions: Path | None = None,
    exit_on_end: bool = False,
) -> EarlyStart:
    """Claim stdio, read the first line, answer it when it is ``initialize``, and then the next when it
        is a ``session/new`` that ``opening`` can answer (see the module docstring). ``read``: input already
        taken from stdin (a line typed in a terminal, ``acp_agent._by_hand``). ``sessions``: the folder of the
        session store, where a session answered here is written before the answer (``record_session``). ``exit_on_end``: the process may
    end at once when the input ends right after that answer (``EofWatch``; the process entry point only)."""
    in_fd, out_fd = claim_stdio()
    data = read if b"\n" in read else read + _read_line(in_fd)
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
    _answer(out_fd, request["id"], result)
    answered: dict[str, Any] = params  # initialize_result checked it is an object
    start = EarlyStart(in_fd, out_fd, rest, answered)
    if opening is None or not configured:
        return start
    return _open_early(start, opening, sessions, exit_on_end)


def _answer(fd: int, request_id: Any, result: dict[str, Any]) -> None:
    answer = {"jsonrpc": "2.0", "id": request_id, "result": result}
    encoded = (json.dumps(answer, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    try:
        _write_all(fd, encoded)
    except OSError:
        pass  # the client went away; the connection will see it at its first write


def _open_early(
    start: EarlyStart, opening: Opening, sessions: Path | None = None, exit_on_end: bool = False
) -> EarlyStart:
    """Answer the next line when it is a ``session/new`` that ``opening`` can answer (``start`` with the
    bytes read so far otherwise)."""
    data = start.pending
    if b"\n" not in data:
        data += _read_line(start.in_fd, timeout=NEXT_LINE_WAIT_S)
    line, newline, rest = data.partition(b"\n")
    plain = _plain_new_session(line) if newline else None
    state = None
    if plain is not None:
        caps = _as_mapping((start.initialized or {}).get("clientCapabilities"))
        try:
            state = opening(Path(plain[1]["cwd"]), caps)
        except Exception:  # the connection's own session/new will say what is wrong
            state = None
    if plain is None or state is None:
        return replace(start, pending=data)
    request_id, params = plain
    session_id = new_session_id()
    if sessions is not None and not record_session(sessions, session_id, params):
        return replace(start, pending=data)  # not on disk: the connection answers it (and says why)
    _ending.hold()  # announced from here: a SIGTERM now ends the process only once the session is written
    _answer(start.out_fd, request_id, {"sessionId": session_id, **state})
    opened = EarlyOpened(request_id, params, session_id, state)
    watch = None
    if not rest and not os.isatty(start.in_fd):  # (a terminal's end of input is no lasting state)
        # Complete: the record is what the build would store, MCP servers aside (the build keeps them).
        watch = EofWatch(start.in_fd, not params.get("mcpServers"), exit_on_end)
    return replace(start, pending=rest, opened=opened, watch=watch)


def record_session(sessions: Path, session_id: str, params: Mapping[str, Any]) -> bool:
    """Write the meta of a session about to be answered here, as the connection's ``session/new`` writes
    one before its answer (``SessionStore.create_sync``: ``meta.json`` in its folder, created exclusively,
    not fsync'd; the same keys, a test pins them): a kill of the process after the answer must not lose a
    session the client was told of. Its build rewrites it with the MCP servers as kept, or removes it.
    False when it cannot be written."""
    from datetime import UTC, datetime

    now = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    dirs: Any = params.get("additionalDirectories") or []
    meta = {
        "id": session_id,
        "cwd": os.path.normpath(str(params["cwd"])),
        "title": None,
        "titleSource": None,
        "archived": False,
        "createdAt": now,
        "updatedAt": now,
        "additionalDirectories": [os.path.normpath(str(d)) for d in dirs],
        "mcpServers": [],
    }
    directory = sessions / session_id
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / "meta.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            _write_all(fd, json.dumps(meta, ensure_ascii=False, indent=1).encode())
        finally:
            os.close(fd)
    except OSError:
        return False
    return True


def _as_mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


_SERVER_KEYS: Final = {
    "stdio": ({"name", "command", "args", "env", "type"}, ("name", "command")),
    "http": ({"name", "type", "url", "headers"}, ("name", "url")),
    "sse": ({"name", "type", "url", "headers"}, ("name", "url")),
}


def _plain_new_session(line: bytes) -> tuple[int | str, dict[str, Any]] | None:
    """``(id, params)`` of a ``session/new`` request whose params are of the plain shape an editor sends
    (an existing absolute folder, MCP servers and directories of the protocol's shapes); else None."""
    try:
        message: Any = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict):
        return None
    request: dict[str, Any] = message  # pyright: ignore[reportUnknownVariableType]
    ident = request.get("id")
    if request.get("jsonrpc") != "2.0" or request.get("method") != "session/new":
        return None
    if not isinstance(ident, int | str) or isinstance(ident, bool):
        return None
    params = _as_mapping(request.get("params"))
    if set(params) - {"cwd", "mcpServers", "additionalDirectories"}:
        return None
    dirs: Any = params.get("additionalDirectories", [])
    folders = [params.get("cwd"), *(dirs if isinstance(dirs, list) else [None])]  # pyright: ignore[reportUnknownVariableType]
    if not all(isinstance(d, str) and os.path.isabs(d) and os.path.isdir(d) for d in folders):  # pyright: ignore[reportUnknownVariableType]
        return None
    servers: Any = params.get("mcpServers")
    if not isinstance(servers, list) or not all(_plain_server(s) for s in servers):  # pyright: ignore[reportUnknownVariableType]
        return None
    return ident, params


def _plain_server(server: Any) -> bool:
    if not isinstance(server, dict):
        return False
    entry: dict[str, Any] = server  # pyright: ignore[reportUnknownVariableType]
    kind = entry.get("type", "stdio")
    shape = _SERVER_KEYS.get(kind) if isinstance(kind, str) else None
    if shape is None:
        return False
    allowed, required = shape
    if set(entry) - allowed or not all(isinstance(entry.get(k), str) for k in required):
        return False
    if kind == "stdio":
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):  # pyright: ignore[reportUnknownVariableType]
            return False
        return _pairs(entry.get("env", []))
    return _pairs(entry.get("headers", []))


def _pairs(value: Any) -> bool:
    """A list of ``{"name", "value"}`` string pairs (environment variables, headers)."""
    return isinstance(value, list) and all(
        isinstance(p, dict) and set(p) == {"name", "value"} and all(isinstance(v, str) for v in p.values())  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        for p in value  # pyright: ignore[reportUnknownVariableType]
    )


def _read_line(fd: int, timeout: float | None = None) -> bytes:
    """Blocking reads until a newline or EOF (nothing else runs yet, so blocking is right here), or until
    ``timeout`` seconds pass without input."""
    chunks: list[bytes] = []
    while True:
        if timeout is not None and not select.select([fd], [], [], timeout)[0]:
            break
        try:
            chunk = os.read(fd, _READ_SIZE)
        except BlockingIOError:  # an fd a parent left non-blocking
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
            select.select([], [fd], [])
            continue
        view = view[written:]
