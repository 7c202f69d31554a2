"""Starting a sandboxed child without ``preexec_fn`` and without a second interpreter.

Landlock applies to the calling *thread* and to the processes it starts afterwards. So a fresh thread
(never reused) restricts itself, starts the child with ``subprocess.Popen`` and ends; the event loop's
threads are untouched. The child is read and awaited without threads: its output pipe and a pidfd are
waited on with ``anyio.wait_readable`` (asyncio and trio alike). Starting costs about a millisecond
more than a plain spawn (``bench/sandbox.py``).

When the network is off and a network namespace can be made, the child is ``unshare --user --net``
(util-linux) running the command: the thread is already under Landlock and may not write the uid map,
so inside that namespace the command's own uid reads as the overflow id (``nobody``); files it creates
are still the user's. The launcher (``_launch.py``, used for editor terminals) maps the uid instead.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from . import _landlock as ll

__all__ = ["SandboxedProcess", "open_sandboxed_process"]

_READ_CHUNK = 65536


class SandboxedProcess:
    """A child started under a Landlock spec: ``pid``, ``stdout`` (async iterator of bytes, stdout and
    stderr merged), ``wait()`` and ``aclose()``, like the parts of ``anyio.abc.Process`` the shell uses."""

    def __init__(self, popen: subprocess.Popen[bytes], read_fd: int) -> None:
        self._popen = popen
        self._read_fd: int | None = read_fd
        self._pidfd: int | None = None
        try:
            self._pidfd = os.pidfd_open(popen.pid)
        except (AttributeError, OSError):
            self._pidfd = None
        self.stdout: AsyncIterator[bytes] = self._chunks()

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    async def _chunks(self) -> AsyncIterator[bytes]:
        while (fd := self._read_fd) is not None:
            await anyio.wait_readable(fd)
            try:
                data = os.read(fd, _READ_CHUNK)
            except BlockingIOError:
                continue
            except OSError:  # closed by aclose while we waited
                return
            if not data:
                return
            yield data

    async def wait(self) -> int:
        while (code := self._popen.poll()) is None:
            if self._pidfd is not None:
                await anyio.wait_readable(self._pidfd)
            else:
                await anyio.sleep(0.01)
        return code

    async def aclose(self) -> None:
        for name in ("_read_fd", "_pidfd"):
            fd: int | None = getattr(self, name)
            if fd is not None:
                setattr(self, name, None)
                anyio.notify_closing(fd)
                os.close(fd)
        with anyio.CancelScope(shield=True):
            await self.wait()


def _start(
    argv: Sequence[str], spec: Mapping[str, Any], cwd: Path, env: Mapping[str, str], write_fd: int
) -> subprocess.Popen[bytes]:
    """Restrict a new thread and start the child from it (blocking; a millisecond or two)."""
    box: dict[str, Any] = {}

    def confined() -> None:
        try:
            ll.apply_spec(dict(spec), netns=False)
            box["popen"] = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=write_fd,
                start_new_session=True,
            )
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    thread = threading.Thread(target=confined, name="acp-agent-sandbox-spawn", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["popen"]


async def open_sandboxed_process(
    argv: Sequence[str],
    spec: Mapping[str, Any],
    *,
    cwd: Path,
    env: Mapping[str, str],
    unshare: str | None = None,
) -> SandboxedProcess:
    """Start ``argv`` under ``spec`` (``compile_spec``), in its own session (process group), stdin from
    /dev/null, stdout and stderr into one pipe. ``unshare``: the ``unshare`` binary, used when the spec
    asks for a network namespace. Raises ``OSError`` when it cannot start (or cannot be sandboxed)."""
    full = [*argv]
    if spec.get("netns"):
        if unshare is None:
            raise OSError("the sandbox asks for a network namespace but unshare is not available")
        full = [unshare, "--user", "--net", "--", *argv]
    read_fd, write_fd = os.pipe()
    try:
        os.set_blocking(read_fd, False)
        merged = ll.spec_environ(dict(spec), env)
        popen = await anyio.to_thread.run_sync(_start, full, spec, cwd, merged, write_fd)
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    return SandboxedProcess(popen, read_fd)
