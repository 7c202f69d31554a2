"""Provider benchmark: stream parse throughput end to end into harness deltas, and cancel latency.

    .venv/bin/python bench/providers.py [--quick]

Throughput: a Chat Completions stream and an Anthropic stream of N content chunks each (50,000; 10,000
with --quick) from the fake server on 127.0.0.1, through httpx2, the SSE parser and the provider, into
deltas. CPU µs per chunk is process CPU time (the server thread included) over N.
Cancel latency: a stream whose server stalls after the first delta; the time from cancelling the
consuming task's scope until it has exited (the HTTP stream closed). Prints a table, then JSON lines.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from acp_conformance.fake_model import FakeServer, Recorded, Reply, Stall  # noqa: E402
from bench._wire import anthropic_stream, chat_stream, pieces  # noqa: E402
from harness import Message  # noqa: E402
from harness.model import Model, Prompt, TextChunk  # noqa: E402
from harness.providers import ChatCompletions, Messages  # noqa: E402

TARGET_CHUNKS_PER_S = 30_000.0
TARGET_CANCEL_P99_MS = 20.0


def prompt() -> Prompt:
    return Prompt("bench", [Message.user("go")], [])


async def throughput(model: Model, n: int) -> tuple[float, float]:
    texts = 0
    cpu0, t0 = time.process_time(), time.perf_counter()
    async for d in model.stream(prompt()):
        if type(d) is TextChunk:
            texts += 1
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    if texts != n:
        raise SystemExit(f"expected {n} text deltas, got {texts}")
    return n / wall, cpu / n * 1e6


async def cancel_latencies(server: FakeServer, runs: int) -> list[float]:
    head = (
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
        b'"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}\n\n'
    )
    stalls: list[Stall] = []

    def stalled(_: Recorded) -> Reply:
        stall = Stall()
        stalls.append(stall)
        return Reply.sse(head, then=[stall])

    server.route("POST", "/cancel/v1/chat/completions", stalled)
    model = ChatCompletions(server.url + "/cancel/v1", "m")
    out: list[float] = []
    for _ in range(runs):
        first = anyio.Event()

        async def consume(first: anyio.Event = first) -> None:
            async for _d in model.stream(prompt()):
                first.set()

        t0 = 0.0
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(consume)
                await first.wait()
                await anyio.sleep(0.002)  # let the consumer block on the silent socket
                t0 = time.perf_counter()
                tg.cancel_scope.cancel()
            out.append((time.perf_counter() - t0) * 1000)
    await model.aclose()
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run(quick: bool) -> list[dict[str, Any]]:
    """The figures as JSON-ready rows (``python -m bench providers`` calls this)."""
    n = 10_000 if quick else 50_000
    runs = 40 if quick else 200
    figures: list[tuple[str, float, float | None]] = []
    with FakeServer() as server:
        server.route(
            "POST",
            "/v1/chat/completions",
            Reply(200, {"content-type": "text/event-stream"}, pieces(chat_stream(n), 65536)),
        )
        server.route(
            "POST",
            "/v1/messages",
            Reply(200, {"content-type": "text/event-stream"}, pieces(anthropic_stream(n), 65536)),
        )
        chat = ChatCompletions(server.url + "/v1", "bench")
        anth = Messages(server.url, "bench")
        await throughput(chat, n)  # warm up the pool and the code paths
        cps, cpu = await throughput(chat, n)
        figures += [("chat_chunks_per_s", cps, TARGET_CHUNKS_PER_S), ("chat_cpu_us_per_chunk", cpu, None)]
        await throughput(anth, n)
        cps, cpu = await throughput(anth, n)
        figures += [
            ("anthropic_chunks_per_s", cps, TARGET_CHUNKS_PER_S),
            ("anthropic_cpu_us_per_chunk", cpu, None),
        ]
        await chat.aclose()
        await anth.aclose()
        lat = await cancel_latencies(server, runs)
        figures += [
            ("cancel_p50_ms", statistics.median(lat), None),
            ("cancel_p99_ms", pct(lat, 0.99), TARGET_CANCEL_P99_MS),
        ]
    out: list[dict[str, Any]] = []
    for name, value, target in figures:
        if target is None:
            ok = None
        elif name.endswith("_ms"):
            ok = value <= target
        else:
            ok = value >= target
        out.append(
            {"bench": "providers", "figure": name, "value": round(value, 3), "target": target, "ok": ok}
        )
    return out


def main(quick: bool) -> int:
    rows = anyio.run(run, quick)
    print(
        f"providers bench ({'quick' if quick else 'full'}: {10_000 if quick else 50_000} chunks per stream)"
    )
    print(f"{'figure':<28}{'value':>14}{'target':>10}  ok")
    for r in rows:
        print(
            f"{r['figure']:<28}{r['value']:>14.3f}{r['target'] if r['target'] is not None else '-':>10}  {r['ok']}"
        )
    for r in rows:
        print(json.dumps(r))
    return 0  # a missed target is reported, not fatal


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 chunks and 40 cancels")
    args = parser.parse_args()
    sys.exit(main(args.quick))
