"""LoopGuard: the same failing call, or the same unchanged read, is noted once, then the turn stops."""

from __future__ import annotations

from typing import Any

import pytest

from harness import EndReason, Message, Options, Result, Run, Tools, tool
from harness.loops import LoopGuard
from harness.testing import FakeModel, Reply
from tests.harness.run_support import all_results, drive, ended

pytestmark = pytest.mark.anyio

ran: list[str] = []


@tool
def edit(path: str) -> Result:
    ran.append(path)
    return Result.failure(f"old_text was not found in {path}")


@tool(read_only=True)
def look(path: str) -> str:
    ran.append(path)
    return f"contents of {path}"


@tool
def touch(path: str) -> str:
    return "touched"


def _run(replies: list[Reply], guard: LoopGuard) -> Run:
    ran.clear()
    model = FakeModel([*replies, Reply(text="done")])
    return Run(
        model,
        Tools(edit, look, touch),
        middleware=[guard],
        options=Options(stop=(guard.stop,), tool_retries=50),
    )


def _calls(*items: tuple[str, dict[str, Any]]) -> list[Reply]:
    return [Reply(tool_calls=[(name, inp, f"c{i}")]) for i, (name, inp) in enumerate(items)]


async def test_a_call_failing_three_times_is_noted_and_the_fourth_is_not_run_and_stops_the_turn() -> None:
    told: list[str] = []

    async def tell(text: str) -> None:
        told.append(text)

    guard = LoopGuard(on_stop=tell)
    run = _run(_calls(*[("edit", {"path": "a"})] * 5), guard)
    await drive(run, Message.user("go"))
    results = all_results(run.messages())
    assert ran == ["a", "a", "a"]
    assert "failed 3 times in a row" in results["c2"].text
    assert "[Note" not in results["c1"].text
    assert results["c3"].text.startswith("Not run. Stopped: the model sent edit")
    assert ended(run).reason is EndReason.STOPPED
    assert len(told) == 1 and "reply to let it go on" in told[0]
    assert "c4" not in results


async def test_a_different_input_between_failures_starts_the_count_again() -> None:
    guard = LoopGuard()
    seq = [
        ("edit", {"path": "a"}),
        ("edit", {"path": "a"}),
        ("edit", {"path": "b"}),
        ("edit", {"path": "a"}),
        ("edit", {"path": "a"}),
    ]
    run = _run(_calls(*seq), guard)
    await drive(run, Message.user("go"))
    assert ran == ["a", "a", "b", "a", "a"]
    assert ended(run).reason is EndReason.DONE


async def test_the_same_unchanged_read_is_noted_at_the_third_and_stops_at_the_fourth() -> None:
    guard = LoopGuard()
    run = _run(_calls(*[("look", {"path": "x"})] * 4), guard)
    await drive(run, Message.user("go"))
    results = all_results(run.messages())
    assert ran == ["x", "x", "x"]
    assert "read this 3 times" in results["c2"].text and "[Note" not in results["c1"].text
    assert "Not run" in results["c3"].text and ended(run).reason is EndReason.STOPPED


async def test_a_change_between_reads_starts_the_read_count_again() -> None:
    guard = LoopGuard()
    seq = [
        ("look", {"path": "x"}),
        ("look", {"path": "x"}),
        ("touch", {"path": "x"}),
        ("look", {"path": "x"}),
        ("look", {"path": "x"}),
    ]
    run = _run(_calls(*seq), guard)
    await drive(run, Message.user("go"))
    assert ran == ["x"] * 4 and ended(run).reason is EndReason.DONE


async def test_after_a_stop_the_user_can_let_it_go_on() -> None:
    guard = LoopGuard()
    run = _run(_calls(*[("edit", {"path": "a"})] * 4), guard)
    await drive(run, Message.user("go"))
    assert ended(run).reason is EndReason.STOPPED
    await drive(run, Message.user("go on"))
    assert ended(run).reason is EndReason.DONE
