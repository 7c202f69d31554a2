"""A racing attacker for the check-then-use tests: a thread that keeps turning a project folder into a
symlink out of the project and back, as a background job a sandboxed command left running would."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path
from typing import cast

__all__ = ["flipping"]

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchanger() -> Callable[..., int] | None:
    if sys.platform != "linux":
        return None
    try:
        return cast("Callable[..., int]", ctypes.CDLL(None, use_errno=True).renameat2)
    except AttributeError:
        return None


_RENAMEAT2 = _exchanger()


def _exchange(a: Path, b: Path) -> bool:
    """Swap ``a`` and ``b`` atomically (``renameat2(RENAME_EXCHANGE)``); False where it is not offered."""
    if _RENAMEAT2 is None:
        return False
    done: int = _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return done == 0


@contextmanager
def flipping(folder: Path, outside: Path) -> Generator[list[int]]:
    """While inside: ``folder`` is a real folder half the time and a symlink to ``outside`` the other half,
    flipped by a thread as fast as it can (atomically where the kernel can exchange two names, so the
    name never goes missing). Yields a one-item list: the number of flips so far, once the thread has flipped
    at least once (a thread started is not yet a thread scheduled: on a busy machine, or beside other test
    workers, a short loop could otherwise run to its end before the first flip)."""
    link = folder.with_name(folder.name + ".link")
    link.symlink_to(outside, target_is_directory=True)
    parked = folder.with_name(folder.name + ".parked")
    stop = threading.Event()
    flipped = threading.Event()
    flips = [0]

    def run() -> None:
        atomic = _exchange(folder, link) and _exchange(folder, link)
        while not stop.is_set():
            try:
                if atomic:
                    _exchange(folder, link)
                else:
                    os.rename(folder, parked)
                    folder.symlink_to(outside, target_is_directory=True)
                    os.unlink(folder)
                    os.rename(parked, folder)
            except OSError:
                pass
            flips[0] += 1
            flipped.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        if not flipped.wait(timeout=30):
            raise AssertionError("the flipping thread did not flip once in 30 s")
        yield flips
    finally:
        stop.set()
        thread.join(timeout=10)
        assert not thread.is_alive()
        if folder.is_symlink():  # leave the folder as it was
            _exchange(folder, link)
