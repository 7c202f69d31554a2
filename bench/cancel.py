"""Cancel latency: `session/cancel` -> the prompt's answer, while the model streams (p50/p99).

Baseline: the official SDK's echo agent cancelling a waiting prompt, spawned the same way.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._rpc import INIT, Agent, figure, our_agent, percentile, sdk_echo


async def _cycles(agent: Agent, cwd: Path, text: str, n: int) -> list[float]:
    await agent.call("initialize", INIT)
    session = (await agent.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["sessionId"]
    out: list[float] = []
    for _ in range(n):
        rid = await agent.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
        )
        if text != "wait":
            while (await agent.read()).get("method") != "session/update":
                pass  # streaming has begun
        t = time.perf_counter()
        await agent.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}})
        response, _ = await agent.until_response(rid)
        out.append((time.perf_counter() - t) * 1000)
        stop = response.get("result", {}).get("stopReason")
        if stop != "cancelled":
            raise RuntimeError(f"expected stopReason cancelled, got {response}")
    await agent.close()
    return out


async def run(quick: bool) -> list[dict[str, Any]]:
    n = 20 if quick else 200
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        script = home / "script.json"
        # Each prompt streams slowly until cancelled; one reply per model call.
        script.write_text(json.dumps([{"text": "x" * 100_000, "chunks": 100_000, "delay_ms": 1}] * n))
        cmd, env = our_agent(home, script)
        ours = await _cycles(await Agent.spawn(cmd, env), home, "go", n)
        cmd, env = sdk_echo()
        sdk = await _cycles(await Agent.spawn(cmd, env), home, "wait", n)
    return [
        figure("cancel", "streaming_p50_ms", percentile(ours, 50), None, baseline=percentile(sdk, 50)),
        figure("cancel", "streaming_p99_ms", percentile(ours, 99), 20, baseline=percentile(sdk, 99)),
    ]
