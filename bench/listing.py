"""`session/list` over a store of many saved sessions (2,000; 20,000 in full mode), through the real
process: the first page of the first process (it builds the index from every `meta.json`), then, in a
fresh process, its first page and every page after it.

The sessions are written straight into the store's format (`<home>/sessions/<id>/meta.json`), as an older
agent would have left them. Baseline (same run): reading every `meta.json` once, in this process, which is
what each page cost before the index.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._rpc import INIT, Agent, figure, median, our_agent

BENCH = "listing"
TARGET_MS = 5


def _write_sessions(sessions: Path, cwd: Path, n: int) -> None:
    for i in range(n):
        directory = sessions / f"sess_bench_{i:06d}"
        directory.mkdir(parents=True)
        stamp = f"2025-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00.{i % 1000:03d}Z"
        meta = {
            "id": directory.name,
            "cwd": str(cwd),
            "title": f"session number {i}",
            "createdAt": stamp,
            "updatedAt": stamp,
            "additionalDirectories": [],
            "mcpServers": [],
        }
        (directory / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


def _scan_ms(sessions: Path) -> float:
    """Every ``meta.json`` read and parsed once: what a page cost before the index."""
    t = time.perf_counter()
    for directory in sessions.iterdir():
        meta = directory / "meta.json"
        if meta.is_file():
            json.loads(meta.read_text(encoding="utf-8"))
    return (time.perf_counter() - t) * 1000


async def _pages(agent: Agent) -> tuple[list[float], int]:
    """Every page's latency, first to last, and how many sessions they listed."""
    times: list[float] = []
    listed = 0
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
        t = time.perf_counter()
        page = await agent.call("session/list", params)
        times.append((time.perf_counter() - t) * 1000)
        listed += len(page["sessions"])
        cursor = page.get("nextCursor")
        if cursor is None:
            return times, listed


async def _first_page_ms(home: Path) -> float:
    """A fresh process's first ``session/list``, after ``initialize`` and a request that loads the session
    layer but reads no index (``session/status`` of no session): the start-up is not timed."""
    agent = await Agent.spawn(*our_agent(home))
    try:
        await agent.call("initialize", INIT)
        await agent.until_response(await agent.request("session/status", {"sessionId": "none"}))
        t = time.perf_counter()
        await agent.call("session/list", {})
        return (time.perf_counter() - t) * 1000
    finally:
        await agent.close()


async def _rpc_floor_ms(agent: Agent, n: int = 30) -> float:
    """A round trip that touches no disk (an unknown method's error): the pipe and the dispatch."""
    times: list[float] = []
    for _ in range(n):
        t = time.perf_counter()
        await agent.until_response(await agent.request("bench/nosuch", {}))
        times.append((time.perf_counter() - t) * 1000)
    return median(times)


async def _one_store(root: Path, n: int, empty_first: float, repeats: int) -> list[dict[str, Any]]:
    home, cwd = root / f"home{n}", root / "project"
    cwd.mkdir(exist_ok=True)
    _write_sessions(home / "sessions", cwd, n)
    scan = median([_scan_ms(home / "sessions") for _ in range(3)])
    build = await _first_page_ms(home)  # the first process: the index is built
    first = median([await _first_page_ms(home) for _ in range(repeats)])  # later ones: it is there
    agent = await Agent.spawn(*our_agent(home))
    try:
        await agent.call("initialize", INIT)
        times, listed = await _pages(agent)
        again, _ = await _pages(agent)
        floor = await _rpc_floor_ms(agent)
    finally:
        await agent.close()
    if listed != n:
        raise RuntimeError(f"session/list listed {listed} of {n} sessions")
    pages = times[1:] + again
    return [
        figure(BENCH, f"list_{n}_first_page_ever_ms", build, None, baseline=scan, note="builds the index"),
        figure(
            BENCH,
            f"list_{n}_fresh_first_page_ms",
            first,
            None,
            baseline=empty_first,
            note="a later process; baseline: the same over an empty store (start-up work)",
        ),
        figure(
            BENCH,
            f"list_{n}_fresh_first_page_over_empty_ms",
            first - empty_first,
            TARGET_MS,
            baseline=scan,
            note="what the store's size adds to a fresh process's first page; baseline: one read of every meta.json",
        ),
        figure(
            BENCH,
            f"list_{n}_page_median_ms",
            median(pages),
            TARGET_MS,
            baseline=floor,
            note="every page after the first, twice over; baseline: a round trip that touches no disk",
            pages=len(times),
            max_ms=round(max(pages), 2),
        ),
    ]


async def run(quick: bool) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    repeats = 3 if quick else 5
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty"
        (empty / "sessions").mkdir(parents=True)
        empty_first = median([await _first_page_ms(empty) for _ in range(repeats)])
        for n in (2_000,) if quick else (2_000, 20_000):
            rows.extend(await _one_store(Path(tmp), n, empty_first, repeats))
    return rows
