"""A small JSON-RPC-over-stdio client for benchmarks: spawn an agent, send lines, await answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

REPO = Path(__file__).resolve().parents[1]
MAX_LINE = 64 * 1024 * 1024
_MODEL_ENV = ("ACP_AGENT_", "OPENAI_", "ANTHROPIC_")


def our_agent(home: Path, script: Path | None = None) -> tuple[list[str], dict[str, str]]:
    env = {"ACP_AGENT_HOME": str(home), "ACP_AGENT_PROVIDER": "script", "ACP_AGENT_LOG_LEVEL": "warning"}
    if script is not None:
        env["ACP_AGENT_SCRIPT"] = str(script)
    return [sys.executable, "-m", "acp_agent"], env


def sdk_echo() -> tuple[list[str], dict[str, str]]:
    return [sys.executable, str(REPO / "bench" / "baselines" / "sdk_echo.py")], {}


def floor_echo() -> tuple[list[str], dict[str, str]]:
    return [sys.executable, str(REPO / "bench" / "baselines" / "floor_echo.py")], {}


def floor_cancel() -> list[str]:
    """The stack's floor for a cancel mid-stream (``bench/baselines/floor_cancel.py``); it takes the HTTP
    agent's environment (``ACP_AGENT_BASE_URL``)."""
    return [sys.executable, str(REPO / "bench" / "baselines" / "floor_cancel.py")]


class Agent:
    """One spawned agent process and its stdio, read line by line."""

    def __init__(self, process: Process) -> None:
        self.process = process
        assert process.stdout is not None and process.stdin is not None
        self._reader = BufferedByteReceiveStream(process.stdout)
        self._next_id = 0
        self.spawned_at = 0.0

    @classmethod
    async def spawn(cls, cmd: Sequence[str], env: Mapping[str, str], cwd: Path | None = None) -> Agent:
        # The user's own model settings must not leak into a measured agent.
        inherited = {k: v for k, v in os.environ.items() if not k.startswith(_MODEL_ENV)}
        full_env = {**inherited, **env}
        t = time.perf_counter()
        process = await anyio.open_process(
            list(cmd),
            env=full_env,
            cwd=str(cwd or REPO),
            stderr=-3,  # DEVNULL
        )
        agent = cls(process)
        agent.spawned_at = t
        return agent

    async def send(self, message: Mapping[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send((json.dumps(message) + "\n").encode())

    async def request(self, method: str, params: Mapping[str, Any]) -> int:
        self._next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self._next_id

    async def read(self) -> dict[str, Any]:
        line = await self._reader.receive_until(b"\n", MAX_LINE)
        return json.loads(line)

    async def until_response(self, request_id: int) -> tuple[dict[str, Any], int]:
        """Read until the response to ``request_id``; returns it and the number of other messages seen."""
        seen = 0
        while True:
            msg = await self.read()
            if msg.get("id") == request_id and "method" not in msg:
                return msg, seen
            seen += 1

    async def call(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        rid = await self.request(method, params)
        msg, _ = await self.until_response(rid)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg["result"]

    async def close(self) -> float:
        """Close stdin and wait for the exit; returns seconds from EOF to exit."""
        assert self.process.stdin is not None
        t = time.perf_counter()
        await self.process.stdin.aclose()
        with anyio.move_on_after(5):
            await self.process.wait()
        elapsed = time.perf_counter() - t
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        # Its output pipe too: ``wait()`` alone leaves it to the collector. (A stderr pipe, which only a
        # caller that reads it after the exit asks for, is that caller's to close.)
        if self.process.stdout is not None:
            await self.process.stdout.aclose()
        return elapsed

    def rss_mb(self) -> float:
        try:
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return float("nan")


INIT = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


async def settled(agent: Agent, session_id: str) -> None:
    """Until the session's first ``available_commands_update`` (sent once its set-up after the answer is
    done): the next session/new is not timed against the last one's background work."""
    while True:
        msg = await agent.read()
        params = msg.get("params") or {}
        update = params.get("update") or {}
        if (
            params.get("sessionId") == session_id
            and update.get("sessionUpdate") == "available_commands_update"
        ):
            return


async def answer_unattended(agent: Agent, msg: dict[str, Any]) -> None:
    """Answer an agent's request in an unattended session: a permission is allowed (once, where offered),
    anything else refused."""
    if msg.get("method") != "session/request_permission":
        error = {"code": -32601, "message": f"bench client: no {msg.get('method')}"}
        await agent.send({"jsonrpc": "2.0", "id": msg["id"], "error": error})
        return
    options = (msg.get("params") or {}).get("options") or []
    ranked = sorted(options, key=lambda o: {"allow_once": 0, "allow_always": 1}.get(str(o.get("kind")), 2))
    outcome: dict[str, Any] = (
        {"outcome": "selected", "optionId": ranked[0]["optionId"]} if ranked else {"outcome": "cancelled"}
    )
    await agent.send({"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": outcome}})


async def prompt_turn(
    agent: Agent, session_id: str, text: str, on_update: Callable[[dict[str, Any]], None] | None = None
) -> None:
    """One ``session/prompt`` to its answer, answering the agent's requests unattended on the way;
    ``on_update`` sees each ``session/update``'s update."""
    rid = await agent.request(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    )
    while True:
        msg = await agent.read()
        if msg.get("id") == rid and "method" not in msg:
            if "error" in msg:
                raise RuntimeError(f"session/prompt: {msg['error']}")
            return
        if "method" in msg and "id" in msg:
            await answer_unattended(agent, msg)
        elif on_update is not None and msg.get("method") == "session/update":
            on_update((msg.get("params") or {}).get("update") or {})


def percentile(values: Sequence[float], p: float) -> float:
    s = sorted(values)
    if not s:
        return float("nan")
    k = min(len(s) - 1, max(0, round(p / 100 * (len(s) - 1))))
    return s[k]


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


def figure(
    bench: str,
    name: str,
    value: float,
    target: float | None = None,
    *,
    lower_is_better: bool = True,
    baseline: float | None = None,
    **extra: Any,
) -> dict[str, Any]:
    ok: bool | None = None
    if target is not None:
        ok = value <= target if lower_is_better else value >= target
    row: dict[str, Any] = {
        "bench": bench,
        "figure": name,
        "value": round(value, 2),
        "target": target,
        "baseline": None if baseline is None else round(baseline, 2),  # always present: null when none
    }
    row.update(extra)
    row["ok"] = ok
    return row


def git(cwd: Path, *args: str) -> None:
    """``git ARGS`` in ``cwd`` for a benchmark's project (a fixed author, output kept quiet)."""
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )
