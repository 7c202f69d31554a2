"""The runner itself: it answers agent requests, and it fails agents that break the rules."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from .runner import mismatch, run_scenario

pytestmark = pytest.mark.anyio

_FAKE_AGENT = r"""
import json, sys
def out(obj): sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()
MODE = sys.argv[1]
if MODE == "banner":
    print("Welcome to my agent!"); sys.stdout.flush()
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        if MODE == "asks":
            out({"jsonrpc": "2.0", "id": "p1", "method": "session/request_permission", "params": {
                "sessionId": "s", "toolCall": {"toolCallId": "t1", "title": "Run"},
                "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]}})
            reply = json.loads(sys.stdin.readline())
            assert reply["id"] == "p1" and reply["result"]["outcome"]["optionId"] == "ok"
        result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
        if MODE == "bad_update":
            out({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk"}}})
        out({"jsonrpc": "2.0", "id": msg["id"], "result": result})
"""

_SCENARIO: dict[str, Any] = {
    "name": "fake",
    "steps": [
        {"send": {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}},
        {"expect": {"id": 0, "result": {"protocolVersion": 1}}},
    ],
}


async def _run(mode: str, scenario: dict[str, Any] = _SCENARIO) -> Any:
    return await run_scenario(scenario, [sys.executable, "-c", _FAKE_AGENT, mode], features={"core"})


async def test_a_conforming_fake_agent_passes() -> None:
    assert (await _run("plain")).ok


async def test_answer_steps_reply_to_agent_requests() -> None:
    scenario = {
        "name": "asks",
        "steps": [
            _SCENARIO["steps"][0],
            {
                "answer": {
                    "method": "session/request_permission",
                    "result": {"outcome": {"outcome": "selected", "optionId": "ok"}},
                }
            },
            _SCENARIO["steps"][1],
        ],
    }
    result = await _run("asks", scenario)
    assert result.ok, result.detail


async def test_a_banner_on_stdout_fails_the_scenario() -> None:
    result = await _run("banner")
    assert not result.ok and "not JSON" in result.detail


async def test_an_invalid_update_fails_schema_validation() -> None:
    result = await _run("bad_update")
    assert not result.ok and "invalid message" in result.detail


async def test_scenarios_needing_missing_features_are_skipped() -> None:
    result = await run_scenario(
        {"name": "x", "requires": ["script"], "steps": []}, ["true"], features={"core"}
    )
    assert result.skipped


def test_patterns_match_subsets_wildcards_and_types() -> None:
    assert mismatch({"a": "*", "b": "<absent>"}, {"a": None, "c": 1}) is None
    assert mismatch({"a": "<int>"}, {"a": True}) is not None
    assert mismatch([{"x": 1}], [{"x": 1, "y": 2}]) is None
    assert mismatch([{"x": 1}], []) is not None
    assert mismatch({"m": {"$contains": "CWD"}}, {"m": "invalid params: cwd: ..."}) is None
    assert mismatch({"$oneOf": [1, "a"]}, "a") is None
    assert mismatch(1, 1.0) is None and mismatch(1, "1") is not None
