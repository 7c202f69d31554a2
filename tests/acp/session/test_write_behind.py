"""``WriteBehind``: a session's write that runs while the turn goes on is joined before the next one, and
its failure is raised there, once."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
import pytest

from acp_agent.session._durable import WriteBehind

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def behind_in_a_task_group() -> AsyncGenerator[WriteBehind]:
    """A ``WriteBehind`` whose writes run in a task group of this block (as a session's do)."""
    async with anyio.create_task_group() as tg:

        def spawn(work: Callable[[], Awaitable[None]]) -> None:
            async def run() -> None:
                await work()

            tg.start_soon(run)

        yield WriteBehind(spawn)


async def test_the_next_start_waits_for_the_write_under_way_and_join_raises_its_failure_once() -> None:
    order: list[str] = []
    release = anyio.Event()

    async def slow() -> None:
        await release.wait()
        order.append("first")

    async def failing() -> None:
        order.append("second")
        raise OSError("disk full")

    with anyio.fail_after(5):
        async with behind_in_a_task_group() as behind:
            await behind.start(slow)
            assert order == []  # started, not awaited
            release.set()
            await behind.start(failing)  # joins the first before it begins
            with pytest.raises(OSError, match="disk full"):
                await behind.join()
            await behind.join()  # raised once
    assert order == ["first", "second"]


async def test_without_a_task_group_the_write_runs_inline() -> None:
    ran: list[bool] = []

    async def write() -> None:
        ran.append(True)

    await WriteBehind(None).start(write)
    assert ran == [True]


async def test_joining_a_write_that_already_finished_does_not_pass_through_the_event_loop() -> None:
    # The turn's last write joins the step's write-behind, long done by then: a pass through the loop there
    # was one more iteration between a cancel and its answer (the write's failure is still raised).
    async def failing() -> None:
        raise OSError("disk full")

    with anyio.fail_after(5):
        async with behind_in_a_task_group() as behind:
            await behind.start(failing)
            await anyio.wait_all_tasks_blocked()  # the write has run and failed
            with anyio.CancelScope() as scope:
                scope.cancel()  # a checkpoint in the join would raise the cancellation here
                with pytest.raises(OSError, match="disk full"):
                    await behind.join()
                await behind.join()
            assert not scope.cancelled_caught
