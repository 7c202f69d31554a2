"""The editor as file system and terminal: ``fs/read_text_file``, ``fs/write_text_file`` and ``terminal/*``.

Each is used only when the client advertised it. The editor's word on a file is final: when it answers
with an error the tool fails with the editor's message (the user rejected the edit, the buffer could not
be saved), and after a timeout or a closed connection the disk is not touched either (the editor may
still write the file). Two answers send the tools to the local disk instead: "method not found" (the
client advertised ``fs`` but does not implement it: the disk from then on) and "resource not found"
(-32002, what Zed answers for a path outside its project, e.g. an ``additionalDirectories`` folder).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import anyio

from harness.secrets import Secrets
from harness.tools import LocalFileSystem

from ..protocol.errors import METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, ConnectionClosedError, RpcError

if TYPE_CHECKING:
    from harness.tools import CommandRequest, OutputSink

    from ..session._setup import SessionEnvironment, SessionHandle, ToolDisplay

__all__ = ["EditorFileError", "EditorFileSystem", "EditorTerminalRunner"]

log = logging.getLogger(__name__)

FS_TIMEOUT_S: Final = 30.0
TERMINAL_OUTPUT_LIMIT: Final = 1_000_000
POLL_S: Final = 0.25


class EditorFileError(OSError):
    """The editor refused a read or write, did not answer in time, or went away; the message says which
    (with the editor's own words) and the tool fails with it."""


class EditorFileSystem:
    """A ``harness.tools.FileSystem`` over the client's ``fs/*`` methods (see the module docstring)."""

    def __init__(
        self, env: SessionEnvironment, *, read: bool | None = None, write: bool | None = None
    ) -> None:
        self._env = env
        self._disk = LocalFileSystem()
        self.read_via_editor = env.client_can("fs", "readTextFile") if read is None else read
        self.write_via_editor = env.client_can("fs", "writeTextFile") if write is None else write
        self.fallbacks = 0
        """How many times the editor sent a path to the disk (tests and logs read it)."""

    async def read_text(self, path: Path) -> str:
        # A file the disk does not have is missing for the tools (a new file has no buffer worth reading).
        if not self.read_via_editor or not await anyio.Path(path).is_file():
            return await self._disk.read_text(path)
        try:
            result = await self._request("fs/read_text_file", {"path": str(path)}, "read")
        except _ToDisk:
            return await self._disk.read_text(path)
        content = _obj(result).get("content")
        if not isinstance(content, str):
            raise EditorFileError("the editor answered fs/read_text_file without the file's text")
        return content

    async def write_text(self, path: Path, text: str) -> None:
        if not self.write_via_editor:
            await self._disk.write_text(path, text)
            return
        made = await _make_parents(anyio.Path(path).parent)
        try:
            await self._request("fs/write_text_file", {"path": str(path), "content": text}, "write")
        except _ToDisk:
            await self._disk.write_text(path, text)
        except BaseException:
            await _remove_dirs(made)
            raise

    async def _request(self, method: str, params: dict[str, Any], verb: str) -> Any:
        """The editor's answer; ``_ToDisk`` when the disk should serve it, else ``EditorFileError``."""
        try:
            return await self._env.connection.request(
                method, {"sessionId": self._env.session_id, **params}, timeout=FS_TIMEOUT_S
            )
        except TimeoutError:
            done = "read from" if verb == "read" else "written to"
            raise EditorFileError(
                f"the editor did not answer {method} within {FS_TIMEOUT_S:.0f} s; nothing was {done} "
                "the disk instead"
            ) from None
        except ConnectionClosedError:
            raise EditorFileError(f"the editor went away before answering {method}") from None
        except RpcError as exc:
            if exc.code == METHOD_NOT_FOUND:
                log.info("the editor does not implement %s; using the disk from now on", method)
                if verb == "read":
                    self.read_via_editor = False
                else:
                    self.write_via_editor = False
            elif exc.code != RESOURCE_NOT_FOUND:
                raise EditorFileError(f"the editor refused to {verb} the file: {exc.message}") from None
            self.fallbacks += 1
            log.info("%s %s: the editor answered %s; using the disk", method, params["path"], exc.code)
            raise _ToDisk() from None


class _ToDisk(Exception):
    """The editor sent this path to the disk (method not found, outside its project)."""


async def _make_parents(directory: anyio.Path) -> list[anyio.Path]:
    """Create ``directory`` and its missing parents; the ones created, deepest last."""
    missing: list[anyio.Path] = []
    while not await directory.exists() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    for d in reversed(missing):
        await d.mkdir(exist_ok=True)
    return list(reversed(missing))


async def _remove_dirs(made: list[anyio.Path]) -> None:
    """Remove the (still empty) directories ``_make_parents`` created, deepest first."""
    with anyio.CancelScope(shield=True):
        for d in reversed(made):
            try:
                await d.rmdir()
            except OSError:
                return


class EditorTerminalRunner:
    """A ``harness.tools.CommandRunner`` over ``terminal/*``: the terminal is embedded in the tool call.

    ``terminal/create`` (``bash -c``), then the terminal goes into the call's content and its output is
    polled for the model while ``terminal/wait_for_exit`` waits; on cancellation (cancel, timeout)
    ``terminal/kill``; ``terminal/release`` always."""

    def __init__(
        self, env: SessionEnvironment, display: ToolDisplay, session: Any, secrets: Secrets | None = None
    ) -> None:
        self._env = env
        self._display = display
        self._session: Any = session
        """Holds the ``SessionHandle`` once bound (``.handle``)."""
        self._secrets = secrets or Secrets.from_env(os.environ)

    async def run(self, request: CommandRequest, output: OutputSink) -> int | None:
        conn = self._env.connection
        sid = self._env.session_id
        # The editor starts the terminal with its own environment: blank the credentials this agent holds.
        extra = {k: v for k, v in request.env.items() if k not in self._secrets.names}
        merged = {**self._secrets.masked_env(), **extra}
        env_vars = [{"name": k, "value": v} for k, v in merged.items()]
        command = await _sandboxed(request)
        try:
            created = await conn.request(
                "terminal/create",
                {
                    "sessionId": sid,
                    "command": "bash",
                    "args": ["-c", command],
                    "cwd": str(request.cwd),
                    "env": env_vars,
                    "outputByteLimit": TERMINAL_OUTPUT_LIMIT,
                },
                timeout=FS_TIMEOUT_S,
            )
        except (RpcError, TimeoutError) as exc:  # ConnectionClosedError is an RpcError
            raise OSError(f"the editor could not start a terminal: {exc}") from exc
        terminal_id = str(_obj(created).get("terminalId") or "")
        if not terminal_id:
            raise OSError("the editor answered terminal/create without a terminalId")
        if request.call_id:
            self._display.terminals[request.call_id] = terminal_id
            await self._embed(request.call_id, terminal_id)
        ids = {"sessionId": sid, "terminalId": terminal_id}
        seen = 0
        exited = False
        status: Any = None
        try:
            code: int | None = None
            async with anyio.create_task_group() as tg:

                async def poll() -> None:
                    nonlocal seen
                    while True:
                        await anyio.sleep(POLL_S)
                        seen = await self._pump(ids, seen, output)

                tg.start_soon(poll)
                status = await conn.request("terminal/wait_for_exit", ids)
                exited = True
                tg.cancel_scope.cancel()
            seen = await self._pump(ids, seen, output)
            code = _exit_code(status)
            return code
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                if not exited:
                    await _quietly(conn.request("terminal/kill", ids, timeout=5))
                await _quietly(conn.request("terminal/release", ids, timeout=5))

    async def _embed(self, call_id: str, terminal_id: str) -> None:
        from ..protocol.models import TerminalToolCallContent, ToolCallProgress

        handle: SessionHandle | None = getattr(self._session, "handle", None)
        if handle is None:
            return
        await handle.send_update(
            ToolCallProgress(tool_call_id=call_id, content=[TerminalToolCallContent(terminal_id=terminal_id)])
        )

    async def _pump(self, ids: dict[str, str], seen: int, output: OutputSink) -> int:
        try:
            answer = await self._env.connection.request("terminal/output", ids, timeout=FS_TIMEOUT_S)
        except (RpcError, TimeoutError) as exc:  # ConnectionClosedError is an RpcError too
            log.debug("terminal/output failed: %s", exc)
            return seen
        text = _obj(answer).get("output")
        if not isinstance(text, str):
            return seen
        if len(text) < seen:  # the editor cut the start (outputByteLimit): take what is new from its end
            seen = 0
        if len(text) > seen:
            await output(text[seen:])
        return len(text)


async def _sandboxed(request: CommandRequest) -> str:
    """The command line to send: wrapped by the sandbox launcher when the request carries a policy."""
    if request.sandbox is None or not request.sandbox.enabled:
        return request.command
    from harness.sandbox import wrap_command_line

    policy = request.sandbox
    return await anyio.to_thread.run_sync(lambda: wrap_command_line(request.command, policy))


async def _quietly(request: Any) -> None:
    try:
        await request
    except (RpcError, TimeoutError) as exc:  # ConnectionClosedError is an RpcError
        log.debug("terminal clean-up request failed: %s", exc)


_SIGNALS = {"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGKILL": 9, "SIGTERM": 15, "SIGPIPE": 13}


def _exit_code(status: Any) -> int | None:
    code = _obj(status).get("exitCode")
    if isinstance(code, int):
        return code
    signal = _obj(status).get("signal")
    if isinstance(signal, str):
        return -_SIGNALS.get(signal.upper(), 15)
    return None


def _obj(value: Any) -> dict[str, Any]:
    """``value`` as a JSON object (``{}`` when it is not one)."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}
