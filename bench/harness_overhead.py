"""Harness overhead: events/s of a streamed reply and µs of harness work per tool-loop step.

Baselines measured in the same run: iterating the same FakeModel deltas bare (the floor), and handing
each event to another task over a zero-buffer memory stream (what a task-per-turn design costs).

    python bench/harness_overhead.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import anyio

from harness import Message, Options, Run, Tools, max_steps, tool
from harness.model import Prompt, TextChunk
from harness.testing import FakeModel, Reply


def _deltas_reply(n: int) -> Reply:
    return Reply(deltas=[TextChunk("x")] * n)


async def _floor(n: int) -> float:
    model = FakeModel([_deltas_reply(n)])
    t = time.perf_counter()
    count = 0
    async for _ in model.stream(Prompt(None, [], [])):
        count += 1
    return count / (time.perf_counter() - t)


async def _memory_stream(n: int) -> float:
    model = FakeModel([_deltas_reply(n)])
    send, receive = anyio.create_memory_object_stream[Any](0)
    count = 0
    t = time.perf_counter()

    async def produce() -> None:
        async with send:
            async for d in model.stream(Prompt(None, [], [])):
                await send.send(d)

    async with anyio.create_task_group() as tg:
        tg.start_soon(produce)
        async with receive:
            async for _ in receive:
                count += 1
    return count / (time.perf_counter() - t)


async def _run_events(n: int) -> float:
    model = FakeModel([_deltas_reply(n)])
    run = Run(model, Tools())
    count = 0
    t = time.perf_counter()
    async with run.turn(Message.user("go")) as events:
        async for _ in events:
            count += 1
    return count / (time.perf_counter() - t)


@tool(read_only=False)
def noop() -> str:
    """Does nothing."""
    return "ok"


async def _steps(steps: int) -> float:
    replies = [Reply(tool_calls=[("noop", {})]) for _ in range(steps - 1)] + [Reply(text="done")]
    model = FakeModel(replies)
    run = Run(model, Tools(noop), options=Options(stop=(max_steps(steps + 1),)))
    t = time.perf_counter()
    async with run.turn(Message.user("go")) as events:
        async for _ in events:
            pass
    elapsed = time.perf_counter() - t
    assert run.ended() is not None and run.ended().reason.value == "done"  # type: ignore[union-attr]
    return elapsed / steps * 1e6


def rows(quick: bool) -> list[dict[str, Any]]:
    from harness._validate import input_error

    input_error({"type": "object"}, {})  # import jsonschema before timing: a one-off cost, not per step
    n = 20_000 if quick else 100_000
    steps = 50 if quick else 200
    out: list[dict[str, Any]] = []
    for backend in ("asyncio", "trio"):
        floor = anyio.run(_floor, n, backend=backend)
        mem = anyio.run(_memory_stream, n, backend=backend)
        rate = anyio.run(_run_events, n, backend=backend)
        per_step = anyio.run(_steps, steps, backend=backend)
        target = 200_000 if backend == "asyncio" else None
        out.append(
            {
                "bench": "harness_overhead",
                "figure": f"events_per_s_{backend}",
                "value": round(rate),
                "target": target,
                "baseline": round(mem),
                "floor_bare_iteration": round(floor),
                "ratio_vs_memory_stream": round(rate / mem, 2),
                "ok": (rate >= target) if target else None,
            }
        )
        out.append(
            {
                "bench": "harness_overhead",
                "figure": f"us_per_tool_step_{backend}",
                "value": round(per_step, 1),
                "target": None,
                "ok": None,
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller runs, for CI")
    args = parser.parse_args()
    got = rows(args.quick)
    print(f"{'figure':26} {'value':>12} {'baseline (memory stream)':>26}")
    for r in got:
        print(f"{r['figure']:26} {r['value']:>12} {r.get('baseline', ''):>26}")
    for r in got:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
