"""Streaming through the real process to a client reading stdout, and the overhead of a turn.

Rows: text deltas streamed by a local fake server in the exact Chat Completions and Anthropic wire formats
(``--provider openai`` / ``anthropic``: socket -> SSE -> deltas -> events -> updates -> JSON -> stdout), and
the ``script`` provider (a second row: no HTTP, no SSE). Figures: ``session/update`` notifications per
second and the agent's CPU µs per update (``/proc``: the agent process only; the server is a thread of the
bench). Baseline: the official SDK's echo agent sending the same number of ``agent_message_chunk`` updates,
spawned the same way in the same run.

Turn overhead (warm session, HTTP provider): ``session/prompt`` written -> the model request received by the
server (``prompt_to_request_ms``), median over repeated prompts; and ``chunk_to_update_ms``: each Chat
Completions chunk is made at the moment the server writes it, its delta's text carrying that moment
(``time.perf_counter`` of the bench, whose thread the server is); the bench reads the ``session/update``
and subtracts. One chunk per socket write, a gap between them (the agent idle when a chunk comes, as
between a model's tokens), median over the chunks. It includes the bench's own read and JSON decode, so it
is an upper bound of the agent's part.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import anyio

from acp_conformance.fake_model import Recorded, Reply
from bench._rpc import INIT, Agent, figure, median, our_agent, percentile, sdk_echo
from bench._wire import API_PATHS, PROVIDERS, http_agent, pieces, provider_server, stream_for

BENCH = "streaming"
LONG = "bench-long-reply"
STAMPED = "bench-stamped-reply"
_GAP_S = 0.002
_CHUNK = (
    'data: {{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1770933892,"model":"bench-model",'
    '"choices":[{{"index":0,"delta":{{"content":"{text}"}},"finish_reason":null}}]}}\n\n'
)


class _Stamped(Sequence[bytes]):
    """A Chat Completions stream of ``n`` chunks, each made when the server writes it (after a gap) with
    its send time in its text; then the end of the stream."""

    def __init__(self, n: int) -> None:
        self._n = n

    def __len__(self) -> int:
        return self._n + 1

    @overload
    def __getitem__(self, i: int) -> bytes: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[bytes]: ...
    def __getitem__(self, i: int | slice) -> bytes | Sequence[bytes]:
        raise TypeError("read in order only")

    def __iter__(self) -> Iterator[bytes]:
        for _ in range(self._n):
            time.sleep(_GAP_S)  # the server's thread, between two tokens
            yield _CHUNK.format(text=f"t{time.perf_counter():.7f} ").encode()
        yield (
            b'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1770933892,'
            b'"model":"bench-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
            b"data: [DONE]\n\n"
        )


async def _chunk_latencies(agent: Agent, cwd: Path) -> list[float]:
    """ms from each stamped chunk's write at the server to its ``session/update`` read here."""
    out: list[float] = []
    try:
        session = await _ready(agent, cwd)
        await _prompt(agent, session, "warm")
        rid = await agent.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": STAMPED}]}
        )
        while True:
            msg = await agent.read()
            now = time.perf_counter()
            if msg.get("id") == rid and "method" not in msg:
                break
            update = (msg.get("params") or {}).get("update") or {}
            text = str((update.get("content") or {}).get("text", ""))
            if update.get("sessionUpdate") == "agent_message_chunk" and text.startswith("t"):
                out.append((now - float(text[1:])) * 1000)
    finally:
        await agent.close()
    return out


def _stat(pid: int) -> list[str]:
    """``/proc/<pid>/stat``'s fields after the command name (field 3, the state, is index 0)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _cpu_s(pid: int) -> float:
    """The agent process's own CPU (all its threads): user + system."""
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _tree_cpu_s(pid: int) -> float:
    """What the user's machine spends on the agent: its own CPU, its children's that ended and were waited
    for (``cutime``/``cstime``: git, a hook, the sandbox probe), and the live descendants' own."""
    parents: dict[int, int] = {}
    cpu: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = _stat(int(entry.name))
            except OSError:  # gone meanwhile
                continue
            parents[int(entry.name)] = int(fields[1])
            cpu[int(entry.name)] = int(fields[11]) + int(fields[12])
    tree, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in tree:
                tree.add(child)
                frontier.append(child)
    own = _stat(pid)
    waited = int(own[13]) + int(own[14])
    return (sum(cpu.get(p, 0) for p in tree) + waited) / os.sysconf("SC_CLK_TCK")


async def _ready(agent: Agent, cwd: Path) -> str:
    await agent.call("initialize", INIT)
    return str((await agent.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["sessionId"])


async def _prompt(agent: Agent, session: str, text: str, *, settle: bool = False) -> tuple[float, Cpu, int]:
    """One prompt; (seconds, CPU seconds of the agent's process tree (``settle``: once its after-turn work
    is done, else at the answer) and of the process alone at the answer, updates seen)."""
    pid = agent.process.pid
    cpu0, own0 = _tree_cpu_s(pid), _cpu_s(pid)
    t = time.perf_counter()
    rid = await agent.request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
    )
    response, updates = await agent.until_response(rid)
    elapsed = time.perf_counter() - t
    own = _cpu_s(pid) - own0
    if "error" in response:
        raise RuntimeError(f"prompt failed: {response['error']}")
    tree = await _settled_tree_cpu_s(pid) if settle else _tree_cpu_s(pid)
    return elapsed, Cpu(tree - cpu0, own), updates


async def _settled_tree_cpu_s(pid: int) -> float:
    """The tree's CPU once the turn's after-work is done (the answer's fsync, a title request, a child):
    read until it stops growing for two readings in a row (``/proc`` counts in clock ticks), 3 s at most."""
    last = _tree_cpu_s(pid)
    still = 0
    for _ in range(60):
        await anyio.sleep(0.05)
        now = _tree_cpu_s(pid)
        still = still + 1 if now == last else 0
        if still >= 2:
            break
        last = now
    return last


@dataclass(frozen=True)
class Cpu:
    """A prompt's CPU seconds: the agent's process tree, settled after the answer (what the user's machine
    spent), and the process alone until the answer (what this bench measured before)."""

    tree: float
    own: float


async def _stream(
    agent: Agent, cwd: Path, text: str, warm: str | None = None
) -> tuple[float, float, int, float, float]:
    """(updates/s, CPU µs per update of the process tree, updates, the process alone's until the answer,
    the tree's from the spawn: start-up, warm-up and the warming prompt included) of one long reply; ``warm`` first runs a short prompt so the model is built and the connection open,
    as in a session the user has already prompted."""
    try:
        session = await _ready(agent, cwd)
        if warm is not None:
            await _prompt(agent, session, warm)
        elapsed, cpu, updates = await _prompt(agent, session, text, settle=True)
        whole = _tree_cpu_s(agent.process.pid)
    finally:
        await agent.close()
    per = 1e6 / max(updates, 1)
    return updates / elapsed, cpu.tree * per, updates, cpu.own * per, whole * per


async def _to_request(agent: Agent, cwd: Path, arrivals: Any, n: int) -> list[float]:
    """ms from writing ``session/prompt`` to the model request arriving at the server, warm session."""
    out: list[float] = []
    try:
        session = await _ready(agent, cwd)
        await _prompt(agent, session, "warm")
        params = {"sessionId": session, "prompt": [{"type": "text", "text": "again"}]}
        for _ in range(n):
            # Timed from the write itself: ``_prompt`` reads the process tree's CPU first (a walk of
            # /proc, ~4 ms), which this figure counted until 2026-12 (6.4-6.7 ms then).
            t = time.perf_counter()
            await agent.until_response(await agent.request("session/prompt", params))
            got = arrivals.since(t)
            if got is not None:
                out.append(got * 1000)
    finally:
        await agent.close()
    return out


async def run(quick: bool) -> list[dict[str, Any]]:
    n = 20_000 if quick else 100_000
    chunks = 100 if quick else 400
    short = 3
    bodies = {p: pieces(stream_for(p, n)) for p in PROVIDERS}
    small = {p: [stream_for(p, short)] for p in PROVIDERS}

    def reply(request: Recorded) -> Reply:
        provider = next(p for p, path in API_PATHS.items() if path == request.path)
        body = request.body.decode()
        if STAMPED in body:
            return Reply(200, {"content-type": "text/event-stream"}, _Stamped(chunks))
        long = LONG in body  # the long reply for the prompt that asks for it
        return Reply(200, {"content-type": "text/event-stream"}, (bodies if long else small)[provider])

    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, provider_server(reply) as (server, arrivals):
        root = Path(tmp)
        cwd = root / "project"
        cwd.mkdir()
        sdk_cmd, sdk_env = sdk_echo()
        sdk, sdk_cpu, _, _, _ = await _stream(await Agent.spawn(sdk_cmd, sdk_env), cwd, f"stream {n}")
        cmd, _ = our_agent(root)
        for provider in PROVIDERS:
            env = http_agent(root / f"home-{provider}", provider, server.url)
            ours, cpu, count, own, whole = await _stream(await Agent.spawn(cmd, env), cwd, LONG, warm="hi")
            rows += [
                figure(
                    BENCH,
                    f"{provider}_updates_per_s",
                    ours,
                    round(1.2 * sdk),
                    lower_is_better=False,
                    baseline=sdk,
                    ratio_vs_sdk=round(ours / sdk, 2),
                    updates=count,
                    note=f"--provider {provider} at a local server, its exact wire format",
                ),
                figure(
                    BENCH,
                    f"{provider}_cpu_us_per_update",
                    cpu,
                    12,
                    baseline=sdk_cpu,
                    process_alone_until_answer_us=round(own, 2),
                    from_spawn_us=round(whole, 2),
                    note="the agent's process tree, until its after-turn work is done",
                ),
            ]
        script = root / "script.json"
        script.write_text(json.dumps([{"text": "x" * n, "chunks": n}]))
        cmd, env = our_agent(root / "home-script", script)
        ours, cpu, count, _, _ = await _stream(await Agent.spawn(cmd, env), cwd, "go")
        rows += [
            figure(
                BENCH,
                "script_updates_per_s",
                ours,
                None,
                lower_is_better=False,
                baseline=sdk,
                ratio_vs_sdk=round(ours / sdk, 2),
                updates=count,
                note="second row: the script provider (no HTTP, no SSE)",
            ),
            figure(BENCH, "script_cpu_us_per_update", cpu, None, baseline=sdk_cpu),
        ]
        env = http_agent(root / "home-turn", "openai", server.url)
        times = await _to_request(await Agent.spawn(cmd, env), cwd, arrivals, 10 if quick else 50)
        rows.append(
            figure(
                BENCH,
                "prompt_to_request_ms",
                median(times),
                3,
                samples=len(times),
                note="warm session: session/prompt written -> the model request at the server",
            )
        )
        env = http_agent(root / "home-latency", "openai", server.url)
        latencies = await _chunk_latencies(await Agent.spawn(cmd, env), cwd)
        rows.append(
            figure(
                BENCH,
                "chunk_to_update_ms",
                median(latencies),
                1,
                samples=len(latencies),
                p99=round(percentile(latencies, 99), 2),
                note="a chunk written by the server (its send time in its text) -> its session/update read",
            )
        )
    return rows
