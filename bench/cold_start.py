"""Cold start: spawn -> `initialize` answered (median of N), RSS after `session/new`, stdin EOF -> exit.

Baselines measured in the same run: the official SDK's minimal echo agent and a bare Python echo loop.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from bench._rpc import INIT, Agent, figure, floor_echo, median, our_agent, sdk_echo


async def _once(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, float]:
    agent = await Agent.spawn(cmd, env)
    await agent.call("initialize", INIT)
    ready = time.perf_counter() - agent.spawned_at
    rss = float("nan")
    try:
        await agent.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        rss = agent.rss_mb()
    except RuntimeError:
        pass
    exit_s = await agent.close()
    return ready * 1000, rss, exit_s * 1000


async def run(quick: bool) -> list[dict[str, Any]]:
    n = 5 if quick else 10
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        results: dict[str, list[tuple[float, float, float]]] = {"ours": [], "sdk": [], "floor": []}
        for _ in range(n):
            for name, (cmd, env) in (("ours", our_agent(home)), ("sdk", sdk_echo()), ("floor", floor_echo())):
                results[name].append(await _once(cmd, env, home))
    ours = median([r[0] for r in results["ours"]])
    sdk = median([r[0] for r in results["sdk"]])
    floor = median([r[0] for r in results["floor"]])
    return [
        figure(
            "cold_start",
            "initialize_median_ms",
            ours,
            120,
            baseline=sdk,
            floor_ms=round(floor, 1),
            ratio_vs_sdk=round(ours / sdk, 2),
        ),
        figure(
            "cold_start",
            "rss_after_new_mb",
            median([r[1] for r in results["ours"]]),
            50,
            baseline=median([r[1] for r in results["sdk"]]),
        ),
        figure(
            "cold_start",
            "exit_after_eof_ms",
            median([r[2] for r in results["ours"]]),
            100,
            baseline=median([r[2] for r in results["sdk"]]),
        ),
    ]
