"""A cancelled turn's partial reply through the real process and an HTTP provider: it is on disk when the
``cancelled`` answer comes (a ``session/load`` right after it, or after a ``kill -9`` right after it,
replays it), and an end of input right after the answer still exits with everything written."""

from __future__ import annotations

import json
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_conformance.fake_model import FakeServer, Recorded, Reply, Stall
from bench._wire import http_agent, provider_server, stream_for
from tests.reliability._reliability_support import (
    AgentProcess,
    agent_env,
    agent_process,
    initialized,
    params_of,
    update_of,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(120), pytest.mark.process]

LIMIT_S = 60


def _held_stream(_request: Recorded) -> Reply:
    """A few deltas, then nothing until the client closes the stream (a model between tokens)."""
    return Reply(200, {"content-type": "text/event-stream"}, [stream_for("openai", 5, end=False), Stall()])


@contextmanager
def _server() -> Generator[FakeServer]:
    with provider_server(_held_stream) as (server, _arrivals):
        yield server


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def _env(home: Path, server: FakeServer) -> dict[str, str]:
    env = agent_env(home)
    env.update(http_agent(home, "openai", server.url))
    return env


def _agent_texts(agent: AgentProcess, session_id: str, start: int = 0) -> list[str]:
    out: list[str] = []
    for note in agent.notifications[start:]:
        params, update = params_of(note), update_of(note)
        if params.get("sessionId") == session_id and update.get("sessionUpdate") == "agent_message_chunk":
            content: dict[str, Any] = update.get("content") or {}
            out.append(str(content.get("text", "")))
    return out


async def _cancelled_mid_stream(agent: AgentProcess, cwd: Path) -> tuple[str, str]:
    """A session whose first prompt is cancelled while the model streams; (session id, the reply shown)."""
    await initialized(agent)
    sid = (await agent.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["sessionId"]
    rid = await agent.request(
        "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
    )
    await agent.notification(lambda n: update_of(n).get("sessionUpdate") == "agent_message_chunk")
    await agent.notify("session/cancel", {"sessionId": sid})
    answer = await agent.response(rid)
    assert answer.get("result") == {"stopReason": "cancelled"}, answer
    shown = "".join(_agent_texts(agent, sid))
    assert shown.startswith("tok0 ")
    return sid, shown


async def _replays(agent: AgentProcess, sid: str, cwd: Path, shown: str) -> None:
    """``session/load`` replays the partial reply as the user saw it, then the cancelled marker."""
    start = len(agent.notifications)
    await agent.call("session/load", {"sessionId": sid, "cwd": str(cwd), "mcpServers": []})
    replayed = _agent_texts(agent, sid, start)
    assert replayed[0] == shown
    assert replayed[-1].strip() == "(cancelled)"


async def test_a_load_sent_right_after_the_cancelled_answer_replays_the_partial_reply(
    home: Path, cwd: Path
) -> None:
    with _server() as server, anyio.fail_after(LIMIT_S):
        async with agent_process(home, _env(home, server)) as agent:
            sid, shown = await _cancelled_mid_stream(agent, cwd)
            await _replays(agent, sid, cwd, shown)


async def test_a_kill_9_right_after_the_cancelled_answer_loses_nothing(home: Path, cwd: Path) -> None:
    with _server() as server, anyio.fail_after(LIMIT_S):
        async with agent_process(home, _env(home, server)) as agent:
            sid, shown = await _cancelled_mid_stream(agent, cwd)
            agent.kill_hard()  # no time to write anything after the answer
        async with agent_process(home, _env(home, server)) as agent:
            await initialized(agent)
            await _replays(agent, sid, cwd, shown)


async def test_an_end_of_input_right_after_a_cancel_exits_with_the_turn_written(
    home: Path, cwd: Path
) -> None:
    with _server() as server, anyio.fail_after(LIMIT_S):
        async with agent_process(home, _env(home, server)) as agent:
            sid, shown = await _cancelled_mid_stream(agent, cwd)
            before = json.loads((home / "sessions" / sid / "meta.json").read_text())
            assert agent.process.stdin is not None
            await agent.process.stdin.aclose()
            assert await agent.process.wait() == 0
    records: list[dict[str, Any]] = [
        json.loads(line) for line in (home / "sessions" / sid / "shown.jsonl").read_text().splitlines()
    ]
    turns = [r["turn"] for r in records if "turn" in r]
    assert [(t["outcome"], t["text"]) for t in turns] == [("cancelled", shown)]
    meta = json.loads((home / "sessions" / sid / "meta.json").read_text())
    assert meta == before  # written before the answer; nothing left to write at the exit
    assert meta["title"] == "go"
