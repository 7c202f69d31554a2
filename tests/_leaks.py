"""What a test of "nothing is left for the garbage collector" needs: a child that starts a daemon holding the
child's stdout and stderr (in a session of its own, out of reach of a group kill), and the finalisers'
complaints (ResourceWarning) caught in a block that ends with a full collection."""

from __future__ import annotations

import gc
import os
import signal
import sys
import warnings
from collections.abc import Generator, Iterable
from contextlib import contextmanager

__all__ = ["daemon_holding_pipes", "kill_all", "unraisables"]


def daemon_holding_pipes(method: str) -> str:
    """A Python program that starts the daemon, says its pid on stdout as the JSON-RPC notification
    ``method`` (``params.pid``), and exits 0 at the end of its input, as an agent or an MCP server does when its
    client closes stdin."""
    return f"""
import json, subprocess, sys
daemon = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(60)"], stdin=subprocess.DEVNULL, start_new_session=True
)
print(json.dumps({{"jsonrpc": "2.0", "method": {method!r}, "params": {{"pid": daemon.pid}}}}), flush=True)
sys.stdin.read()
"""


@contextmanager
def unraisables() -> Generator[list[str]]:
    """What was finalised unclosed (a ResourceWarning raised in a finaliser) inside the block, and by a full
    garbage collection at its end."""
    seen: list[str] = []
    before = sys.unraisablehook
    sys.unraisablehook = lambda u: seen.append(f"{u.exc_value!r} (in {u.object!r})")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ResourceWarning)
            yield seen
            gc.collect()
    finally:
        sys.unraisablehook = before


def kill_all(pids: Iterable[int]) -> None:
    """The daemons, gone (each may have ended already)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
