"""The real process's protocol streams.

`open_stdio()` must be called once, early in the process (before any thread or child process starts):
- fd 1 is duplicated to a private fd that carries the protocol output, then fd 2 is copied onto fd 1:
  stray `print()`s, C extensions and child processes writing to "stdout" end up on stderr and cannot
  corrupt the JSON-RPC stream;
- fd 0 is duplicated to a private fd for protocol input and `/dev/null` is put on fd 0, so a child process
  cannot swallow protocol input.

The private fds are close-on-exec. Pipes, sockets, ttys and character devices are used in non-blocking
mode with `anyio.wait_readable` / `wait_writable` (no thread per read); regular files (e.g. `< file`)
are read and written in a worker thread because they cannot be polled.

The caller owns the streams: `async with receive, send: await Connection(receive, send, h).serve()`
closes them and restores the fds' blocking mode (matters when stdin is a terminal).
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

__all__ = ["FdReceiveStream", "FdSendStream", "open_stdio"]

_READ_SIZE: Final = 256 * 1024


def _pollable(fd: int) -> bool:
    return not stat.S_ISREG(os.fstat(fd).st_mode)


class _OwnedFd:
    """An owned file descriptor, non-blocking while it is ours when it can be polled; ``aclose`` gives
    back its blocking mode (matters for a terminal) and closes it."""

    _fd: int
    _pollable: bool
    _was_blocking: bool
    _closed: bool

    def _open(self, fd: int) -> None:
        self._fd = fd
        self._pollable = _pollable(fd)
        self._was_blocking = os.get_blocking(fd)
        if self._pollable:
            os.set_blocking(fd, False)
        self._closed = False

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._pollable:
            anyio.notify_closing(self._fd)
            with contextlib.suppress(OSError):
                os.set_blocking(self._fd, self._was_blocking)
        os.close(self._fd)


class FdReceiveStream(_OwnedFd, ByteReceiveStream):
    """Reads an owned file descriptor without blocking the event loop; ``pending`` bytes (read before
    the loop started) come first."""

    def __init__(self, fd: int, pending: bytes = b"") -> None:
        self._open(fd)
        self._pending = pending

    async def receive(self, max_bytes: int = _READ_SIZE) -> bytes:
        if self._pending and not self._closed:
            data, self._pending = self._pending, b""
            return data
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            if not self._pollable:
                data = await anyio.to_thread.run_sync(os.read, self._fd, max_bytes)
            else:
                try:
                    data = os.read(self._fd, max_bytes)
                except BlockingIOError:
                    await anyio.wait_readable(self._fd)
                    continue
            if not data:
                raise anyio.EndOfStream
            return data


class FdSendStream(_OwnedFd, ByteSendStream):
    """Writes an owned file descriptor without blocking the event loop."""

    def __init__(self, fd: int) -> None:
        self._open(fd)

    async def send(self, item: bytes) -> None:
        view = memoryview(item)
        while view:
            if self._closed:
                raise anyio.ClosedResourceError
            try:
                if self._pollable:
                    written = os.write(self._fd, view)
                else:
                    written = await anyio.to_thread.run_sync(os.write, self._fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
                continue
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise anyio.BrokenResourceError from exc
            view = view[written:]


def open_stdio(
    fds: tuple[int, int] | None = None, pending: bytes = b""
) -> tuple[FdReceiveStream, FdSendStream]:
    """Take fds 0 and 1 for the protocol (see the module docstring; ``fds`` when they were already taken
    by ``acp_agent._early``) and wrap them as byte streams, ``pending`` input first."""
    from .._early import claim_stdio

    in_fd, out_fd = fds if fds is not None else claim_stdio()
    return FdReceiveStream(in_fd, pending), FdSendStream(out_fd)
