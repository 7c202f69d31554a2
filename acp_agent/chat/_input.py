"""Terminal input as lines.

In a terminal the lines are typed with ``prompt_toolkit`` (``EditedLines``): cursor keys, Home/End,
word motions, Up/Down through the history (kept in a file between chats), Ctrl-R to search it. It runs on
the chat's event loop (asyncio), so a line being typed is cancelled like any other wait, and the terminal
is given back as it was. Chosen over ``readline``, which would block a worker thread that nothing can
cancel (a cancelled turn, the agent exiting, Ctrl-C at the prompt would leave it reading).

Elsewhere (a pipe, a file) ``LineReader`` reads a duplicate of fd 0 without blocking the event loop.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

import anyio
from anyio.abc import ByteReceiveStream

from ..protocol.stdio import FdReceiveStream

__all__ = ["EditedLines", "LineReader", "Lines", "open_terminal_input"]


class Lines(Protocol):
    """Where the chat's lines come from. ``edits``: it shows the prompt itself (else the chat writes it).
    ``readline`` returns None at the end of input (Ctrl-D); Ctrl-C while typing raises KeyboardInterrupt
    (in a terminal in raw mode no SIGINT comes). ``remember``: the line joins the history."""

    @property
    def edits(self) -> bool: ...

    async def readline(self, prompt: str = "", *, remember: bool = True) -> str | None: ...

    async def aclose(self) -> None: ...


class LineReader:
    """``readline()`` over a byte stream; ``None`` at end of input (Ctrl-D)."""

    edits = False

    def __init__(self, stream: ByteReceiveStream) -> None:
        self._stream = stream
        self._buffer = b""
        self._eof = False

    async def readline(self, prompt: str = "", *, remember: bool = True) -> str | None:
        while b"\n" not in self._buffer:
            if self._eof:
                if self._buffer:
                    rest, self._buffer = self._buffer, b""
                    return rest.decode("utf-8", "replace")
                return None
            try:
                # Cancellation while waiting loses nothing: bytes stay in the buffer.
                self._buffer += await self._stream.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                self._eof = True
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", "replace").rstrip("\r")

    async def aclose(self) -> None:
        await self._stream.aclose()


class EditedLines:
    """Lines typed in a terminal with editing and a history (see the module docstring)."""

    edits = True

    def __init__(self, history: Path | None) -> None:
        # No cursor position requests: a plain prompt needs none, and a terminal (or a pty in a test)
        # that does not answer them gets a warning printed after a wait.
        os.environ.setdefault("PROMPT_TOOLKIT_NO_CPR", "1")
        from prompt_toolkit import PromptSession
        from prompt_toolkit.history import FileHistory, History, InMemoryHistory

        kept: History = InMemoryHistory()
        if history is not None:
            try:
                history.parent.mkdir(parents=True, exist_ok=True)
                os.close(os.open(history, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))  # the user's only
                kept = FileHistory(str(history))
            except OSError:
                pass  # no history file: the chat still edits lines, and remembers them until it ends
        self._prompts: PromptSession[str] = PromptSession(history=kept)
        self._answers: PromptSession[str] = PromptSession()  # a permission answer is not history

    async def readline(self, prompt: str = "", *, remember: bool = True) -> str | None:
        session = self._prompts if remember else self._answers
        try:
            # handle_sigint=False: prompt_toolkit would take SIGINT from the chat and not give it back.
            return await session.prompt_async(prompt, handle_sigint=False)
        except EOFError:
            return None

    async def aclose(self) -> None:
        pass


def open_terminal_input(history: Path | None = None) -> Lines:
    """Edited lines when stdin and stdout are a terminal (``history``: the file of past prompts), else a
    reader of a duplicate of fd 0 (the duplicate keeps fd 0 usable for everything else)."""
    if os.isatty(0) and os.isatty(1) and os.environ.get("TERM") != "dumb":
        return EditedLines(history)
    return LineReader(FdReceiveStream(os.dup(0)))
