"""The connection's output: whole lines onto a byte stream, a burst of them in one write.

Between ``start`` and ``drain``, lines go into a bounded memory stream that one writer task empties:
everything queued so far (up to ``_BATCH_BYTES``) goes out in one shielded write, so a streamed reply costs
one write per burst instead of one per line, and a caller waits only while the stream is full. Outside
that window a line is written at once. ``write_at_once`` (a response) is written in the caller's task when
no line is waiting to go before it, so it does not wait for the writer task's turn behind the work its
handler started. Order is the order of the calls. A write that fails or blocks for ``write_timeout`` marks
the output broken: later lines are dropped.
"""

from __future__ import annotations

import logging
from typing import Final

import anyio
from anyio.abc import ByteSendStream, TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = ["LineWriter"]

_log = logging.getLogger("acp_agent.protocol")

_QUEUED_LINES: Final = 1024  # lines queued before a caller waits for the client to read
_BATCH_BYTES: Final = 1024 * 1024  # one write takes queued lines up to this size


class LineWriter:
    """Writes encoded lines (each ending in a newline) to ``send``; see the module docstring."""

    def __init__(self, send: ByteSendStream, *, write_timeout: float) -> None:
        self._send = send
        self._write_timeout = write_timeout
        self._broken = False
        self._lock: anyio.Lock | None = None  # anyio primitives need a running event loop
        self._lines: MemoryObjectSendStream[bytes] | None = None
        self._queue: MemoryObjectReceiveStream[bytes] | None = None
        self._done: anyio.Event | None = None

    @property
    def broken(self) -> bool:
        """True once a write failed or timed out: every later line is dropped."""
        return self._broken

    def start(self, tg: TaskGroup) -> None:
        """Queue lines from now on, for a writer task run in ``tg``."""
        self._lines, self._queue = anyio.create_memory_object_stream[bytes](_QUEUED_LINES)
        self._done = anyio.Event()
        tg.start_soon(self._run, self._queue, self._done)

    def write_nowait(self, data: bytes) -> bool:
        """Queue one line if that needs no wait (the writer task runs and has room); False when it did
        not, and then ``write`` is the way (it waits, writes or drops, and logs)."""
        lines = self._lines
        if lines is None or self._broken:
            return False
        try:
            lines.send_nowait(data)
        except anyio.WouldBlock:
            return False
        return True

    async def write(self, data: bytes) -> bool:
        """Queue (or write) one line; False if the output is (or just became) unusable."""
        if self._broken:
            _log.debug("dropping an outgoing line: send stream unusable")
            return False
        lines = self._lines
        if lines is not None:
            try:
                lines.send_nowait(data)  # the hot path: no task switch per line
                return True
            except anyio.WouldBlock:
                try:
                    await lines.send(data)  # the client reads slower than we write
                    return not self._broken
                except anyio.ClosedResourceError:
                    pass  # the writer stopped taking lines meanwhile: write after it
        if self._done is not None:
            await self._done.wait()  # lines queued before this one go first
        return await self._write_now(data)

    async def write_at_once(self, data: bytes) -> bool:
        """``write``, but in the caller's task when no earlier line is still to be written: the writer task
        waits for the next line with nothing in hand, nothing is queued, and no write is under way (a line
        handed to the waiting writer task but not yet taken takes it off the waiting list, so it counts)."""
        queue, lock = self._queue, self._lock
        if self._lines is None or queue is None or (lock is not None and lock.locked()):
            return await self.write(data)
        stats = queue.statistics()
        if stats.current_buffer_used or stats.tasks_waiting_send or not stats.tasks_waiting_receive:
            return await self.write(data)
        return await self._write_now(data)

    async def drain(self) -> None:
        """Stop queueing; wait (bounded by the write timeout) until what was queued is written."""
        lines, self._lines = self._lines, None
        if lines is not None:
            lines.close()
        if self._done is not None:
            with anyio.move_on_after(self._write_timeout):
                await self._done.wait()
        self.close()

    def close(self) -> None:
        """Stop queueing at once; what is still queued is dropped (``drain`` first to write it)."""
        lines, self._lines = self._lines, None
        if lines is not None:
            lines.close()
        if self._queue is not None:
            self._queue.close()

    async def _run(self, lines: MemoryObjectReceiveStream[bytes], done: anyio.Event) -> None:
        try:
            async with lines:
                async for line in lines:
                    batch, size = [line], len(line)
                    while size < _BATCH_BYTES:
                        try:
                            line = lines.receive_nowait()
                        except (anyio.WouldBlock, anyio.EndOfStream):
                            break
                        batch.append(line)
                        size += len(line)
                    await self._write_now(b"".join(batch))
        finally:
            done.set()

    async def _write_now(self, data: bytes) -> bool:
        if self._broken:
            return False
        if self._lock is None:
            self._lock = anyio.Lock(fast_acquire=True)  # no pass of the event loop when free
        async with self._lock:
            if self._broken:
                return False
            # Shielded: a cancelled writer must not leave half a line on the stream.
            with anyio.CancelScope(shield=True):
                with anyio.move_on_after(self._write_timeout) as timeout:
                    try:
                        await self._send.send(data)
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                        _log.warning("output failed (%s); dropping further output", exc)
                        self._broken = True
                        return False
                if timeout.cancelled_caught:
                    _log.warning("output blocked for %.0f s; dropping further output", self._write_timeout)
                    self._broken = True
                    return False
        return True
