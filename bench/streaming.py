"""Streaming: one model reply of N deltas through the real process to a client reading stdout.

Figures: session/update notifications per second and the agent's CPU µs per update; baseline: the official
SDK's echo agent sending the same number of agent_message_chunk updates, spawned the same way.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._rpc import INIT, Agent, figure, our_agent, sdk_echo


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


async def _measure(agent: Agent, cwd: Path, text: str) -> tuple[float, float, int]:
    await agent.call("initialize", INIT)
    session = (await agent.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["sessionId"]
    cpu0 = _cpu_s(agent.process.pid)
    t = time.perf_counter()
    rid = await agent.request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
    )
    response, updates = await agent.until_response(rid)
    elapsed = time.perf_counter() - t
    cpu = _cpu_s(agent.process.pid) - cpu0
    await agent.close()
    if "error" in response:
        raise RuntimeError(f"prompt failed: {response['error']}")
    return updates / elapsed, cpu / max(updates, 1) * 1e6, updates


async def run(quick: bool) -> list[dict[str, Any]]:
    n = 20_000 if quick else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        script = home / "script.json"
        script.write_text(json.dumps([{"text": "x" * n, "chunks": n}]))
        cmd, env = our_agent(home, script)
        ours, ours_cpu, count = await _measure(await Agent.spawn(cmd, env), home, "go")
        cmd, env = sdk_echo()
        sdk, sdk_cpu, _ = await _measure(await Agent.spawn(cmd, env), home, f"stream {n}")
    return [
        figure(
            "streaming",
            "updates_per_s",
            ours,
            50_000,
            lower_is_better=False,
            baseline=sdk,
            ratio_vs_sdk=round(ours / sdk, 2),
            updates=count,
        ),
        figure("streaming", "cpu_us_per_update", ours_cpu, None, baseline=sdk_cpu),
    ]
