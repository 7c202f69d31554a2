"""Cancel latency: `session/cancel` -> the prompt's answer `cancelled` (p50/p99), three ways:

- while the model streams: from an HTTP provider (`--provider openai` at a local fake server that sends a few
  deltas and then holds the stream open, as a model between tokens; target p50 1 ms, p99 5 ms), and from the
  `script` provider (a second row, labelled);
- while a shell tool runs (`sleep`, allowed once through `session/request_permission`; target p99 10 ms).
  The cancel is sent once the `sleep` process exists; afterwards no such process may be left (`leaked`);
- while an MCP tool runs (a stdio server of ours whose `wait` tool sleeps 60 s; target p99 10 ms).
  The cancel is sent once the server has entered the tool; `not_cancelled_in_server` counts calls the
  server never saw cancelled.

Baseline: the official SDK's echo agent cancelling a waiting prompt, spawned the same way. The HTTP rows also
carry ``floor_ms``: a bare agent on our stack (anyio, httpx2, the same pipes) cancelling the same held stream
(``bench/baselines/floor_cancel.py``), so what is left above it is the agent's own work.
Waiting for another process's state (a `sleep` appearing, a server's mark file) is polled: there is no
event to wait on; only the span from `session/cancel` to the answer is timed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from acp_conformance.fake_model import Recorded, Reply, Stall
from bench._rpc import INIT, Agent, figure, floor_cancel, our_agent, percentile, sdk_echo
from bench._wire import http_agent, provider_server, stream_for

BENCH = "cancel"
_CYCLE_LIMIT_S = 30.0
_GONE_WAIT_S = 3.0
_MCP_SERVER_NAME = "bench"

# A stdio MCP server with one tool, `wait`, that sleeps 60 s. It appends "start" to the marks file when the
# tool is entered and "cancelled" when its call is cancelled, so the bench knows the call really runs.
_WAIT_MCP_SERVER = r"""
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer

marks = Path(sys.argv[1])
server = MCPServer("bench-wait")


def _mark(word: str) -> None:
    with marks.open("a", encoding="utf-8") as f:
        f.write(word + "\n")


@server.tool()
async def wait() -> str:
    '''Wait 60 seconds.'''
    _mark("start")
    try:
        await anyio.sleep(60)
    except anyio.get_cancelled_exc_class():
        _mark("cancelled")
        raise
    return "waited"


server.run("stdio")
"""


# --- while streaming ----------------------------------------------------------------------------


async def _cycles(agent: Agent, cwd: Path, text: str, n: int) -> list[float]:
    await agent.call("initialize", INIT)
    session = (await agent.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["sessionId"]
    out: list[float] = []
    for _ in range(n + 1):  # the first cycle warms up (lazy imports on the cancel path); not counted
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
    return out[1:]


# --- while a tool runs --------------------------------------------------------------------------


async def _cancel_running_tool(agent: Agent, session: str, running: Callable[[], Awaitable[None]]) -> float:
    """One prompt whose scripted reply calls a tool: allow it once, wait until it runs (``in_progress``,
    then ``running()``), cancel; returns ms from ``session/cancel`` to the ``cancelled`` answer."""
    rid = await agent.request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
    )
    while True:
        msg = await agent.read()
        if msg.get("method") == "session/request_permission" and "id" in msg:
            options = msg["params"]["options"]
            allow = next(o["optionId"] for o in options if o.get("kind") == "allow_once")
            outcome = {"outcome": {"outcome": "selected", "optionId": allow}}
            await agent.send({"jsonrpc": "2.0", "id": msg["id"], "result": outcome})
            continue
        if msg.get("id") == rid and "method" not in msg:
            raise RuntimeError(f"the prompt ended before its tool ran: {msg}")
        update = (msg.get("params") or {}).get("update") or {}
        if update.get("sessionUpdate") == "tool_call_update" and update.get("status") == "in_progress":
            break
    await running()
    t = time.perf_counter()
    await agent.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}})
    response, _ = await agent.until_response(rid)
    elapsed = (time.perf_counter() - t) * 1000
    stop = (response.get("result") or {}).get("stopReason")
    if stop != "cancelled":
        raise RuntimeError(f"expected stopReason cancelled, got {response}")
    return elapsed


def _pids_running(token: str) -> list[int]:
    """Live processes with ``token`` as one of their arguments (zombies excluded)."""
    out: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            args = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if token.encode() in args and stat[stat.rfind(")") + 2 :].split()[0] != "Z":
            out.append(int(entry))
    return out


async def _poll(check: Callable[[], bool], limit: float) -> None:
    with anyio.fail_after(limit):
        while not await anyio.to_thread.run_sync(check):  # noqa: ASYNC110  # another process's state
            await anyio.sleep(0.001)


async def _wait_gone(tokens: list[str]) -> list[int]:
    """Wait (bounded) for every process carrying one of ``tokens`` to end; returns those still alive."""

    def alive() -> list[int]:
        return [pid for token in tokens for pid in _pids_running(token)]

    left: list[int] = []
    with anyio.move_on_after(_GONE_WAIT_S):
        while left := await anyio.to_thread.run_sync(alive):  # noqa: ASYNC110
            await anyio.sleep(0.05)
    return left


async def _shell_cycles(root: Path, n: int) -> tuple[list[float], int, int]:
    """Cancel ``n`` running ``sleep`` commands; returns (ms, alive at the answer, leaked)."""
    run_id = random.randrange(10**5, 10**6)
    # A distinct duration per cycle (30.<run><cycle> s) names each cycle's process in /proc.
    tokens = [f"30.{run_id}{i:04d}" for i in range(n)]
    script = root / "shell-script.json"
    replies = [{"tool_calls": [{"name": "shell", "input": {"command": f"sleep {t}"}}]} for t in tokens]
    script.write_text(json.dumps(replies), encoding="utf-8")
    home, cwd = root / "shell-home", root / "project"
    home.mkdir()
    agent = await Agent.spawn(*our_agent(home, script))
    times: list[float] = []
    alive_at_answer = 0
    try:
        await agent.call("initialize", INIT)
        session = (await agent.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["sessionId"]
        for token in tokens:

            async def running(token: str = token) -> None:
                await _poll(lambda: bool(_pids_running(token)), _CYCLE_LIMIT_S)

            with anyio.fail_after(_CYCLE_LIMIT_S):
                times.append(await _cancel_running_tool(agent, session, running))
            if await anyio.to_thread.run_sync(_pids_running, token):
                alive_at_answer += 1
    finally:
        await agent.close()
        leaked = await _wait_gone(tokens)
        for pid in leaked:  # the bench's own leftovers: end them so they do not outlive it
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return times, alive_at_answer, len(leaked)


def _marks(path: Path, word: str) -> int:
    try:
        return path.read_text(encoding="utf-8").split().count(word)
    except FileNotFoundError:
        return 0


async def _mcp_cycles(root: Path, n: int) -> tuple[list[float], int]:
    """Cancel ``n`` running MCP ``wait`` calls; returns (ms, calls the server did not see cancelled)."""
    server = root / "wait_mcp_server.py"
    server.write_text(_WAIT_MCP_SERVER, encoding="utf-8")
    marks = root / "mcp-marks.txt"
    tool = f"mcp__{_MCP_SERVER_NAME}__wait"
    script = root / "mcp-script.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": tool, "input": {}}]}] * n), encoding="utf-8")
    home, cwd = root / "mcp-home", root / "project"
    home.mkdir()
    entry = {
        "name": _MCP_SERVER_NAME,
        "command": sys.executable,
        "args": [str(server), str(marks)],
        "env": [],
    }
    agent = await Agent.spawn(*our_agent(home, script))
    times: list[float] = []
    try:
        await agent.call("initialize", INIT)
        session = (await agent.call("session/new", {"cwd": str(cwd), "mcpServers": [entry]}))["sessionId"]
        for i in range(n):

            async def running(i: int = i) -> None:
                await _poll(lambda: _marks(marks, "start") > i, _CYCLE_LIMIT_S)

            # The first cycle also waits for the server to start (the agent holds the prompt until then).
            with anyio.fail_after(_CYCLE_LIMIT_S * (2 if i == 0 else 1)):
                times.append(await _cancel_running_tool(agent, session, running))
        with anyio.move_on_after(_GONE_WAIT_S):
            while await anyio.to_thread.run_sync(_marks, marks, "cancelled") < n:  # noqa: ASYNC110
                await anyio.sleep(0.05)
    finally:
        await agent.close()
    return times, n - _marks(marks, "cancelled")


# --- the figures --------------------------------------------------------------------------------


def _tool_rows(
    what: str, times: list[float], sdk: list[float], facts: dict[str, int]
) -> list[dict[str, Any]]:
    p99 = figure(BENCH, f"{what}_p99_ms", percentile(times, 99), 10, baseline=percentile(sdk, 99))
    ok = p99.pop("ok")
    p99.update(facts)
    p99["ok"] = ok and not any(facts.get(k) for k in ("leaked", "not_cancelled_in_server"))
    # (fast but leaving work behind is not a pass)
    return [figure(BENCH, f"{what}_p50_ms", percentile(times, 50), None, baseline=percentile(sdk, 50)), p99]


def _held_stream(_request: Recorded) -> Reply:
    """A few deltas, then nothing until the client closes the stream."""
    return Reply(200, {"content-type": "text/event-stream"}, [stream_for("openai", 5, end=False), Stall()])


async def run(quick: bool) -> list[dict[str, Any]]:
    n = 20 if quick else 200
    with tempfile.TemporaryDirectory() as tmp, provider_server(_held_stream) as (server, _):
        root = Path(tmp)
        (root / "project").mkdir()
        http_env = http_agent(root / "http-home", "openai", server.url)
        http = await _cycles(await Agent.spawn(our_agent(root)[0], http_env), root, "go", n)
        floor = await _cycles(await Agent.spawn(floor_cancel(), http_env), root, "go", n)
        script = root / "script.json"
        # Each prompt streams slowly until cancelled; one reply per model call.
        script.write_text(json.dumps([{"text": "x" * 100_000, "chunks": 100_000, "delay_ms": 1}] * (n + 1)))
        cmd, env = our_agent(root, script)
        ours = await _cycles(await Agent.spawn(cmd, env), root, "go", n)
        shell, alive_at_answer, leaked = await _shell_cycles(root, n)
        mcp, not_cancelled = await _mcp_cycles(root, n)
        cmd, env = sdk_echo()
        sdk = await _cycles(await Agent.spawn(cmd, env), root, "wait", n)
    return [
        figure(
            BENCH,
            "http_streaming_p50_ms",
            percentile(http, 50),
            1,
            baseline=percentile(sdk, 50),
            floor_ms=round(percentile(floor, 50), 2),
            samples=n,
            note="--provider openai at a local server, stream held open mid-reply",
        ),
        figure(
            BENCH,
            "http_streaming_p99_ms",
            percentile(http, 99),
            5,
            baseline=percentile(sdk, 99),
            floor_ms=round(percentile(floor, 99), 2),
        ),
        figure(
            BENCH,
            "script_streaming_p50_ms",
            percentile(ours, 50),
            None,
            baseline=percentile(sdk, 50),
            note="second row: the script provider",
        ),
        figure(BENCH, "script_streaming_p99_ms", percentile(ours, 99), 20, baseline=percentile(sdk, 99)),
        *_tool_rows(
            "shell", shell, sdk, {"leaked": leaked, "alive_at_answer": alive_at_answer, "samples": n}
        ),
        *_tool_rows("mcp", mcp, sdk, {"not_cancelled_in_server": not_cancelled, "samples": n}),
    ]
