"""The scenario player in memory, against a scripted agent: the steps a scenario is made of (send, expect,
expect_until with the agent's requests answered on the way, check, answer, files, variables), sub-checks that
fail alone, lenient matches, timeouts, and the problems of the lines the agent writes."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectSendStream

from acp_conformance.agent import AgentProcess, Line
from acp_conformance.fake_model import FakeModel
from acp_conformance.fake_model.exchange import Recorded
from acp_conformance.macros import expand_macros
from acp_conformance.player import NotApplicable, Player, StepFailure
from acp_conformance.validate import MessageValidator

pytestmark = pytest.mark.anyio

Script = Callable[[Any], list[Any]]
"""What the scripted agent writes back for each message the kit writes (bytes: a raw line)."""


def _update(update: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "sess-1", "update": update}}


def _chunk(text: str) -> dict[str, Any]:
    return _update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


class ScriptedAgent(AgentProcess):
    """The agent under test in memory: every line the kit writes is answered by ``script``, and what the agent
    writes is validated as the real reader does."""

    def __init__(self, script: Script, send: MemoryObjectSendStream[Line | None]) -> None:
        super().__init__(["scripted-agent"], {}, ".", MessageValidator(), {})
        self.script = script
        self.send = send
        self.received: list[Any] = []

    async def write(self, data: bytes) -> None:
        msg = json.loads(data)
        self.received.append(msg)
        for out in self.script(msg):
            await self.emit(out)

    async def emit(self, out: Any) -> None:
        if isinstance(out, bytes):
            await self.send.send(Line(out, problems=["a stdout line that is not JSON"]))
            return
        line = Line(json.dumps(out).encode(), out, True, self.validator.check(out, self.sent_methods))
        await self.send.send(line)


@asynccontextmanager
async def playing(script: Script, root: Path, **options: Any) -> AsyncGenerator[tuple[Player, ScriptedAgent]]:
    send, receive = anyio.create_memory_object_stream[Line | None](100)
    agent = ScriptedAgent(script, send)
    agent.lines = receive
    with send, receive, anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            variables: dict[str, Any] = {"CWD": str(root)}
            yield Player(agent, variables, tg, client_caps={}, root=root, **options), agent


def _coding_agent(msg: Any) -> list[Any]:
    """Initialize, a session, and a prompt turn that asks permission before it ends."""
    match msg:
        case {"method": "initialize", "id": rid}:
            return [{"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 1}}]
        case {"method": "session/new", "id": rid}:
            return [{"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "sess-1"}}]
        case {"method": "session/prompt", "id": rid}:
            options = [
                {"optionId": "no", "name": "No", "kind": "reject_once"},
                {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
            ]
            ask = {"sessionId": "sess-1", "toolCall": {"toolCallId": "c1"}, "options": options}
            return [
                _chunk("Hel"),
                {
                    "jsonrpc": "2.0",
                    "id": f"perm-{rid}",
                    "method": "session/request_permission",
                    "params": ask,
                },
            ]
        case {"id": str(rid), "result": _} if rid.startswith("perm-"):
            commands = _update({"sessionUpdate": "available_commands_update", "availableCommands": []})
            done = {
                "jsonrpc": "2.0",
                "id": int(rid.removeprefix("perm-")),
                "result": {"stopReason": "end_turn"},
            }
            return [commands, _chunk("lo"), done]
        case _:
            return []


async def test_a_prompt_turn_plays_answering_the_agents_permission_request_on_the_way(tmp_path: Path) -> None:
    steps = expand_macros(
        [
            {"initialize": {"capture": {"VERSION": "result.protocolVersion"}}},
            {"new_session": {}},
            {"prompt": {"text": "hi", "collect": "turn"}},
            {
                "check": "turn",
                "min": 2,
                "joined": {"update": {"sessionUpdate": "agent_message_chunk"}, "contains": "Hello"},
            },
        ],
        client={},
    )
    async with playing(_coding_agent, tmp_path, permission="reject") as (player, agent):
        await player.play(steps)
    assert player.vars["S"] == "sess-1" and player.vars["VERSION"] == 1
    assert [m["params"]["update"]["content"]["text"] for m in player.collected["turn"]] == ["Hel", "lo"]
    assert len(player.collected["_transparent"]) == 1 and len(player.collected["_requests"]) == 1
    answer = agent.received[-1]
    assert answer == {
        "jsonrpc": "2.0",
        "id": "perm-2",
        "result": {"outcome": {"outcome": "selected", "optionId": "no"}},
    }
    assert player.wire_problems == [] and player.violations == [] and player.count == 7


async def test_a_failed_sub_check_is_reported_alone_and_a_lenient_match_lets_the_scenario_go_on(
    tmp_path: Path,
) -> None:
    def refuses(msg: Any) -> list[Any]:
        return [{"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32603, "message": "internal"}}]

    named = {"id": "errors.invalid-params", "title": "t", "level": "SHOULD", "source": "docs/x.mdx"}
    steps: list[dict[str, Any]] = [
        {"send": {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}}},
        {
            "expect": {"id": 1, "error": {"code": -32602}},
            "as": named,
            "lenient": {"id": 1, "error": "<object>"},
        },
        {"send": {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {}}},
        {"expect": {"id": 2, "error": {"code": -32603}}, "as": {**named, "id": "errors.internal"}},
        {"send": {"jsonrpc": "2.0", "id": 3, "method": "session/new", "params": {}}},
        {"expect": {"id": 3, "result": {"sessionId": "<string>"}}},
    ]
    async with playing(refuses, tmp_path) as (player, _):
        with pytest.raises(StepFailure) as failure:
            await player.play(steps)
    assert str(failure.value).startswith("step 6 (expect): $.result: missing")
    (first, ok1, detail), (second, ok2, _) = player.sub_results
    assert (first["id"], ok1, second["id"], ok2) == ("errors.invalid-params", False, "errors.internal", True)
    assert detail.startswith("step 2 (expect): $.error.code: expected -32602, got -32603")


async def test_a_sub_check_that_misses_even_the_lenient_pattern_fails_the_scenario(tmp_path: Path) -> None:
    def answers(msg: Any) -> list[Any]:
        return [{"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": "s"}}]

    named = {"id": "x", "title": "t", "level": "SHOULD", "source": "docs/x.mdx"}
    steps: list[dict[str, Any]] = [
        {"send": {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}}},
        {
            "expect": {"id": 1, "error": {"code": -32602}},
            "as": named,
            "lenient": {"id": 1, "error": "<object>"},
        },
    ]
    async with playing(answers, tmp_path) as (player, _):
        with pytest.raises(StepFailure, match=r"^step 2 \(expect\): \$\.error: missing"):
            await player.play(steps)
    assert [ok for _, ok, _ in player.sub_results] == [False]


async def test_a_silent_agent_times_the_step_out_and_a_wrong_request_is_named(tmp_path: Path) -> None:
    async with playing(lambda msg: [], tmp_path) as (player, _):
        with pytest.raises(StepFailure, match="timed out after 20 ms waiting for a message matching"):
            await player.step({"expect": {"id": 1}, "timeout_ms": 20})
        await player.step({"expect_silence_ms": 20})

    def notifies(msg: Any) -> list[Any]:
        return [_chunk("unasked")]

    async with playing(notifies, tmp_path) as (player, _):
        await player.step({"send": {"jsonrpc": "2.0", "method": "ping"}})
        with pytest.raises(StepFailure, match=r"expected a fs/read_text_file request, got .*unasked"):
            await player.step({"answer": {"method": "fs/read_text_file", "result": {}}})


async def test_the_answer_step_replies_to_the_agents_request_as_the_scenario_says(tmp_path: Path) -> None:
    def reads(msg: Any) -> list[Any]:
        if msg.get("method") == "session/prompt":
            read = {"sessionId": "sess-1", "path": "/p/a.txt"}
            return [
                _chunk("reading"),
                {"jsonrpc": "2.0", "id": 40, "method": "fs/read_text_file", "params": read},
            ]
        return []

    steps: list[dict[str, Any]] = [
        {"send": {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {}}},
        {
            "answer": {"method": "fs/read_text_file", "error": {"code": -32002, "message": "no"}},
            "skip_notifications": True,
            "collect": "before",
        },
    ]
    async with playing(reads, tmp_path) as (player, agent):
        await player.play(steps)
    assert player.vars["REQUEST_ID"] == 40 and len(player.collected["before"]) == 1
    assert agent.received[-1] == {"jsonrpc": "2.0", "id": 40, "error": {"code": -32002, "message": "no"}}


async def test_expect_all_takes_messages_in_any_order_and_refuses_one_not_allowed(tmp_path: Path) -> None:
    def two_answers(msg: Any) -> list[Any]:
        return [
            _chunk("first"),
            {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "cancelled"}},
            {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}},
        ]

    wanted = [{"id": 1, "result": "<object>"}, {"id": 2, "result": "<object>"}]
    async with playing(two_answers, tmp_path) as (player, _):
        await player.step({"send": {"jsonrpc": "2.0", "method": "go"}})
        await player.step({"expect_all": wanted, "collect": "both"})
        assert len(player.collected["both"]) == 1
        await player.step({"send": {"jsonrpc": "2.0", "method": "go"}})
        with pytest.raises(StepFailure, match="unexpected message"):
            await player.step({"expect_all": wanted, "allow": {"method": "<absent>"}})


async def test_lines_that_are_not_acp_are_kept_as_wire_problems(tmp_path: Path) -> None:
    def sloppy(msg: Any) -> list[Any]:
        return [b"Loading model...", {"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": 5}}]

    async with playing(sloppy, tmp_path) as (player, _):
        await player.step({"send": {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}}})
        await player.step({"expect": {"id": 1}})
    assert len(player.wire_problems) == 2
    assert "not JSON" in player.wire_problems[0] and "NewSessionResponse" in player.wire_problems[1]


async def test_variables_files_and_requirements_steps(tmp_path: Path) -> None:
    async with playing(lambda msg: [], tmp_path) as (player, _):
        player.vars.update({"A": "x", "B": "x", "C": {"k": 1}})
        await player.step({"write_file": {"path": "dir/f.txt", "text": "${A}!"}})
        await player.step({"check_file": {"path": "dir/f.txt", "text": "x!"}})
        await player.step({"check_file": {"path": "missing.txt", "absent": True}})
        await player.step({"check_var": "C", "pattern": {"k": "<int>"}})
        await player.step({"assert_distinct": ["A", "C"]})
        failures = [
            ({"check_file": {"path": "dir/f.txt", "text": "other"}}, "holds 'x!', expected 'other'"),
            ({"check_file": {"path": "dir/f.txt", "absent": True}}, "exists, expected it absent"),
            ({"check_file": {"path": "nope.txt", "text": ""}}, "cannot read nope.txt"),
            ({"check_var": "C", "pattern": {"k": "<string>"}}, r"\$\.k: expected <string>"),
            ({"check_var": "D", "pattern": "*"}, "D was not captured"),
            ({"assert_distinct": ["A", "B"]}, "expected distinct values"),
            ({"check": "none-collected", "min": 1}, "collected 0 messages"),
            ({"bogus": 1}, "unknown step"),
            ({"model_request": {"contains": "x"}}, "no fake model in this run"),
        ]
        for step, message in failures:
            with pytest.raises(StepFailure, match=message):
                await player.step(step)
        with pytest.raises(NotApplicable, match="needs a list"):
            await player.step({"require_var": "LIST", "reason": "needs a list"})
    assert (tmp_path / "dir" / "f.txt").read_text(encoding="utf-8") == "x!"


async def test_model_request_checks_present_and_absent_text_and_release_model_lets_a_stalled_turn_go_on(
    tmp_path: Path,
) -> None:
    with FakeModel() as model:  # the steps read its records and set its release event only
        body = json.dumps({"messages": [{"role": "user", "content": 'KIT-STEER "quoted"'}]}).encode()
        model.model_requests.append(Recorded("POST", "/v1/chat/completions", {}, body))
        async with playing(lambda msg: [], tmp_path, model=model) as (player, _):
            await player.step(
                {"model_request": {"index": 0, "contains": "KIT-STEER", "absent": "KIT-QUEUED"}}
            )
            await player.step({"model_request": {"contains": 'KIT-STEER "quoted"'}})  # as JSON escapes it
            failures = [
                (
                    {"model_request": {"index": 0, "absent": "KIT-STEER"}},
                    "carries 'KIT-STEER', expected it absent",
                ),
                ({"model_request": {"index": 0, "contains": "KIT-QUEUED"}}, "does not carry 'KIT-QUEUED'"),
                ({"model_request": {"index": 1, "absent": "x"}}, "got 1 requests, expected at least 2"),
            ]
            for step, message in failures:
                with pytest.raises(StepFailure, match=message):
                    await player.step(step)
            assert not model.stall_release.is_set()
            await player.step({"release_model": True})
            assert model.stall_release.is_set()
        async with playing(lambda msg: [], tmp_path) as (player, _):
            with pytest.raises(StepFailure, match="no fake model in this run"):
                await player.step({"release_model": True})
