"""SIGTERM and SIGHUP end the agent as the end of its input does: running turns cancelled and answered,
sessions closed and written, then exit 0 (an editor or acpx ends the agent with SIGTERM; a closed terminal
sends SIGHUP).

From the start of the process the signals are caught here (standard library only: nothing else is imported
yet). Until a session has been announced a signal ends the process at once: nothing was promised. Once one
may have been (``hold``: just before an early ``session/new`` answer, and once start-up is over), a signal is
only noted; the event loop's watcher (``acp_agent.session._signals``) ends the input when it starts, or at
once when the signal comes while it runs.
"""

from __future__ import annotations

import signal
from types import FrameType

__all__ = ["SIGNALS", "hold", "install", "received"]

SIGNALS = (signal.SIGTERM, signal.SIGHUP)

_received: list[int] = []
_held = False


def _note(signum: int, _frame: FrameType | None) -> None:
    _received.append(signum)
    if not _held:
        raise SystemExit(0)


def install() -> None:
    """Catch the signals (call first thing in the process's main thread)."""
    for signum in SIGNALS:
        signal.signal(signum, _note)


def hold() -> None:
    """From now on a signal is only noted (a session may have been announced: it must be written first)."""
    global _held
    _held = True


def received() -> int | None:
    """The first signal noted, if any."""
    return _received[0] if _received else None
