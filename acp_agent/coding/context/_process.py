"""Short-lived helper processes (hooks, ``git status``): bounded in time and output, killed whole.

``run_bounded`` runs an argv in its own process group with an optional stdin payload; stdout and stderr are
kept up to a limit each (the rest is drained and dropped, so a chatty child never blocks); at the timeout,
or when the calling task is cancelled, the whole group gets SIGTERM, then SIGKILL after a short grace.
Nothing a child prints reaches the agent's stdout.

Their environment is the caller's: ``harness.secrets.Secrets.child_env`` keeps the credentials out of it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream, Process, TaskGroup

__all__ = ["Completed", "run_bounded"]

_GRACE_S: Final = 1.0
_DRAIN_S: Final = 0.5


@dataclass(frozen=True, slots=True)
class Completed:
    """How a child ended: ``code`` (None when it was killed at the timeout or never started), what it
    wrote (each cut at the limit; ``cut`` says so), and why it failed to start (``error``)."""

    code: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    cut: bool = False
    error: str | None = None


async def run_bounded(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    stdin: bytes | None = None,
    limit: int = 64 * 1024,
    stop_at_limit: bool = False,
) -> Completed:
    """Run ``argv``; never raises for the child's own failures (they are in the ``Completed``).
    ``stop_at_limit``: kill the child once stdout holds ``limit`` bytes (a caller that needs a prefix)."""
    try:
        proc = await _start(argv, cwd, env, piped=stdin is not None)
    except OSError as exc:
        return Completed(None, error=f"cannot start {argv[0]}: {exc.strerror or exc}")
    out, err = _Capture(limit), _Capture(limit)
    code: int | None = None
    timed_out = False
    try:
        with anyio.move_on_after(timeout_s) as scope:
            async with anyio.create_task_group() as tg:
                if stdin is not None:
                    tg.start_soon(_feed, proc, stdin)
                assert proc.stdout is not None and proc.stderr is not None
                out_done, err_done = anyio.Event(), anyio.Event()
                tg.start_soon(out.pump, proc.stdout, out_done, tg if stop_at_limit else None)
                tg.start_soon(err.pump, proc.stderr, err_done, None)
                code = await proc.wait()
                # A background child may hold the pipes open: take what it flushes soon, then stop.
                with anyio.move_on_after(_DRAIN_S):
                    await out_done.wait()
                    await err_done.wait()
                tg.cancel_scope.cancel()
        timed_out = scope.cancelled_caught
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(_GRACE_S + 5):
            await _kill_group(proc)
    return Completed(code, out.text(), err.text(), timed_out=timed_out, cut=out.cut or err.cut or out.full)


async def _start(argv: Sequence[str], cwd: Path, env: Mapping[str, str], *, piped: bool) -> Process:
    """Shielded: a cancel while asyncio connects the pipes would kill only the leader (not its group)
    and leave it unreaped; once started, ``run_bounded`` kills the whole group whatever happens."""
    started: list[Process] = []
    with anyio.CancelScope(shield=True):
        started.append(
            await anyio.open_process(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.PIPE if piped else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        )
    return started[0]


async def _feed(proc: Process, data: bytes) -> None:
    assert proc.stdin is not None
    try:
        await proc.stdin.send(data)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass  # the child did not read its input: its choice
    finally:
        await proc.stdin.aclose()


class _Capture:
    """The first ``limit`` bytes of a stream; the rest is read and dropped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.cut = False
        self.full = False

    async def pump(self, stream: ByteReceiveStream, done: anyio.Event, stop: TaskGroup | None) -> None:
        try:
            async for chunk in stream:
                room = self.limit - len(self.data)
                if room > 0:
                    self.data += chunk[:room]
                if len(chunk) > room:
                    self.cut = True
                    if stop is not None:
                        self.full = True
                        break
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        finally:
            done.set()
        if self.full and stop is not None:
            stop.cancel_scope.cancel()

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


async def _kill_group(proc: Process) -> None:
    """SIGTERM the group (the leader's pid is its id), wait up to the grace, then SIGKILL what is left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is gone already
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGTERM)
            with anyio.move_on_after(_GRACE_S):
                await proc.wait()
        os.killpg(proc.pid, signal.SIGKILL)
    await proc.aclose()
