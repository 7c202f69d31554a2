"""Read-only calls of a step run concurrently; the others after them, one at a time in model order.

Concurrency is proven with gates (each read-only call waits for the other), order with start/end markers.
"""

from __future__ import annotations

import anyio
import pytest

from harness import Call, EndReason, FunctionTool, Hints, Message, Run, Tools, tool
from harness.events import ToolEnded, ToolProgress
from harness.testing import FakeModel, Reply
from tests.harness.run_support import drive, ended, of, results_of

pytestmark = pytest.mark.anyio


async def test_read_only_calls_of_a_step_run_concurrently() -> None:
    gates = {"a": anyio.Event(), "b": anyio.Event()}

    @tool(name="a", read_only=True)
    async def a() -> str:
        gates["a"].set()
        await gates["b"].wait()  # deadlocks (and times out) unless b runs meanwhile
        return "A"

    @tool(name="b", read_only=True)
    async def b() -> str:
        gates["b"].set()
        await gates["a"].wait()
        return "B"

    model = FakeModel([Reply(tool_calls=[("a", {}, "ca"), ("b", {}, "cb")]), Reply(text="both")])
    run = Run(model, Tools(a, b))
    await drive(run, Message.user("go"))
    assert ended(run).reason is EndReason.DONE
    assert results_of(run.messages()[2]) == [("ca", "A", False), ("cb", "B", False)]


def marking_tool(name: str, log: list[str], *, read_only: bool = False) -> FunctionTool:
    async def body(n: int) -> str:
        log.append(f"start {name}{n}")
        for _ in range(5):  # give any concurrent call the chance to start meanwhile
            await anyio.lowlevel.checkpoint()
        log.append(f"end {name}{n}")
        return f"{name}{n}"

    return tool(name=name, read_only=read_only)(body)


async def test_calls_that_are_not_read_only_run_one_at_a_time_in_model_order() -> None:
    log: list[str] = []
    write = marking_tool("w", log)
    model = FakeModel(
        [
            Reply(tool_calls=[("w", {"n": 3}, "c3"), ("w", {"n": 1}, "c1"), ("w", {"n": 2}, "c2")]),
            Reply(text="done"),
        ]
    )
    run = Run(model, Tools(write))
    await drive(run, Message.user("go"))
    assert log == ["start w3", "end w3", "start w1", "end w1", "start w2", "end w2"]
    assert [cid for cid, _, _ in results_of(run.messages()[2])] == ["c3", "c1", "c2"]


async def test_read_only_calls_run_before_the_others_and_results_stay_in_model_order() -> None:
    log: list[str] = []
    write = marking_tool("w", log)
    read = marking_tool("r", log, read_only=True)
    model = FakeModel(
        [
            Reply(
                tool_calls=[
                    ("w", {"n": 1}, "cw1"),
                    ("r", {"n": 1}, "cr1"),
                    ("w", {"n": 2}, "cw2"),
                    ("r", {"n": 2}, "cr2"),
                ]
            ),
            Reply(text="done"),
        ]
    )
    run = Run(model, Tools(write, read))
    await drive(run, Message.user("go"))
    reads_done = max(log.index("end r1"), log.index("end r2"))
    assert log.index("start w1") > reads_done
    assert log.index("start w1") < log.index("end w1") < log.index("start w2") < log.index("end w2")
    assert results_of(run.messages()[2]) == [
        ("cw1", "w1", False),
        ("cr1", "r1", False),
        ("cw2", "w2", False),
        ("cr2", "r2", False),
    ]
    # The model saw the results in its own order too.
    assert [r.call_id for r in model.prompts[1].messages[-1].tool_results] == ["cw1", "cr1", "cw2", "cr2"]


async def test_tool_ended_comes_in_completion_order_while_results_keep_model_order() -> None:
    second_done = anyio.Event()

    @tool(name="slow", read_only=True)
    async def slow() -> str:
        await second_done.wait()
        return "slow"

    @tool(name="fast", read_only=True)
    async def fast() -> str:
        second_done.set()
        return "fast"

    model = FakeModel([Reply(tool_calls=[("slow", {}, "c_slow"), ("fast", {}, "c_fast")]), Reply(text="ok")])
    run = Run(model, Tools(slow, fast))
    events = await drive(run, Message.user("go"))
    assert [e.id for e in of(events, ToolEnded)] == ["c_fast", "c_slow"]
    assert [cid for cid, _, _ in results_of(run.messages()[2])] == ["c_slow", "c_fast"]


async def test_concurrent_read_only_calls_may_interleave_their_progress() -> None:
    turn_of = {"a": anyio.Event(), "b": anyio.Event()}

    def reporter(name: str, other: str) -> FunctionTool:
        async def body(call: Call) -> str:
            await call.progress(f"{name}1")
            turn_of[name].set()
            await turn_of[other].wait()
            await call.progress(f"{name}2")
            return name

        return FunctionTool(body, name=name, hints=Hints(read_only=True))

    model = FakeModel([Reply(tool_calls=[("a", {}, "ca"), ("b", {}, "cb")]), Reply(text="ok")])
    run = Run(model, Tools(reporter("a", "b"), reporter("b", "a")))
    events = await drive(run, Message.user("go"))
    progress = [(e.id, e.value) for e in of(events, ToolProgress)]
    assert sorted(progress) == [("ca", "a1"), ("ca", "a2"), ("cb", "b1"), ("cb", "b2")]
    # Each call's first progress precedes the other's second: they ran side by side.
    assert progress.index(("ca", "a1")) < progress.index(("cb", "b2"))
    assert progress.index(("cb", "b1")) < progress.index(("ca", "a2"))
    # Progress of a call comes before its ToolEnded.
    for cid in ("ca", "cb"):
        end_at = next(i for i, e in enumerate(events) if isinstance(e, ToolEnded) and e.id == cid)
        assert all(i < end_at for i, e in enumerate(events) if isinstance(e, ToolProgress) and e.id == cid)
