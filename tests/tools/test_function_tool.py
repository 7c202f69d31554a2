"""``FunctionTool``: a sync function runs in a worker thread, never on the event loop; ``meta`` reaches the
spec."""

from __future__ import annotations

import threading

import anyio
import pytest

from harness import FunctionTool, tool
from harness.testing import call_tool

pytestmark = pytest.mark.anyio


async def test_a_sync_tool_runs_in_a_thread_so_the_loop_keeps_running() -> None:
    released = threading.Event()
    loop_thread = threading.get_ident()

    @tool
    def blocking() -> str:
        """Waits for the event loop to release it: only possible when it does not run on the loop."""
        assert threading.get_ident() != loop_thread
        return "released" if released.wait(10) else "the loop was blocked"

    async def release() -> None:
        released.set()  # runs only once the call lets the loop go on

    texts: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(release)
        with anyio.fail_after(20):
            texts.append((await call_tool(blocking, {})).result.as_text())
    assert texts == ["released"]


async def test_cancelling_a_call_does_not_wait_for_the_sync_function() -> None:
    stop = threading.Event()

    @tool
    def stuck() -> str:
        stop.wait(30)
        return "late"

    with anyio.fail_after(10):
        with anyio.move_on_after(0.2) as scope:
            await call_tool(stuck, {})
    stop.set()
    assert scope.cancelled_caught


async def test_meta_reaches_the_spec() -> None:
    @tool(read_only=True, meta={"kind": "search"})
    def find(q: str) -> str:
        return q

    assert find.spec().meta == {"kind": "search"}
    assert FunctionTool(lambda: None, name="x", meta={"kind": "read"}).spec().meta["kind"] == "read"
    assert (await call_tool(find, {"q": "hi"})).result.as_text() == "hi"
