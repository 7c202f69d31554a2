"""The stop hooks at the turn's end, in memory (scripted hook results, no process): a block keeps the turn
going with the reason as the model's next message, ``stop_hook_active`` tells the hook it did, the cap
ends it, ``continue: false`` wins; Claude Code's outputs read as Claude Code reads them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.coding.context._hook_calls import MAX_CONTINUATIONS, StopHooks
from acp_agent.coding.context._hooks import CONTEXT_LIMIT, HookOutcome, Hooks, interpret
from acp_agent.coding.context._process import Completed
from acp_agent.config import HookEntry
from acp_agent.meta_keys import HOOK_SHOWN_META
from harness import EndReason, Message, Run, Tools
from harness.secrets import Secrets
from harness.testing import FakeModel, Reply

pytestmark = pytest.mark.anyio

LIMIT_S = 5.0
STOP = HookEntry("stop", "./check-tests.sh", source="user config")


def _json(data: dict[str, Any]) -> Completed:
    return Completed(0, stdout=json.dumps(data))


class ScriptedHooks(Hooks):
    """Real ``Hooks`` whose commands do not run: each run of an event takes the next scripted results
    (one ``Completed`` per entry), read by the real ``interpret``; the facts and the shows are kept."""

    def __init__(self, entries: Sequence[HookEntry], script: Sequence[Sequence[Completed]]) -> None:
        self.shown: list[tuple[str, str, bool]] = []

        async def show(title: str, text: str, failed: bool) -> None:
            self.shown.append((title, text, failed))

        super().__init__(entries, session_id="s1", cwd=Path("/"), environ={}, secrets=Secrets(), show=show)
        self.script = list(script)
        self.facts: list[dict[str, Any]] = []
        self.started = anyio.Event()
        self.hang = False

    async def run(self, event: str, facts: Mapping[str, Any], tool: str | None = None) -> list[HookOutcome]:
        self.facts.append(json.loads(self._payload(event, facts)))
        self.started.set()
        if self.hang:
            await anyio.sleep_forever()
        results = self.script.pop(0) if self.script else [Completed(0)] * len(self.active(event, tool))
        outcomes: list[HookOutcome] = []
        for entry, done in zip(self.active(event, tool), results, strict=False):
            outcomes.append(interpret(entry, done))
            if outcomes[-1].blocked is not None:
                break
        return outcomes


async def _turn(run: Run, text: str = "fix the tests") -> None:
    with anyio.fail_after(LIMIT_S):
        async with run.turn(Message.user(text)) as events:
            async for _ in events:
                pass


def _reason(run: Run) -> EndReason | None:
    ended = run.ended()
    return ended.reason if ended is not None else None


def _texts(run: Run) -> list[str]:
    return [m.text for m in run.messages()]


# --- what a stop hook's output means ----------------------------------------------------------------


def test_a_stop_hooks_exit_2_and_its_decision_block_are_blocks_with_their_reason() -> None:
    assert interpret(STOP, Completed(2, stderr="3 tests fail\n")).blocked == "3 tests fail"
    said = interpret(STOP, _json({"decision": "block", "reason": "run the linter"}))
    assert said.blocked == "run the linter" and said.halt is None
    assert interpret(STOP, _json({"decision": "block"})).blocked == "no reason given"
    assert interpret(STOP, _json({"decision": "approve"})).blocked is None
    assert interpret(STOP, Completed(1, stderr="oops")).failure is not None, "only exit 2 blocks"


def test_continue_false_ends_the_turn_whatever_the_decision_and_its_stop_reason_is_the_users() -> None:
    said = interpret(STOP, _json({"continue": False, "stopReason": "out of budget", "decision": "block"}))
    assert said.halt == "out of budget" and said.blocked is None
    assert interpret(STOP, _json({"continue": False})).halt == "a hook ended the turn"
    assert interpret(STOP, _json({"continue": True, "decision": "block", "reason": "r"})).blocked == "r"


@pytest.mark.parametrize(
    "done",
    [
        Completed(0, stdout='{"decision": "block", "reason": '),  # cut JSON
        Completed(0, stdout="block"),  # plain words
        Completed(0, stdout='{"decision": ["block"]}'),
        Completed(0, stdout='["block"]'),
        Completed(None, timed_out=True),
        Completed(None, error="cannot start bash"),
        Completed(1, stderr="block"),
    ],
)
def test_a_stop_hook_that_fails_or_says_something_else_does_not_keep_the_turn_going(done: Completed) -> None:
    assert interpret(STOP, done).blocked is None


def test_a_stop_hooks_reason_is_cut_to_the_context_limit() -> None:
    said = interpret(STOP, Completed(2, stderr="x" * 50_000))
    assert said.blocked == "x" * CONTEXT_LIMIT


def test_continue_false_wins_over_a_pre_tool_hooks_deny_and_a_session_start_hooks_is_not_read() -> None:
    pre = HookEntry("pre_tool_use", "guard", source="user config")
    said = interpret(pre, _json({"continue": False, "decision": "deny", "reason": "no rm"}))
    assert said.halt == "a hook ended the turn"  # (the call does not run either way: ``PreToolHooks``)
    start = HookEntry("session_start", "hello", source="user config")
    assert interpret(start, _json({"continue": False, "stopReason": "x"})).halt is None


# --- the turn goes on --------------------------------------------------------------------------------


async def test_a_blocking_stop_hook_keeps_the_turn_going_once_with_its_reason_as_the_next_message() -> None:
    hooks = ScriptedHooks([STOP], [[Completed(2, stderr="2 tests fail: test_a, test_b")], [Completed(0)]])
    model = FakeModel([Reply(text="All done."), Reply(text="Fixed test_a and test_b.")])
    run = Run(model, Tools(), middleware=[StopHooks(hooks)])
    await _turn(run)
    feedback = "Stop hook feedback:\n[./check-tests.sh]: 2 tests fail: test_a, test_b"
    assert _texts(run) == ["fix the tests", "All done.", feedback, "Fixed test_a and test_b."]
    assert model.prompts[1].messages[-1].text == feedback
    shown = {"title": "Hook stop: ./check-tests.sh", "text": "The turn goes on: 2 tests fail: test_a, test_b"}
    assert run.messages()[2].meta == {HOOK_SHOWN_META: shown}, "session/load shows the hook's entry again"
    assert _reason(run) is EndReason.DONE
    assert [f["stop_hook_active"] for f in hooks.facts] == [False, True]
    assert hooks.facts[0]["hook_event_name"] == "Stop" and hooks.facts[0]["event"] == "stop"
    assert hooks.facts[0]["last_message"] == hooks.facts[0]["last_assistant_message"] == "All done."
    assert hooks.facts[1]["last_message"] == "Fixed test_a and test_b."
    assert hooks.shown == [
        ("Hook stop: ./check-tests.sh", "The turn goes on: 2 tests fail: test_a, test_b", False)
    ]


async def test_a_stop_hook_keeps_the_turn_going_twice_through_decision_block() -> None:
    block = _json({"decision": "block", "reason": "lint fails"})
    hooks = ScriptedHooks([STOP], [[block], [block], [Completed(0)]])
    run = Run(
        FakeModel([Reply(text=t) for t in ("a", "b", "c", "d")]), Tools(), middleware=[StopHooks(hooks)]
    )
    await _turn(run)
    assert (
        _texts(run)[-1] == "c"
        and _texts(run).count("Stop hook feedback:\n[./check-tests.sh]: lint fails") == 2
    )
    assert [f["stop_hook_active"] for f in hooks.facts] == [False, True, True]
    await _turn(run, "next")
    assert hooks.facts[-1]["stop_hook_active"] is False, "a new turn starts over"


async def test_a_stop_hook_that_never_passes_stops_at_the_cap_and_the_user_is_told() -> None:
    hooks = ScriptedHooks([STOP], [[Completed(2, stderr="still failing")]] * 50)
    model = FakeModel([Reply(text=f"try {i}") for i in range(MAX_CONTINUATIONS + 1)])
    run = Run(model, Tools(), middleware=[StopHooks(hooks)])
    await _turn(run)
    assert MAX_CONTINUATIONS == 8  # Claude Code's cap
    assert model.calls == MAX_CONTINUATIONS + 1
    assert _texts(run)[-1] == f"try {MAX_CONTINUATIONS}"
    assert _reason(run) is EndReason.DONE
    title, text, failed = hooks.shown[-1]
    assert title == "Hook stop: ./check-tests.sh" and failed
    assert "still failing" in text and "8 times in a row" in text and "the turn ends here" in text
    assert [s[2] for s in hooks.shown[:-1]] == [False] * MAX_CONTINUATIONS


async def test_continue_false_from_one_hook_wins_over_anothers_block() -> None:
    halt = HookEntry("stop", "budget", source="user config")
    hooks = ScriptedHooks(
        [halt, STOP], [[_json({"continue": False, "stopReason": "budget spent"}), Completed(2, stderr="go")]]
    )
    run = Run(FakeModel([Reply(text="done")]), Tools(), middleware=[StopHooks(hooks)])
    await _turn(run)
    assert _texts(run) == ["fix the tests", "done"]
    assert hooks.shown == [("Hook stop: budget", "The turn ends: budget spent", False)]


async def test_a_reply_cut_at_the_output_limit_runs_no_stop_hook() -> None:
    hooks = ScriptedHooks([STOP], [[Completed(2, stderr="go on")]])
    run = Run(FakeModel([Reply(text="half", finish="length")]), Tools(), middleware=[StopHooks(hooks)])
    await _turn(run)
    assert hooks.facts == [] and _texts(run) == ["fix the tests", "half"]


async def test_a_stop_hooks_context_is_shown_and_the_turn_ends() -> None:
    hooks = ScriptedHooks([STOP], [[_json({"context": "coverage 81%"})]])
    run = Run(FakeModel([Reply(text="done")]), Tools(), middleware=[StopHooks(hooks)])
    await _turn(run)
    assert _texts(run) == ["fix the tests", "done"]
    assert hooks.shown == [("Hook stop: ./check-tests.sh", "coverage 81%", False)]


async def test_cancel_while_a_stop_hook_runs_ends_the_turn_cancelled_at_once() -> None:
    hooks = ScriptedHooks([STOP], [])
    hooks.hang = True
    run = Run(FakeModel([Reply(text="done")]), Tools(), middleware=[StopHooks(hooks)])
    with anyio.fail_after(LIMIT_S):
        async with anyio.create_task_group() as tg:

            async def cancel() -> None:
                await hooks.started.wait()
                run.cancel()

            tg.start_soon(cancel)
            await _turn(run)
    assert _reason(run) is EndReason.CANCELLED
    assert _texts(run) == ["fix the tests", "done"], "the reply was complete: it stays"


async def test_without_stop_hooks_the_turn_ends_and_nothing_runs() -> None:
    pre = HookEntry("pre_tool_use", "guard", source="user config")
    hooks = ScriptedHooks([pre], [])
    run = Run(FakeModel([Reply(text="done")]), Tools(), middleware=[StopHooks(hooks)])
    await _turn(run)
    assert hooks.facts == [] and _texts(run) == ["fix the tests", "done"]
