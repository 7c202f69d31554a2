"""Terminal input as lines, read from a duplicate of fd 0 without blocking the event loop (the terminal's
own line editing applies: the kernel hands over whole lines)."""

from __future__ import annotations

import os

import anyio
from anyio.abc import ByteReceiveStream

from ..protocol.stdio import FdReceiveStream

__all__ = ["LineReader", "open_terminal_input"]


class LineReader:
    """``readline()`` over a byte stream; ``None`` at end of input (Ctrl-D)."""

    def __init__(self, stream: ByteReceiveStream) -> None:
        self._stream = stream
        self._buffer = b""
        self._eof = False

    async def readline(self) -> str | None:
        while b"\n" not in self._buffer:
            if self._eof:
                if self._buffer:
                    rest, self._buffer = self._buffer, b""
                    return rest.decode("utf-8", "replace")
                return None
            try:
                # Cancellation while waiting loses nothing: bytes stay in the buffer.
                self._buffer += await self._stream.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                self._eof = True
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", "replace").rstrip("\r")

    async def aclose(self) -> None:
        await self._stream.aclose()


def open_terminal_input() -> LineReader:
    """A reader of this process's stdin; the duplicate fd keeps fd 0 usable for everything else."""
    return LineReader(FdReceiveStream(os.dup(0)))
