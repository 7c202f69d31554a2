"""Stopping the consumer's wait on the model: on asyncio one native task cancel stands in for a cancel
scope per delta (``harness._task_stop``); these pin what the scope promised, on both backends where it
applies, and on asyncio that the task's cancel count is left as it was found."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from harness import EndReason, Message, Run, Tools, _task_stop
from harness.events import TextDelta, TurnEnded
from harness.model import Delta, Prompt, TextChunk
from tests.harness.run_support import LIMIT_S, ended

pytestmark = pytest.mark.anyio

ASYNCIO_ONLY = pytest.mark.parametrize("anyio_backend", ["asyncio"])


class ShieldedModel:
    """Streams one delta, then does shielded work until ``gate`` opens, then waits forever."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.gate = anyio.Event()
        self.finished_shielded = False

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        return self._run()

    async def _run(self) -> AsyncIterator[Delta]:
        yield TextChunk("Hel")
        with anyio.CancelScope(shield=True):
            self.entered.set()
            await self.gate.wait()
            self.finished_shielded = True
        await anyio.sleep(math.inf)


class SwallowingModel:
    """Streams one delta, swallows the first cancellation of its wait and streams ``then`` (when given), then
    waits forever again."""

    def __init__(self, then: str | None = "two") -> None:
        self.waiting = anyio.Event()
        self.swallowed = 0
        self._then = then

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        return self._run()

    async def _run(self) -> AsyncIterator[Delta]:
        yield TextChunk("one")
        try:
            self.waiting.set()
            await anyio.sleep(math.inf)
        except anyio.get_cancelled_exc_class():
            self.swallowed += 1
        if self._then is not None:
            yield TextChunk(self._then)
        await anyio.sleep(math.inf)


class SelfStoppingModel:
    """Streams one delta, then asks the run to stop from inside its own wait and waits forever."""

    def __init__(self) -> None:
        self.run: Run | None = None

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        return self._run()

    async def _run(self) -> AsyncIterator[Delta]:
        yield TextChunk("Hel")
        assert self.run is not None
        self.run.cancel()
        await anyio.sleep(math.inf)


async def _consume(run: Run, events: list[Any], streaming: anyio.Event) -> None:
    async with run.turn(Message.user("hi")) as stream:
        async for event in stream:
            events.append(event)
            if isinstance(event, TextDelta):
                streaming.set()


async def test_a_stop_waits_for_the_models_shielded_work_then_ends_the_turn_cancelled() -> None:
    model = ShieldedModel()
    run = Run(model, Tools())
    events: list[Any] = []
    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_consume, run, events, anyio.Event())
            await model.entered.wait()
            run.cancel()
            await anyio.wait_all_tasks_blocked()
            assert run.is_running()  # the shield holds the stop off
            assert not model.finished_shielded
            model.gate.set()
    assert model.finished_shielded
    assert isinstance(events[-1], TurnEnded)
    assert ended(run).reason is EndReason.CANCELLED


async def test_a_stop_asked_from_inside_the_models_own_wait_still_stops_it() -> None:
    model = SelfStoppingModel()
    run = Run(model, Tools())
    model.run = run
    events: list[Any] = []
    with anyio.fail_after(LIMIT_S):
        await _consume(run, events, anyio.Event())
    assert ended(run).reason is EndReason.CANCELLED
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Hel"]


@pytest.mark.parametrize("order", ["stop first", "outer first"])
async def test_an_outer_scope_cancelled_with_the_stop_still_cancels_the_consumer(order: str) -> None:
    model = ShieldedModel()
    model.gate.set()  # no shield to wait for: the model waits forever right after its delta
    run = Run(model, Tools())
    streaming = anyio.Event()
    after: list[str] = []
    outer = anyio.CancelScope()

    async def consume() -> None:
        with outer:
            await _consume(run, [], streaming)
            await anyio.lowlevel.checkpoint()
            after.append("ran on")

    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await streaming.wait()
            await anyio.wait_all_tasks_blocked()
            if order == "stop first":
                run.cancel()
                outer.cancel()
            else:
                outer.cancel()
                run.cancel()
    assert outer.cancelled_caught
    assert after == []
    assert not run.is_running()


@ASYNCIO_ONLY
async def test_after_a_stop_the_consumers_task_has_no_cancel_request_left() -> None:
    model = ShieldedModel()
    model.gate.set()
    run = Run(model, Tools())
    streaming = anyio.Event()
    counts: list[int] = []

    async def consume() -> None:
        await _consume(run, [], streaming)
        task = asyncio.current_task()
        assert task is not None
        counts.append(task.cancelling())
        await anyio.lowlevel.checkpoint()  # not cancelled by anything left over
        counts.append(task.cancelling())

    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await streaming.wait()
            await anyio.wait_all_tasks_blocked()
            run.cancel()
    assert counts == [0, 0]
    assert ended(run).reason is EndReason.CANCELLED


@ASYNCIO_ONLY
async def test_a_native_cancel_of_the_consumer_in_the_same_moment_as_a_stop_is_not_swallowed() -> None:
    model = ShieldedModel()
    model.gate.set()
    run = Run(model, Tools())
    streaming = anyio.Event()
    after: list[str] = []

    async def consume() -> None:
        await _consume(run, [], streaming)
        after.append("ran on")

    with anyio.fail_after(LIMIT_S):
        task = asyncio.get_running_loop().create_task(consume())
        await streaming.wait()
        await anyio.wait_all_tasks_blocked()
        run.cancel()
        task.cancel()  # folded into the stop's CancelledError: the count says there were two
        with pytest.raises(asyncio.CancelledError):
            await task
    assert after == []
    assert not run.is_running()


@ASYNCIO_ONLY
async def test_a_model_that_swallows_the_stop_is_stopped_at_its_next_delta_and_leaves_no_cancel_request() -> (
    None
):
    model = SwallowingModel()
    run = Run(model, Tools())
    events: list[Any] = []
    counts: list[int] = []

    async def consume() -> None:
        await _consume(run, events, anyio.Event())
        task = asyncio.current_task()
        assert task is not None
        counts.append(task.cancelling())

    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await model.waiting.wait()
            await anyio.wait_all_tasks_blocked()
            run.cancel()
    assert model.swallowed == 1
    assert counts == [0]
    assert ended(run).reason is EndReason.CANCELLED
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["one", "two"]


async def test_a_model_that_swallows_the_stop_and_waits_again_is_stopped_again() -> None:
    model = SwallowingModel(then=None)
    run = Run(model, Tools())
    counts: list[int] = []

    async def consume() -> None:
        await _consume(run, [], anyio.Event())
        task = _native_task()
        if task is not None:
            counts.append(task.cancelling())

    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await model.waiting.wait()
            await anyio.wait_all_tasks_blocked()
            run.cancel()
    assert model.swallowed == 1
    assert ended(run).reason is EndReason.CANCELLED
    assert counts in ([], [0])


def _native_task() -> asyncio.Task[Any] | None:
    """The running asyncio task, or None on trio."""
    try:
        return asyncio.current_task()
    except RuntimeError:
        return None


class GatedModel:
    """Streams "one", waits for ``gate``, streams "two", then waits forever."""

    def __init__(self) -> None:
        self.waiting = anyio.Event()
        self.gate = anyio.Event()

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        return self._run()

    async def _run(self) -> AsyncIterator[Delta]:
        yield TextChunk("one")
        self.waiting.set()
        await self.gate.wait()
        yield TextChunk("two")
        await anyio.sleep(math.inf)


async def test_a_delta_ready_when_the_stop_comes_is_delivered_before_the_turn_stops() -> None:
    model = GatedModel()
    run = Run(model, Tools())
    events: list[Any] = []
    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_consume, run, events, anyio.Event())
            await model.waiting.wait()
            await anyio.wait_all_tasks_blocked()
            model.gate.set()  # the model's wait is over: the consumer is about to wake with "two"
            run.cancel()
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["one", "two"]
    assert ended(run).reason is EndReason.CANCELLED


@ASYNCIO_ONLY
async def test_the_native_stop_is_in_use_on_asyncio_so_a_changed_anyio_fails_here_not_silently() -> None:
    """The stop reads anyio's private task state; where a new anyio moved it, the step falls back to a cancel
    scope per delta (correct, a fifth slower per update). This says so in CI instead of in a benchmark."""
    assert _task_stop.available()
