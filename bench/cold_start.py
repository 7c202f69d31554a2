"""Start-up as an editor meets it: spawn -> ``initialize`` answered, spawn -> first ``session/new`` answered
(``initialize`` and ``session/new`` sent at once, as Zed does), a later ``session/new``, RSS after it, and
stdin EOF -> exit; with the agent configured for an HTTP provider (``--provider openai`` at a local fake
server: the row a user meets) and with the ``script`` provider (a second row, labelled). And a one-shot
client's (``acpx exec``, a script): spawn, ``initialize`` and ``session/new`` at once, ``session/prompt`` as
soon as the session is answered -> the model request at the server (no baseline: the echo agents call no model).

Baselines, spawned the same way in the same run, interleaved: the official SDK's echo agent and a bare
Python echo loop (the floor).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from acp_conformance.fake_model import Recorded, Reply
from bench._rpc import INIT, REPO, Agent, figure, floor_echo, median, our_agent, sdk_echo, settled
from bench._wire import Arrivals, http_agent, provider_server, stream_for

BENCH = "cold_start"


# Runs the agent's entry point counting the modules imported from source (no valid bytecode found) before the
# first session/new is answered: an installed agent compiles none.
_COUNT_COMPILES = r"""
import os, sys
import importlib._bootstrap_external as external
compiled = []
source_to_code = external.SourceLoader.source_to_code
def counted(self, data, path, *args, **kwargs):
    compiled.append(path)  # an import that found no valid bytecode for its source
    return source_to_code(self, data, path, *args, **kwargs)
external.SourceLoader.source_to_code = counted
def report():
    os.write(2, ("compiled %d %s\n" % (len(compiled), " ".join(compiled[:5]))).encode())
import atexit
atexit.register(report)
exit_now = os._exit
def reported_exit(code):  # the agent ends with os._exit once it has served
    report()
    exit_now(code)
os._exit = reported_exit
import runpy
sys.argv = ["acp-agent"]
runpy.run_module("acp_agent", run_name="__main__", alter_sys=True)
"""


async def _compiled_at_start(env: dict[str, str], cwd: Path) -> tuple[int, str]:
    """(how many source files the agent compiled on its way to the first session/new, the first few)."""
    import anyio

    process = await anyio.open_process(
        [sys.executable, "-c", _COUNT_COMPILES], env={**os.environ, **env}, cwd=str(REPO)
    )
    agent = Agent(process)
    try:
        await agent.call("initialize", INIT)
        await agent.call("session/new", {"cwd": str(cwd), "mcpServers": []})
    finally:
        await agent.close()
    assert process.stderr is not None
    chunks: list[bytes] = []
    with anyio.move_on_after(5):
        async for chunk in process.stderr:
            chunks.append(chunk)
    await process.stderr.aclose()
    err = b"".join(chunks).decode(errors="replace")
    for line in err.splitlines():
        if line.startswith("compiled "):
            _, count, *names = line.split(" ")
            return int(count), " ".join(names)
    return -1, "the agent did not report"


async def _once(cmd: list[str], env: dict[str, str], cwd: Path) -> dict[str, float]:
    agent = await Agent.spawn(cmd, env)
    new = {"cwd": str(cwd), "mcpServers": []}
    init_id = await agent.request("initialize", INIT)
    new_id = await agent.request("session/new", new)  # at once, as an editor opening a thread does
    await agent.until_response(init_id)
    init_ms = (time.perf_counter() - agent.spawned_at) * 1000
    answer, _ = await agent.until_response(new_id)
    first_new_ms = (time.perf_counter() - agent.spawned_at) * 1000
    if "error" in answer:
        raise RuntimeError(f"session/new failed: {answer['error']}")
    ours = "modes" in answer["result"]  # (the echo agents send no command list to wait for)
    if ours:
        await settled(agent, answer["result"]["sessionId"])  # "later": once the first session is ready
    later: list[float] = []
    for _ in range(3):
        t = time.perf_counter()
        result = await agent.call("session/new", new)
        later.append((time.perf_counter() - t) * 1000)
        if ours:
            await settled(agent, result["sessionId"])  # as a user opening threads, not back to back
    rss = agent.rss_mb()
    exit_ms = await agent.close() * 1000
    return {
        "init": init_ms,
        "first_new": first_new_ms,
        "later_new": median(later),
        "rss": rss,
        "exit": exit_ms,
    }


async def _first_session(agent: Agent, cwd: Path) -> dict[str, Any]:
    """``initialize`` and ``session/new`` written at once, as an editor opening a thread does; the
    ``session/new`` result once both are answered (the floor's echo loop answers no ``sessionId``)."""
    init_id = await agent.request("initialize", INIT)
    new_id = await agent.request("session/new", {"cwd": str(cwd), "mcpServers": []})
    await agent.until_response(init_id)
    answer, _ = await agent.until_response(new_id)
    if "error" in answer:
        raise RuntimeError(f"session/new failed: {answer['error']}")
    return answer["result"]


async def _eof_after_new(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    """Spawn, ``initialize`` and ``session/new`` at once, and stdin EOF as soon as the session is
    answered (an editor closing a thread it just opened): ms from EOF to exit."""
    agent = await Agent.spawn(cmd, env)
    try:
        await _first_session(agent, cwd)
    except BaseException:
        await agent.close()
        raise
    return await agent.close() * 1000


async def _first_prompt(
    cmd: list[str], env: dict[str, str], cwd: Path, arrivals: Arrivals
) -> dict[str, float]:
    """A one-shot client: the prompt written as soon as the first session is answered; ms from the spawn,
    and from the prompt's write, to the model request at the server."""
    agent = await Agent.spawn(cmd, env)
    try:
        session = (await _first_session(agent, cwd))["sessionId"]
        params = {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}
        written = time.perf_counter()
        await agent.until_response(await agent.request("session/prompt", params))
        arrived = arrivals.since(written)
        if arrived is None:
            raise RuntimeError("the first prompt reached no model")
    finally:
        await agent.close()
    return {"spawn": (written + arrived - agent.spawned_at) * 1000, "prompt": arrived * 1000}


def _med(results: list[dict[str, float]], key: str) -> float:
    return median([r[key] for r in results])


async def run(quick: bool) -> list[dict[str, Any]]:
    n = 5 if quick else 15
    with tempfile.TemporaryDirectory() as tmp, provider_server(_reply) as (server, arrivals):
        home = Path(tmp)
        (home / "project").mkdir()
        cwd = home / "project"
        http_env = http_agent(home / "http", "openai", server.url)
        script = home / "script.json"
        script.write_text('[{"text": "hi"}]', encoding="utf-8")
        script_cmd, script_env = our_agent(home / "script", script)
        sdk_cmd, sdk_env = sdk_echo()
        floor_cmd, floor_env = floor_echo()
        runs: dict[str, list[dict[str, float]]] = {"http": [], "script": [], "sdk": [], "floor": []}
        first_prompts: list[dict[str, float]] = []
        for _ in range(n):  # interleaved, so load changes hit every row alike
            runs["http"].append(await _once(script_cmd, http_env, cwd))
            runs["script"].append(await _once(script_cmd, script_env, cwd))
            runs["sdk"].append(await _once(sdk_cmd, sdk_env, cwd))
            runs["floor"].append(await _once(floor_cmd, floor_env, cwd))
            runs["http"][-1]["eof_new"] = await _eof_after_new(script_cmd, http_env, cwd)
            runs["script"][-1]["eof_new"] = await _eof_after_new(script_cmd, script_env, cwd)
            runs["sdk"][-1]["eof_new"] = await _eof_after_new(sdk_cmd, sdk_env, cwd)
            runs["floor"][-1]["eof_new"] = await _eof_after_new(floor_cmd, floor_env, cwd)
            first_prompts.append(
                await _first_prompt(
                    script_cmd, http_agent(home / "one-shot", "openai", server.url), cwd, arrivals
                )
            )
        compiled, names = await _compiled_at_start(http_env, cwd)
    sdk, floor = runs["sdk"], runs["floor"]

    def row(name: str, key: str, target: float | None, of: str = "http", **extra: Any) -> dict[str, Any]:
        """A figure of row ``of`` beside the SDK echo agent's same figure (and the floor's)."""
        value, base = _med(runs[of], key), _med(sdk, key)
        ratio = round(value / base, 2) if base else None
        floor_ms = round(_med(floor, key), 1)
        return figure(
            BENCH, name, value, target, baseline=base, ratio_vs_sdk=ratio, floor_ms=floor_ms, **extra
        )

    rows = [
        row(
            "first_new_http_ms",
            "first_new",
            70,
            samples=n,
            note="spawn -> first session/new answered, --provider openai at a local server",
        ),
        row("first_new_script_ms", "first_new", None, "script", note="second row: the script provider"),
        row("initialize_ms", "init", 120),
        row("later_new_http_ms", "later_new", 3),
        row("later_new_script_ms", "later_new", None, "script"),
        row("rss_after_new_mb", "rss", 50),
        row("exit_after_eof_ms", "exit", 38),
        row(
            "exit_after_fresh_new_eof_ms",
            "eof_new",
            round(0.5 * _med(sdk, "eof_new"), 1),
            note="stdin EOF as soon as the first session/new is answered; target: 0.5 x the SDK echo's",
        ),
    ]
    rows += [
        figure(
            BENCH,
            "first_prompt_request_ms",
            _med(first_prompts, "spawn"),
            None,
            samples=n,
            note="one-shot client: spawn -> the first prompt's model request at the server (prompt written "
            "as soon as the first session/new is answered)",
        ),
        figure(
            BENCH,
            "first_prompt_wait_ms",
            _med(first_prompts, "prompt"),
            None,
            samples=n,
            note="of which: that prompt written -> its model request (the start-up work the prompt waits for)",
        ),
    ]
    compiled_row = figure(
        BENCH,
        "compiled_at_start",
        compiled,
        0,
        files=names,
        note="source files compiled on the way to the first session/new (an install writes bytecode)",
    )
    compiled_row["ok"] = compiled == 0  # (-1: the agent did not report)
    rows.append(compiled_row)
    return rows


def _reply(_request: Recorded) -> Reply:
    return Reply.sse(stream_for("openai", 3))
