"""``LineWriter``: ``write_nowait`` (the streamed reply's way to queue a line without a coroutine) and ``write_at_once``
(a response written in the caller's task when nothing is to go before it)."""

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


class _HeldSink(_Sink):
    """A sink whose first send waits for ``release`` (a client that has not read yet)."""

    def __init__(self) -> None:
        super().__init__()
        self.sending = anyio.Event()
        self.release = anyio.Event()

    async def send(self, item: bytes) -> None:
        if not self.release.is_set():
            self.sending.set()
            await self.release.wait()
        await super().send(item)


async def test_a_response_written_at_once_is_out_before_any_other_task_runs() -> None:
    sink = _Sink()
    writer = LineWriter(sink, write_timeout=5)
    seen: list[bytes] = []
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            writer.start(tg)
            await anyio.wait_all_tasks_blocked()  # the writer task waits for a line

            async def started_by_the_handler() -> None:
                seen.append(bytes(sink.data))

            tg.start_soon(started_by_the_handler)
            assert await writer.write_at_once(b"answer\n")
            assert (
                bytes(sink.data) == b"answer\n" and seen == []
            )  # written in this task, before the other ran
            await writer.drain()
    assert seen == [b"answer\n"]


@pytest.mark.parametrize("queued_by", ["handed to the waiting writer", "queued before it runs", "awaited"])
async def test_a_response_written_at_once_never_passes_a_line_written_before_it(queued_by: str) -> None:
    sink = _Sink()
    writer = LineWriter(sink, write_timeout=5)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            writer.start(tg)
            if queued_by != "queued before it runs":
                await anyio.wait_all_tasks_blocked()
            if queued_by == "awaited":
                assert await writer.write(b"update\n")
            else:
                assert writer.write_nowait(b"update\n")
            assert await writer.write_at_once(b"answer\n")
            await writer.drain()
    assert bytes(sink.data) == b"update\nanswer\n"


async def test_a_response_written_at_once_waits_behind_a_write_under_way_and_lines_after_it_follow() -> None:
    sink = _HeldSink()
    writer = LineWriter(sink, write_timeout=5)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            writer.start(tg)
            await anyio.wait_all_tasks_blocked()
            assert writer.write_nowait(b"1\n")
            await sink.sending.wait()  # the writer task is in the middle of writing line 1
            assert await writer.write_at_once(b"2\n")  # queued behind it
            assert writer.write_nowait(b"3\n")
            sink.release.set()
            await writer.drain()
    assert bytes(sink.data) == b"1\n2\n3\n"


async def test_a_response_written_at_once_while_another_is_being_written_goes_after_it() -> None:
    sink = _HeldSink()
    writer = LineWriter(sink, write_timeout=5)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            writer.start(tg)
            await anyio.wait_all_tasks_blocked()
            tg.start_soon(writer.write_at_once, b"first\n")
            await sink.sending.wait()  # the first answer is being written in its own task
            assert writer.write_nowait(b"update\n")
            assert await writer.write_at_once(b"second\n")  # queued: a write is under way
            sink.release.set()
            await writer.drain()
    assert bytes(sink.data) == b"first\nupdate\nsecond\n"


async def test_a_response_written_at_once_outside_the_writer_tasks_window_is_written_or_dropped_as_write_does() -> (
    None
):
    writer = LineWriter(_Sink(), write_timeout=5)
    assert await writer.write_at_once(b"x\n")
    broken = LineWriter(_Sink(fail=True), write_timeout=5)
    assert not await broken.write_at_once(b"x\n")
    assert broken.broken and not await broken.write_at_once(b"y\n")
