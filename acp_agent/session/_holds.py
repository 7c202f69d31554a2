"""An open session is held against other processes (a second agent sharing the home, such as another editor
window's, or ``acp-harness-agent sessions delete``): one process at a time has it open, and none deletes it
meanwhile.

Each session live in a process holds an exclusive ``flock`` on its folder, taken without waiting: a load or
resume of it in another process is refused (``SessionInUse``), since two processes writing one session would
interleave two conversations that never saw each other's turns in one transcript, and the metadata each saves
would undo the other's; a delete takes the lock the same way and is refused alike. The kernel drops a lock with
the descriptor, so a killed agent holds nothing (no stale lock file to clean up), and nothing is written
into the folder for it. On a file system without ``flock`` (some network mounts) sessions open and are
deleted unheld, as before. Within one process a delete runs alone on its session (``_deletes``) and closes the
live one first; what this process still holds of a session it deletes (a session being set up) is let go
first. Blocking, all of it: run in worker threads.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Holds", "SessionInUse", "exclusively"]

_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)


class SessionInUse(Exception):
    """The session is open in another agent process (or another process is deleting it): it was not opened
    or deleted here."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session {session_id} is open in another agent process (another editor window sharing this "
            "home, say): close it there first"
        )
        self.session_id = session_id


@dataclass(slots=True)
class _Hold:
    fd: int
    count: int


class Holds:
    """This process's holds, one per session folder however many live sessions share it (two loads of
    one session at once)."""

    def __init__(self) -> None:
        self._held: dict[Path, _Hold] = {}
        self._lock = threading.Lock()

    def take(self, folder: Path, session_id: str) -> bool:
        """Hold ``folder``; False when it is gone, ``SessionInUse`` when another process holds it (has the
        session open, or deletes it)."""
        with self._lock:
            held = self._held.get(folder)
            if held is not None:
                held.count += 1
                return True
            try:
                fd = os.open(folder, _FLAGS)
            except OSError:
                return False
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise SessionInUse(session_id) from None
            except OSError:  # a file system without locks: the session opens, unheld
                os.close(fd)
                return True
            self._held[folder] = _Hold(fd, 1)
            return True

    def release(self, folder: Path) -> None:
        """One live session of ``folder`` let go (the last one drops the lock)."""
        with self._lock:
            held = self._held.get(folder)
            if held is None:
                return
            held.count -= 1
            if held.count <= 0:
                del self._held[folder]
                os.close(held.fd)

    def drop(self, folder: Path) -> None:
        """Every hold on ``folder`` let go (this process deletes it)."""
        with self._lock:
            held = self._held.pop(folder, None)
        if held is not None:
            os.close(held.fd)

    def __len__(self) -> int:
        return len(self._held)


@contextlib.contextmanager
def exclusively(folder: Path, session_id: str) -> Generator[bool]:
    """``folder`` held exclusively while the body runs (yields False when it does not exist);
    ``SessionInUse`` at once when another process holds it."""
    try:
        fd = os.open(folder, _FLAGS)
    except FileNotFoundError:
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SessionInUse(session_id) from None
        except OSError:  # a file system without locks: deleted as before there were holds
            pass
        yield True
    finally:
        os.close(fd)
