"""What a chat driven through a pty shows on its terminal, redraws applied (``pyte``), waited on.

The chat's reply streams above its prompt and is redrawn by its difference (``Wor``, the cursor moved,
``kin``), so a word of a reply still streaming shows on the screen, not in the bytes ``expect`` reads."""

from __future__ import annotations

import codecs
import time
from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["Screen"]


class Screen:
    """The pty's screen, at its size. ``log``: everything read from the child so far (its
    ``logfile_read``), as text or bytes."""

    def __init__(self, child: Any, log: Callable[[], str | bytes]) -> None:
        pyte = pytest.importorskip("pyte", reason="pyte (dev extra) emulates the terminal screen")
        rows, columns = child.getwinsize()
        self._child = child
        self._log = log
        self._screen: Any = pyte.Screen(columns, rows)
        self._stream: Any = pyte.Stream(self._screen)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._fed = 0

    def lines(self) -> list[str]:
        log = self._log()
        new = log[self._fed :]
        self._fed = len(log)
        self._stream.feed(self._decoder.decode(new) if isinstance(new, bytes) else new)
        return [line.rstrip() for line in self._screen.display if line.strip()]

    def expect(self, text: str, timeout: float = 20) -> None:
        """Read from the child until ``text`` is on the screen (AssertionError after ``timeout`` s)."""
        import pexpect

        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines()):
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} not on the screen:\n" + "\n".join(self.lines()))
            try:
                self._child.read_nonblocking(65536, timeout=0.1)  # into logfile_read
            except pexpect.TIMEOUT:
                pass
