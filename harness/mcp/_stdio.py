"""A stdio transport for the mcp ``Client`` that owns its server's process group.

Unlike the SDK's, it logs the server's stderr line by line (never to our stdout), tolerates and counts
non-JSON-RPC lines on stdout, notices the process exiting even when a grandchild keeps the pipes open,
and on close ends the whole process group, grandchildren included, within about 1.5 s.
"""

from __future__ import annotations

import logging
import os
import signal
from collections import deque
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from ._config import StdioConfig, safe_env

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

__all__ = ["StdioProcess", "stdio_transport"]

log = logging.getLogger("harness.mcp.stderr")
_log = logging.getLogger(__name__)

_STDIN_GRACE = 0.4  # after stdin closes, before SIGTERM
_TERM_GRACE = 0.6  # after SIGTERM, before SIGKILL
_POLL = 0.05


class StdioProcess:
    """What the transport knows of its process: pid, exit code, the stderr tail, garbage lines seen."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pid: int | None = None
        self.returncode: int | None = None
        self.stderr_tail: deque[str] = deque(maxlen=20)
        self.garbage_lines = 0
        self.garbage_sample = ""
        self.exited = anyio.Event()

    def describe_exit(self) -> str:
        """``exited with code N`` and the last stderr line, for error messages."""
        if self.returncode is None:
            out = "the connection closed"
        elif self.returncode < 0:
            out = f"killed by signal {-self.returncode}"
        else:
            out = f"exited with code {self.returncode}"
        if self.stderr_tail:
            out += f"; stderr: {self.stderr_tail[-1][:300]}"
        return out

    def describe_garbage(self) -> str:
        if not self.garbage_lines:
            return ""
        return f"; it wrote {self.garbage_lines} non-JSON-RPC line(s) on stdout, e.g. {self.garbage_sample!r}"


def _killpg(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


@asynccontextmanager
async def stdio_transport(
    config: StdioConfig, proc: StdioProcess, on_exit: Callable[[], None]
) -> AsyncGenerator[tuple[Any, Any]]:
    """Spawn the server in a new session (its own process group) and yield the ``(read, write)`` streams
    the mcp ``Client`` expects. ``on_exit`` is called once if the process ends before we close it."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    process = await anyio.open_process(
        [config.command, *config.args],
        env=safe_env(config.env),
        cwd=config.cwd,
        start_new_session=True,
    )
    pid = process.pid
    proc.pid = pid
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](16)
    closing = False

    async def read_stdout() -> None:
        assert process.stdout is not None
        pending: list[bytes] = []
        async with read_send:
            try:
                async for chunk in process.stdout:
                    *lines, rest = chunk.split(b"\n")
                    for line in lines:
                        pending.append(line)
                        whole = b"".join(pending)
                        pending.clear()
                        if whole.strip():
                            await read_send.send(_parse(whole))
                    if rest:
                        pending.append(rest)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                pass

    def _parse(line: bytes) -> SessionMessage | Exception:
        try:
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
        except ValueError as e:
            proc.garbage_lines += 1
            text = line.decode("utf-8", "replace")
            if proc.garbage_lines == 1:
                proc.garbage_sample = text[:120]
            _log.warning("MCP server %s wrote a non-JSON-RPC line on stdout: %.200s", config.name, text)
            return e

    async def read_stderr() -> None:
        assert process.stderr is not None
        buf = b""
        try:
            async for chunk in process.stderr:
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    text = line.decode("utf-8", "replace").rstrip()
                    if text:
                        proc.stderr_tail.append(text)
                        log.info("[%s] %s", config.name, text)
                if len(buf) > 65536:  # a line without end: log it in pieces
                    proc.stderr_tail.append(buf.decode("utf-8", "replace"))
                    log.info("[%s] %s", config.name, proc.stderr_tail[-1])
                    buf = b""
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass

    async def write_stdin() -> None:
        assert process.stdin is not None
        try:
            async with write_recv:
                async for message in write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()

    async def watch_exit() -> None:
        # Polled: a grandchild holding the pipes would keep wait() (and EOF) from ever coming.
        while process.returncode is None:  # noqa: ASYNC110 (a child's exit has no event to wait on)
            await anyio.sleep(_POLL)
        proc.returncode = process.returncode
        proc.exited.set()
        if not closing:
            _log.warning("MCP server %s (pid %d) %s", config.name, pid, proc.describe_exit())
            await read_send.aclose()  # pending requests fail with "connection closed"
            on_exit()

    async def wait_exit(timeout: float) -> bool:
        with anyio.move_on_after(timeout):
            while process.returncode is None:  # noqa: ASYNC110
                await anyio.sleep(_POLL)
        return process.returncode is not None

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_stdout)
        tg.start_soon(read_stderr)
        tg.start_soon(write_stdin)
        tg.start_soon(watch_exit)
        try:
            yield read_recv, write_send
        finally:
            closing = True
            with anyio.CancelScope(shield=True):
                await write_send.aclose()
                if process.stdin is not None:
                    with anyio.move_on_after(0.2):
                        try:
                            await process.stdin.aclose()
                        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                            pass
                if not await wait_exit(_STDIN_GRACE):
                    _killpg(pid, signal.SIGTERM)
                    if not await wait_exit(_TERM_GRACE):
                        _killpg(pid, signal.SIGKILL)
                        await wait_exit(0.5)
                # Whatever is left of the group (grandchildren of a server that exited) goes too.
                _killpg(pid, signal.SIGKILL)
                proc.returncode = process.returncode
                proc.exited.set()
                tg.cancel_scope.cancel()
                for stream in (process.stdout, process.stderr):
                    if stream is not None:
                        with anyio.move_on_after(0.1):
                            try:
                                await stream.aclose()
                            except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                                pass
                await read_recv.aclose()
                await write_recv.aclose()
