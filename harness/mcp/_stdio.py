"""A stdio transport for the mcp ``Client`` that owns its server's process group.

Unlike the SDK's, it logs the server's stderr line by line (never to our stdout), tolerates and counts
non-JSON-RPC lines on stdout, notices the process exiting even when a grandchild keeps the pipes open,
and on close ends the whole process group, grandchildren included, within about 1.5 s.
"""

from __future__ import annotations

import importlib
import logging
import os
import signal
from collections import deque
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from ..programs import require_program
from ._config import StdioConfig, safe_env

if TYPE_CHECKING:
    from mcp.shared.message import SessionMessage

__all__ = ["StdioProcess", "stdio_transport"]

log = logging.getLogger("harness.mcp.stderr")
_log = logging.getLogger(__name__)

_STDIN_GRACE = 0.4  # after stdin closes, before SIGTERM
_TERM_GRACE = 0.6  # after SIGTERM, before SIGKILL
_POLL = 0.05  # where a process's end cannot be waited for as an event
_BACKSTOP_S = 1.0  # the event's backstop: the pid may have been reaped (and reused) before it was opened
_REAPED_POLL = 0.002  # once it ended, until the event loop's child watcher has recorded its status
_REAPED_POLLS = 50


def pidfd_of(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` ends (Linux 5.3 and later); None elsewhere."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


async def until_exited(process: anyio.abc.Process) -> None:
    """Until ``process.returncode`` is set (the event loop's child watcher sets it once it reaped the
    process). Where the system has pidfds the end is an event, with a poll each ``_BACKSTOP_S`` behind it;
    elsewhere it is polled each ``_POLL``: an idle server costs no wake-ups (three polled servers kept an
    idle agent at 0.9 % of a CPU)."""
    pidfd = pidfd_of(process.pid) if process.returncode is None else None
    polls_left = 0  # fast polls once the process is known to have ended
    try:
        while process.returncode is None:
            if pidfd is not None:
                with anyio.move_on_after(_BACKSTOP_S):
                    await anyio.wait_readable(pidfd)
                    os.close(pidfd)
                    pidfd, polls_left = None, _REAPED_POLLS
                continue
            if polls_left:
                polls_left -= 1
                await anyio.sleep(_REAPED_POLL)
            else:
                await anyio.sleep(_POLL)
    finally:
        if pidfd is not None:
            os.close(pidfd)


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
    # The SDK's message types load before the spawn, so that failing to load them leaves no process.
    importlib.import_module("mcp.shared.message")

    env = safe_env(config.env)
    # The command by its path, found where the project it runs in cannot supply it (``harness.programs``).
    where = (config.cwd or os.getcwd(),)
    command = await anyio.to_thread.run_sync(require_program, config.command, env.get("PATH"), where)
    process = await anyio.open_process(
        [command, *config.args], env=env, cwd=config.cwd, start_new_session=True
    )
    proc.pid = process.pid
    pipes = _Pipes(config.name, process, proc, on_exit)
    async with anyio.create_task_group() as tg:
        tg.start_soon(pipes.read_stdout)
        tg.start_soon(pipes.read_stderr)
        tg.start_soon(pipes.write_stdin)
        tg.start_soon(pipes.watch_exit)
        try:
            yield pipes.read_recv, pipes.write_send
        finally:
            with anyio.CancelScope(shield=True):
                await pipes.end_process()
                tg.cancel_scope.cancel()
                await pipes.close_streams()


class _Pipes:
    """The running server's three pipes and its exit, each watched by a task of the transport."""

    def __init__(
        self, name: str, process: anyio.abc.Process, proc: StdioProcess, on_exit: Callable[[], None]
    ) -> None:
        import mcp_types
        from mcp.shared.message import SessionMessage

        self.name = name
        self.process = process
        self.proc = proc
        self.on_exit = on_exit
        self.closing = False
        self._message = SessionMessage
        self._validate = mcp_types.jsonrpc_message_adapter.validate_json
        self.read_send, self.read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        self.write_send, self.write_recv = anyio.create_memory_object_stream[SessionMessage](16)

    async def read_stdout(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        pending: list[bytes] = []
        async with self.read_send:
            try:
                async for chunk in stdout:
                    *lines, rest = chunk.split(b"\n")
                    for line in lines:
                        pending.append(line)
                        whole = b"".join(pending)
                        pending.clear()
                        if whole.strip():
                            await self.read_send.send(self._parse(whole))
                    if rest:
                        pending.append(rest)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                pass

    def _parse(self, line: bytes) -> SessionMessage | Exception:
        try:
            return self._message(self._validate(line, by_name=False))
        except ValueError as e:
            proc = self.proc
            proc.garbage_lines += 1
            text = line.decode("utf-8", "replace")
            if proc.garbage_lines == 1:
                proc.garbage_sample = text[:120]
            _log.warning("MCP server %s wrote a non-JSON-RPC line on stdout: %.200s", self.name, text)
            return e

    async def read_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        tail = self.proc.stderr_tail
        buf = b""
        try:
            async for chunk in stderr:
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    text = line.decode("utf-8", "replace").rstrip()
                    if text:
                        tail.append(text)
                        log.info("[%s] %s", self.name, text)
                if len(buf) > 65536:  # a line without end: log it in pieces
                    tail.append(buf.decode("utf-8", "replace"))
                    log.info("[%s] %s", self.name, tail[-1])
                    buf = b""
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass

    async def write_stdin(self) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        try:
            async with self.write_recv:
                async for message in self.write_recv:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await self.read_send.aclose()

    async def watch_exit(self) -> None:
        # Not ``wait()``: a grandchild holding the pipes would keep it (and EOF) from ever coming.
        process, proc = self.process, self.proc
        await until_exited(process)
        proc.returncode = process.returncode
        proc.exited.set()
        if not self.closing:
            _log.warning("MCP server %s (pid %d) %s", self.name, process.pid, proc.describe_exit())
            await self.read_send.aclose()  # pending requests fail with "connection closed"
            self.on_exit()

    async def _wait_exit(self, timeout: float) -> bool:
        with anyio.move_on_after(timeout):
            await until_exited(self.process)
        return self.process.returncode is not None

    async def end_process(self) -> None:
        """Close stdin, then SIGTERM, then SIGKILL the group: whatever is left of it goes too."""
        self.closing = True
        process, pid = self.process, self.process.pid
        await self.write_send.aclose()
        if process.stdin is not None:
            with anyio.move_on_after(0.2):
                await _close_quietly(process.stdin)
        if not await self._wait_exit(_STDIN_GRACE):
            _killpg(pid, signal.SIGTERM)
            if not await self._wait_exit(_TERM_GRACE):
                _killpg(pid, signal.SIGKILL)
                await self._wait_exit(0.5)
        # Whatever is left of the group (grandchildren of a server that exited) goes too.
        _killpg(pid, signal.SIGKILL)
        self.proc.returncode = process.returncode
        self.proc.exited.set()

    async def close_streams(self) -> None:
        if self.process.returncode is not None:
            # The whole process, pipes included: anyio's wait() returns at the exit, not at the pipes' end, and
            # a grandchild outside the group may hold them; left open, the garbage collector finalises them.
            with anyio.move_on_after(0.5):
                await _close_quietly(self.process)
        else:  # it outlived SIGKILL (stopped in the kernel): aclose would wait for it
            for stream in (self.process.stdout, self.process.stderr):
                if stream is not None:
                    with anyio.move_on_after(0.1):
                        await _close_quietly(stream)
        await self.read_recv.aclose()
        await self.write_recv.aclose()


async def _close_quietly(stream: anyio.abc.AsyncResource) -> None:
    try:
        await stream.aclose()
    except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
