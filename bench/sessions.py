"""Sessions: `session/new` latency once warm (an HTTP provider configured, the row a user meets; the script
provider; three slow-starting MCP servers), many sessions prompting in one process (all answered correctly;
total time; RSS per idle session), `session/load` of a long session.

The long session is written straight into the store's format (`<home>/sessions/<id>/meta.json` and
`messages.jsonl`, one `harness.Message.to_dict()` per line) so only the load is timed.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from acp_conformance.fake_model import Recorded, Reply
from bench._rpc import INIT, Agent, figure, median, our_agent, settled
from bench._wire import http_agent, provider_server, stream_for

BENCH = "sessions"

# A stdio MCP server that takes its time to start: it marks that it was spawned, sleeps, then answers
# `initialize` and an empty `tools/list` (enough for a client to finish its handshake).
_SLOW_MCP_SERVER = r"""
import json, sys, time
open(sys.argv[1], "w").close()
time.sleep(float(sys.argv[2]))
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "slow", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": []}
    else:
        result = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
"""
_SLOW_START_S = 2.0


async def _started(home: Path, script: Path | None = None) -> Agent:
    cmd, env = our_agent(home, script)
    agent = await Agent.spawn(cmd, env)
    await agent.call("initialize", INIT)
    return agent


async def _new(agent: Agent, cwd: Path, servers: list[dict[str, Any]] | None = None) -> tuple[str, float]:
    t = time.perf_counter()
    result = await agent.call("session/new", {"cwd": str(cwd), "mcpServers": servers or []})
    return str(result["sessionId"]), (time.perf_counter() - t) * 1000


async def _new_latency(home: Path, cwd: Path, n: int, env: dict[str, str] | None = None) -> list[float]:
    """``n`` session/new latencies once the process is warm (``env``: the agent's, else the script
    provider's); each waits for the one before's after-answer work, as a user opening threads does."""
    agent = await _started(home) if env is None else await Agent.spawn(our_agent(home)[0], env)
    try:
        if env is not None:
            await agent.call("initialize", INIT)
        for _ in range(3):  # the first calls pay for imports finishing in the background
            await _new(agent, cwd)
        times: list[float] = []
        for _ in range(n):
            session_id, ms = await _new(agent, cwd)
            times.append(ms)
            await settled(agent, session_id)
        return times
    finally:
        await agent.close()


async def _new_with_slow_mcp(home: Path, cwd: Path, n: int) -> dict[str, Any]:
    name = "new_3_slow_mcp_median_ms"
    agent = await Agent.spawn(*our_agent(home))
    try:
        init = await agent.call("initialize", INIT)
        caps = (init.get("agentCapabilities") or {}).get("mcpCapabilities")
        if not caps:
            return _skipped(name, "the agent does not announce mcpCapabilities")
        await _new(agent, cwd)
        server = home / "slow_mcp_server.py"
        server.write_text(_SLOW_MCP_SERVER, encoding="utf-8")
        times: list[float] = []
        for round_ in range(n):
            markers = [home / f"mcp-started-{round_}-{i}" for i in range(3)]
            servers = [
                {
                    "name": f"slow{i}",
                    "command": sys.executable,
                    "args": [str(server), str(m), str(_SLOW_START_S)],
                    "env": [],
                }
                for i, m in enumerate(markers)
            ]
            session_id, ms = await _new(agent, cwd, servers)
            times.append(ms)
            if round_ == 0:
                # Benchmarks may poll: the servers are separate processes we cannot be told about.
                for _ in range(60):  # up to 3 s; the marker is written before the slow start
                    if all(m.exists() for m in markers):
                        break
                    await anyio.sleep(0.05)
                if not all(m.exists() for m in markers):
                    return _skipped(name, "the agent did not start the MCP servers given to session/new")
            await agent.call("session/close", {"sessionId": session_id})
        return figure(BENCH, name, median(times), 5, slow_start_s=_SLOW_START_S)
    finally:
        await agent.close()


def _skipped(name: str, why: str) -> dict[str, Any]:
    return {"bench": BENCH, "figure": name, "value": None, "target": 5, "note": f"skipped: {why}", "ok": None}


async def _many_sessions(home: Path, cwd: Path, n: int) -> list[dict[str, Any]]:
    replies = [f"reply number {i}" for i in range(n)]
    script = home / "many.json"
    script.write_text(json.dumps([{"text": r, "chunks": 1} for r in replies]), encoding="utf-8")
    agent = await _started(home, script)
    try:
        t = time.perf_counter()
        first, _ = await _new(agent, cwd)
        texts: dict[str, list[str]] = {}
        answers: dict[str, str] = {}
        await _prompt_all(agent, [first], texts, answers)
        rss_one = agent.rss_mb()  # one session that has prompted: the model and harness are loaded
        others = [(await _new(agent, cwd))[0] for _ in range(n - 1)]
        await _prompt_all(agent, others, texts, answers)
        total = time.perf_counter() - t
        rss_all = agent.rss_mb()
    finally:
        await agent.close()
    sessions = [first, *others]
    correct = sum(1 for s in sessions if answers.get(s) == "end_turn" and len(texts.get(s, [])) == 1)
    got = sorted(t for s in sessions for t in texts.get(s, []))
    if got != sorted(replies):
        correct = min(correct, len(set(got) & set(replies)))
    return [
        figure(BENCH, f"sessions_{n}_answered", correct, n, lower_is_better=False),
        figure(
            BENCH, f"sessions_{n}_total_s", total, None, note="session/new for each, then all prompt at once"
        ),
        figure(
            BENCH,
            "rss_per_idle_session_kb",
            (rss_all - rss_one) * 1024 / max(1, n - 1),
            None,
            rss_total_mb=round(rss_all, 1),
        ),
    ]


async def _prompt_all(
    agent: Agent, sessions: list[str], texts: dict[str, list[str]], answers: dict[str, str]
) -> None:
    """Send one prompt per session, all at once, and read until every one is answered."""
    pending: dict[int, str] = {}
    for session_id in sessions:
        rid = await agent.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
        )
        pending[rid] = session_id
    while pending:
        msg = await agent.read()
        if msg.get("method") == "session/update":
            params = msg["params"]
            update = params["update"]
            if update.get("sessionUpdate") == "agent_message_chunk":
                texts.setdefault(params["sessionId"], []).append(update["content"]["text"])
        elif "method" not in msg and msg.get("id") in pending:
            session_id = pending.pop(msg["id"])
            answers[session_id] = (msg.get("result") or {}).get("stopReason") or json.dumps(msg.get("error"))


def _write_session(home: Path, cwd: Path, session_id: str, n_messages: int) -> None:
    """A session of ``n_messages`` alternating user and assistant messages, in the store's format."""
    directory = home / "sessions" / session_id
    directory.mkdir(parents=True)
    stamp = "2025-01-01T00:00:00.000Z"
    meta = {
        "id": session_id,
        "cwd": str(cwd),
        "title": "a long session",
        "createdAt": stamp,
        "updatedAt": stamp,
        "additionalDirectories": [],
        "mcpServers": [],
    }
    (directory / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    filler = "lorem ipsum dolor sit amet " * 6
    with (directory / "messages.jsonl").open("w", encoding="utf-8") as f:
        for i in range(n_messages):
            if i % 2 == 0:
                message: dict[str, Any] = {
                    "role": "user",
                    "content": [{"type": "text", "text": f"question {i}: {filler}"}],
                }
            else:
                message = {
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"answer {i}: {filler}"}],
                    "finish": "stop",
                    "usage": {"input": 1000 + i, "output": 50},
                }
            f.write(json.dumps(message, separators=(",", ":")) + "\n")


async def _load_long(home: Path, cwd: Path, n_messages: int, repeats: int) -> tuple[list[float], int]:
    session_id = "sess_bench_long"
    _write_session(home, cwd, session_id, n_messages)
    agent = await _started(home)
    try:
        await _new(agent, cwd)  # imports done: the load is timed, not the start-up
        times: list[float] = []
        replayed = 0
        for _ in range(repeats):
            t = time.perf_counter()
            rid = await agent.request(
                "session/load", {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
            )
            answer, replayed = await agent.until_response(rid)
            times.append(time.perf_counter() - t)
            if "error" in answer:
                raise RuntimeError(f"session/load failed: {answer['error']}")
        return times, replayed
    finally:
        await agent.close()


async def run(quick: bool) -> list[dict[str, Any]]:
    n_new = 50
    n_sessions = 20 if quick else 200
    n_messages = 2_000 if quick else 10_000
    with tempfile.TemporaryDirectory() as tmp, provider_server(_reply) as (server, _):
        root = Path(tmp)
        home, cwd = root / "home", root / "project"
        home.mkdir()
        cwd.mkdir()
        new_http = await _new_latency(
            root / "http", cwd, n_new, http_agent(root / "http", "openai", server.url)
        )
        new_times = await _new_latency(home, cwd, n_new)
        slow_mcp = await _new_with_slow_mcp(home, cwd, 3 if quick else 10)
        many = await _many_sessions(home, cwd, n_sessions)
        load_times, replayed = await _load_long(home, cwd, n_messages, 3)
    return [
        figure(
            BENCH,
            "new_http_median_ms",
            median(new_http),
            3,
            samples=n_new,
            note="a later session/new, --provider openai at a local server",
        ),
        figure(BENCH, "new_median_ms", median(new_times), 5, samples=n_new, note="the script provider"),
        slow_mcp,
        *many,
        figure(BENCH, f"load_{n_messages}_messages_s", median(load_times), 0.5, replayed_updates=replayed),
    ]


def _reply(_request: Recorded) -> Reply:
    return Reply.sse(stream_for("openai", 3))
