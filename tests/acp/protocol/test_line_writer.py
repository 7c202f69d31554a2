"""``LineWriter.write_nowait``: the streamed reply's way to queue a line without a coroutine."""

from __future__ import annotations

import anyio
import pytest
from anyio.abc import ByteSendStream

from acp_agent.protocol._writer import LineWriter

pytestmark = pytest.mark.anyio


class _Sink(ByteSendStream):
    def __init__(self, *, fail: bool = False) -> None:
        self.data = bytearray()
        self.fail = fail

    async def send(self, item: bytes) -> None:
        if self.fail:
            raise anyio.BrokenResourceError
        self.data += item

    async def send_eof(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


async def test_a_line_queued_without_waiting_is_written_in_order_with_the_awaited_ones() -> None:
    sink = _Sink()
    writer = LineWriter(sink, write_timeout=5)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            writer.start(tg)
            assert await writer.write(b"1\n")
            assert writer.write_nowait(b"2\n")
            assert await writer.write(b"3\n")
            await writer.drain()
    assert bytes(sink.data) == b"1\n2\n3\n"


async def test_nothing_is_queued_without_waiting_before_the_writer_runs() -> None:
    sink = _Sink()
    writer = LineWriter(sink, write_timeout=5)
    assert not writer.write_nowait(b"x\n")
    assert await writer.write(b"y\n")
    assert bytes(sink.data) == b"y\n"


async def test_a_full_queue_refuses_a_line_without_waiting_and_then_it_is_written_by_waiting() -> None:
    sink = _Sink()
    writer = LineWriter(sink, write_timeout=5)
    queued = 0
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            writer.start(tg)
            while writer.write_nowait(b"%d\n" % queued):  # the writer task has not run yet
                queued += 1
            assert queued > 0
            assert await writer.write(b"last\n")  # waits for room
            await writer.drain()
    assert bytes(sink.data) == b"".join(b"%d\n" % i for i in range(queued)) + b"last\n"


async def test_a_broken_output_refuses_a_line_without_waiting() -> None:
    writer = LineWriter(_Sink(fail=True), write_timeout=5)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            writer.start(tg)
            assert writer.write_nowait(b"x\n")  # queued; the writer task then finds the output broken
            while not writer.broken:
                await anyio.lowlevel.checkpoint()
            assert not writer.write_nowait(b"y\n")  # still queueing, but the output is unusable
            await writer.drain()
