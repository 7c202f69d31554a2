"""Cancel storm: many prompt/cancel cycles against one process. Every prompt is answered exactly once
(``cancelled`` or ``end_turn``), and afterwards the process holds no more file descriptors, threads or
child processes than before, and its memory does not keep growing."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.reliability._reliability_support import (
    LONG,
    AgentProcess,
    agent_env,
    agent_process,
    initialized,
    params_of,
    update_of,
    write_script,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(1800 if LONG else 240), pytest.mark.process]

CYCLES = 1000 if LONG else 100
SEED = 1_000
FD_SLACK = 4
THREAD_SLACK = 8
RSS_GROWTH_LIMIT_MB = 40.0


def _is_chunk(session_id: str) -> Any:
    def match(message: dict[str, Any]) -> bool:
        return (
            params_of(message).get("sessionId") == session_id
            and update_of(message).get("sessionUpdate") == "agent_message_chunk"
        )

    return match


async def _cycles(agent: AgentProcess, sessions: list[str], n: int, rng: random.Random) -> dict[str, int]:
    """``n`` prompts, each cancelled at a random point (or not at all); returns the stop reasons seen."""
    seen: dict[str, int] = {}
    for _ in range(n):
        session_id = rng.choice(sessions)
        start = len(agent.notifications)
        prompt = await agent.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
        )
        how = rng.choice(("at once", "after a chunk", "request cancel", "double", "never"))
        if how == "after a chunk":
            await agent.notification(_is_chunk(session_id), start)
        if how in ("at once", "after a chunk", "double"):
            await agent.notify("session/cancel", {"sessionId": session_id})
        if how == "double":
            await agent.notify("session/cancel", {"sessionId": session_id})
            await agent.send(
                {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": prompt}}
            )
        if how == "request cancel":
            await agent.send(
                {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": prompt}}
            )
        answer = await agent.response(prompt)
        if how in ("request cancel", "double") and answer.get("error", {}).get("code") == -32800:
            stop = "-32800"  # the spec's other answer to $/cancel_request (cancellation.mdx)
        else:
            assert "result" in answer, f"cancel {how!r}: the prompt failed: {answer}"
            stop = answer["result"].get("stopReason")
        assert stop in ("cancelled", "end_turn", "-32800"), f"cancel {how!r}: stopReason {stop!r}"
        if how == "never":
            assert stop == "end_turn", f"an uncancelled prompt ended {stop!r}"
        seen[stop] = seen.get(stop, 0) + 1
        seen[f"{how}: {stop}"] = seen.get(f"{how}: {stop}", 0) + 1
        # A late cancel for a finished turn must be a no-op.
        if rng.random() < 0.1:
            await agent.notify("session/cancel", {"sessionId": session_id})
        del agent.notifications[:]
    return seen


async def test_a_thousand_prompt_cancel_cycles_answer_each_prompt_once_and_leak_nothing(
    home: Path, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    warm = 20
    # Each reply streams 20 chunks over ~40 ms: cancels land before, during and after the stream.
    replies = [{"text": "word " * 40, "chunks": 20, "delay_ms": 2} for _ in range(CYCLES + warm + 10)]
    script = write_script(tmp_path / "script.json", replies)
    cwd = tmp_path / "project"
    cwd.mkdir()
    async with agent_process(home, agent_env(home, script)) as agent:
        with anyio.fail_after(120 if not LONG else 900):
            await initialized(agent)
            sessions = [
                str((await agent.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["sessionId"])
                for _ in range(3)
            ]
            # Warm up first: thread pools, imports and caches reach their steady size.
            await _cycles(agent, sessions, warm, rng)
            fds, threads, rss = agent.fd_count(), agent.thread_count(), agent.rss_kb()
            seen = await _cycles(agent, sessions, CYCLES, rng)
            # One quiet request round-trip: anything the cycles started has settled.
            await agent.call("session/list", {})
            fds_after, threads_after, rss_after = agent.fd_count(), agent.thread_count(), agent.rss_kb()
            children = agent.children()
            assert not agent.violations, agent.violations
            assert sum(v for k, v in seen.items() if ":" not in k) == CYCLES
            assert not agent.unanswered()
    growth_mb = (rss_after - rss) / 1024
    print(
        f"cancel storm: {CYCLES} cycles {seen}; fds {fds}->{fds_after}, threads {threads}->{threads_after}, "
        f"RSS {rss / 1024:.1f}->{rss_after / 1024:.1f} MB, children {children}"
    )
    assert seen.get("cancelled", 0) > 0, "no cycle ended cancelled: the storm did not exercise cancellation"
    assert fds_after <= fds + FD_SLACK, f"file descriptors leaked: {fds} before, {fds_after} after"
    assert threads_after <= threads + THREAD_SLACK, f"threads leaked: {threads} before, {threads_after} after"
    assert children == [], f"child processes left behind: {children}"
    assert growth_mb < RSS_GROWTH_LIMIT_MB, f"RSS grew {growth_mb:.1f} MB over {CYCLES} cycles"


async def test_a_cancel_written_right_after_its_prompt_ends_the_turn_cancelled(
    home: Path, tmp_path: Path
) -> None:
    rounds = 10
    replies = [{"text": "word " * 40, "chunks": 20, "delay_ms": 5} for _ in range(rounds)]
    script = write_script(tmp_path / "script.json", replies)
    async with agent_process(home, agent_env(home, script)) as agent:
        with anyio.fail_after(60):
            await initialized(agent)
            session = (await agent.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["sessionId"]
            stops: list[Any] = []
            for _ in range(rounds):
                prompt_id = agent.new_id()
                agent.expect(prompt_id)
                prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
                # Both lines in one write: the prompt is ongoing when the cancel is read.
                await agent.send_raw(
                    json.dumps(
                        {"jsonrpc": "2.0", "id": prompt_id, "method": "session/prompt", "params": prompt}
                    ).encode()
                    + b"\n"
                    + json.dumps(
                        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}
                    ).encode()
                    + b"\n"
                )
                stops.append((await agent.response(prompt_id)).get("result", {}).get("stopReason"))
    assert stops == ["cancelled"] * rounds
