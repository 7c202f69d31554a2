"""Sandbox start-up overhead: a sandboxed command against the same command unsandboxed, in the same run.

The command is `bash -c true` (start-up is all there is to measure), started as the agent starts it:

- local runner: ``LocalCommandRunner`` with the session's policy (through the launcher: user, mount, PID
  and network namespaces, then Landlock) against the same runner with no policy. Target: median overhead
  <= 10 ms; missed since the namespaces (an interpreter's start-up; about 30 ms of CPU in all).
- launcher: the command line sent to an editor's terminal (``python -I -S _start.py SPEC -- bash -c
  true``) against ``bash -c true``, both spawned directly. Reported, no target: it is an interpreter's
  start-up, paid where the editor already spends tens of milliseconds creating a terminal.

Runs are interleaved (plain, sandboxed, plain, …) so a busy machine weighs on both sides alike. CPU time
per command (the agent's, all threads, plus its children's: ``getrusage``) is reported beside the wall
time: it hardly depends on the machine's load.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench._rpc import figure

BENCH = "sandbox"
TARGET_MS = 10.0


def _cpu_ms() -> float:
    """CPU time of this process (all threads) and of its reaped children so far, in ms."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (time.process_time() + kids.ru_utime + kids.ru_stime) * 1000


async def _local(
    rounds: int, project: Path, temp: Path
) -> tuple[list[float], list[float], list[float], list[float]]:
    from harness.sandbox import SandboxPolicy
    from harness.tools import CommandRequest, LocalCommandRunner

    runner = LocalCommandRunner()
    policy = SandboxPolicy(roots=(project,), temp=temp)

    async def sink(_chunk: str) -> None:
        return None

    async def once(sandbox: SandboxPolicy | None) -> tuple[float, float]:
        c, t = _cpu_ms(), time.perf_counter()
        code = await runner.run(CommandRequest("true", project, sandbox=sandbox), sink)
        assert code == 0, code
        return (time.perf_counter() - t) * 1000, _cpu_ms() - c

    await once(policy)  # the probe and the first compile happen once per process
    plain: list[float] = []
    boxed: list[float] = []
    plain_cpu: list[float] = []
    boxed_cpu: list[float] = []
    for _ in range(rounds):
        for sandbox, wall, cpu in ((None, plain, plain_cpu), (policy, boxed, boxed_cpu)):
            w, c = await once(sandbox)
            wall.append(w)
            cpu.append(c)
    return plain, boxed, plain_cpu, boxed_cpu


def _launcher(rounds: int, project: Path, temp: Path) -> tuple[list[float], list[float]]:
    from harness.sandbox import SandboxPolicy, sandbox_argv

    policy = SandboxPolicy(roots=(project,), temp=temp, state_dir=temp.parent / "specs")
    wrapped = sandbox_argv(policy, ["bash", "-c", "true"], spec_dir=temp.parent / "specs")

    def once(argv: list[str]) -> float:
        t = time.perf_counter()
        subprocess.run(argv, check=True, cwd=project)
        return (time.perf_counter() - t) * 1000

    plain: list[float] = []
    boxed: list[float] = []
    for _ in range(rounds):
        plain.append(once(["bash", "-c", "true"]))
        boxed.append(once(wrapped))
    return plain, boxed


def rows(quick: bool) -> list[dict[str, Any]]:
    from harness.sandbox import probe

    support = probe()
    if support.mechanism != "landlock":
        print(f"# sandbox: skipped ({support.describe()})", file=sys.stderr)
        return []
    rounds = 30 if quick else 150
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        (project / "src").mkdir(parents=True)
        (project / ".git").mkdir()
        temp = Path(tmp) / "tmp"
        temp.mkdir()
        plain, boxed, plain_cpu, boxed_cpu = anyio.run(_local, rounds, project, temp)
        lplain, lboxed = _launcher(rounds, project, temp)
    med, lmed = statistics.median(plain), statistics.median(boxed)
    out_plain, out_boxed = statistics.median(lplain), statistics.median(lboxed)
    return [
        figure(BENCH, "local_overhead_median_ms", lmed - med, TARGET_MS, baseline=med),
        figure(BENCH, "local_sandboxed_median_ms", lmed, baseline=med, netns=support.netns),
        figure(BENCH, "launcher_overhead_median_ms", out_boxed - out_plain, baseline=out_plain),
        figure(
            BENCH,
            "local_cpu_overhead_median_ms",
            statistics.median(boxed_cpu) - statistics.median(plain_cpu),
            baseline=statistics.median(plain_cpu),
        ),
    ]
