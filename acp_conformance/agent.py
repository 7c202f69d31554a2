"""The agent under test as a process: JSON lines on stdin/stdout, stderr kept for diagnostics.

Every stdout line is parsed and validated as it arrives; lines that are not valid ACP are kept with their
problems (the ``wire.only-acp-on-stdout`` check) and still handed on when they parse as JSON.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .validate import MessageValidator

__all__ = ["AgentProcess", "Line"]

_STDERR_KEEP = 200_000
_DRAIN_S = 2.0  # after the exit (and the group's kill), the longest to wait for the pipes' end


@dataclass
class Line:
    raw: bytes
    msg: Any = None
    parsed: bool = False
    problems: list[str] = field(default_factory=list[str])


class AgentProcess:
    def __init__(
        self,
        command: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        validator: MessageValidator,
        sent_methods: dict[Any, str],
    ) -> None:
        self.command = list(command)
        self.env = dict(env)
        self.cwd = cwd
        self.validator = validator
        self.sent_methods = sent_methods
        self.process: Process | None = None
        self.stderr = bytearray()
        self.lines: MemoryObjectReceiveStream[Line | None] | None = None
        self.eof = anyio.Event()
        self._stderr_eof = anyio.Event()
        self.start_error: str | None = None

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Start the agent (a restart first ends and releases the last one: ``kill`` then ``start``)."""
        await self._end()
        try:
            self.process = await anyio.open_process(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
            )
        except OSError as exc:
            self.start_error = f"cannot start {self.command[0]!r}: {exc.strerror or exc}"
            raise
        self._close_lines()  # a restarted agent gets a fresh stream; the last one is read no more
        send, self.lines = anyio.create_memory_object_stream[Line | None](10_000)
        self.eof = anyio.Event()
        self._stderr_eof = anyio.Event()
        tg.start_soon(self._read_stdout, self.process, send, self.eof)
        tg.start_soon(self._read_stderr, self.process, self._stderr_eof)

    async def _read_stdout(
        self, process: Process, out: MemoryObjectSendStream[Line | None], eof: anyio.Event
    ) -> None:
        assert process.stdout is not None
        buffer = bytearray()
        try:
            async with out:
                try:
                    async for chunk in process.stdout:
                        buffer += chunk
                        while (i := buffer.find(b"\n")) >= 0:
                            raw = bytes(buffer[:i])
                            del buffer[: i + 1]
                            await out.send(self._parse(raw))
                    if buffer:
                        line = self._parse(bytes(buffer))
                        line.problems.append("the last stdout line has no newline")
                        await out.send(line)
                    await out.send(None)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass  # the pipe was closed by ``stop`` (``_release``), or no one reads the lines any more
        finally:
            eof.set()

    def _parse(self, raw: bytes) -> Line:
        line = Line(raw)
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            line.msg = json.loads(raw)
            line.parsed = True
        except ValueError as exc:
            line.problems.append(f"a stdout line that is not JSON ({exc}): {raw[:200]!r}")
            return line
        line.problems += self.validator.check(line.msg, self.sent_methods)
        return line

    async def _read_stderr(self, process: Process, eof: anyio.Event) -> None:
        assert process.stderr is not None
        try:
            async for chunk in process.stderr:
                self.stderr += chunk
                if len(self.stderr) > _STDERR_KEEP:
                    del self.stderr[: _STDERR_KEEP // 2]
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            eof.set()

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def write(self, data: bytes) -> None:
        assert self.process is not None and self.process.stdin is not None
        await self.process.stdin.send(data)

    async def close_stdin(self) -> None:
        assert self.process is not None and self.process.stdin is not None
        await self.process.stdin.aclose()

    async def kill(self) -> None:
        """SIGKILL the agent and its process group (children it started go too)."""
        process = self.process
        if process is None or process.returncode is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            process.send_signal(signal.SIGKILL)
        with anyio.move_on_after(10):
            await process.wait()

    async def stop(self) -> None:
        """Close stdin, give the agent 3 s to exit, then kill it (and its group); its pipes are closed."""
        await self._end()
        self._close_lines()

    async def _end(self) -> None:
        """End the current process, if any, and release it: shielded and bounded, whatever state it is in."""
        if self.process is None:
            return
        with anyio.CancelScope(shield=True):
            if self.process.returncode is None:
                try:
                    await self.close_stdin()
                except Exception:  # a pipe already closed or broken: the kill below still runs
                    pass
                with anyio.move_on_after(3):
                    await self.process.wait()
            await self.kill()
            self._reap_group()
            await self._release(self.process)

    async def _release(self, process: Process) -> None:
        """Close the exited process's pipes, once what it wrote last is read. ``wait()`` returns at the exit,
        not when its stdout and stderr reach their end (a grandchild may still hold them): a process left
        so is only finalised by the garbage collector, as an unclosed transport (a ResourceWarning), in
        whatever later test (or run) happens to collect it, after its event loop has closed."""
        with anyio.move_on_after(_DRAIN_S):
            await self.eof.wait()
            await self._stderr_eof.wait()
        if process.returncode is not None:  # (one that outlived SIGKILL: aclose would wait for it unbounded)
            with anyio.move_on_after(_DRAIN_S):
                await process.aclose()  # it has exited: this closes the pipe transports and returns

    def _close_lines(self) -> None:
        """The receiving end of the stdout lines is closed once nothing reads it (else a ResourceWarning)."""
        if self.lines is not None:
            self.lines.close()

    def _reap_group(self) -> None:
        """Children the agent left behind in its group (an MCP server, a shell) are killed too."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except OSError:
            pass

    def stderr_tail(self, size: int = 3000) -> str:
        return self.stderr[-size:].decode("utf-8", "replace")
