"""The editor as file system and terminal: ``fs/read_text_file``, ``fs/write_text_file`` and ``terminal/*``.

Each is used only when the client advertised it. A path the editor refuses (Zed answers -32002 outside its
project) falls back to the local disk, so the tools behave the same, only without the editor's buffers.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast

import anyio

from harness.tools import LocalFileSystem

from ..protocol.errors import RpcError

if TYPE_CHECKING:
    from harness.tools import CommandRequest, OutputSink

    from ..session._setup import SessionEnvironment, SessionHandle, ToolDisplay

__all__ = ["EditorFileSystem", "EditorTerminalRunner"]

log = logging.getLogger(__name__)

FS_TIMEOUT_S: Final = 30.0
TERMINAL_OUTPUT_LIMIT: Final = 1_000_000
POLL_S: Final = 0.25


class EditorFileSystem:
    """A ``harness.tools.FileSystem`` over the client's ``fs/*`` methods, the disk as fallback."""

    def __init__(
        self, env: SessionEnvironment, *, read: bool | None = None, write: bool | None = None
    ) -> None:
        self._env = env
        self._disk = LocalFileSystem()
        self.read_via_editor = env.client_can("fs", "readTextFile") if read is None else read
        self.write_via_editor = env.client_can("fs", "writeTextFile") if write is None else write
        self.fallbacks = 0
        """How many times the editor refused and the disk was used (tests and logs read it)."""

    async def read_text(self, path: Path) -> str:
        # A file the disk does not have is missing for the tools (a new file has no buffer worth reading).
        if not self.read_via_editor or not await anyio.Path(path).is_file():
            return await self._disk.read_text(path)
        try:
            result = await self._env.connection.request(
                "fs/read_text_file",
                {"sessionId": self._env.session_id, "path": str(path)},
                timeout=FS_TIMEOUT_S,
            )
        except (RpcError, TimeoutError) as exc:  # ConnectionClosedError is an RpcError
            self.fallbacks += 1
            log.info("fs/read_text_file %s refused (%s); reading the disk", path, exc)
            return await self._disk.read_text(path)
        content = _obj(result).get("content")
        if not isinstance(content, str):
            self.fallbacks += 1
            return await self._disk.read_text(path)
        return content

    async def write_text(self, path: Path, text: str) -> None:
        if not self.write_via_editor:
            await self._disk.write_text(path, text)
            return
        try:
            await anyio.Path(path).parent.mkdir(parents=True, exist_ok=True)
            await self._env.connection.request(
                "fs/write_text_file",
                {"sessionId": self._env.session_id, "path": str(path), "content": text},
                timeout=FS_TIMEOUT_S,
            )
        except (RpcError, TimeoutError) as exc:  # ConnectionClosedError is an RpcError
            self.fallbacks += 1
            log.info("fs/write_text_file %s refused (%s); writing the disk", path, exc)
            await self._disk.write_text(path, text)


class EditorTerminalRunner:
    """A ``harness.tools.CommandRunner`` over ``terminal/*``: the terminal is embedded in the tool call.

    ``terminal/create`` (``bash -c``), then the terminal goes into the call's content and its output is
    polled for the model while ``terminal/wait_for_exit`` waits; on cancellation (cancel, timeout)
    ``terminal/kill``; ``terminal/release`` always."""

    def __init__(self, env: SessionEnvironment, display: ToolDisplay, session: Any) -> None:
        self._env = env
        self._display = display
        self._session: Any = session
        """Holds the ``SessionHandle`` once bound (``.handle``)."""

    async def run(self, request: CommandRequest, output: OutputSink) -> int | None:
        conn = self._env.connection
        sid = self._env.session_id
        env_vars = [{"name": k, "value": v} for k, v in request.env.items()]
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
        await handle.send(
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
