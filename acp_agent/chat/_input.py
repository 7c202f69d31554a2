"""Terminal input as lines.

In a terminal the lines are typed with ``prompt_toolkit`` (``EditedLines``): cursor keys, Home/End,
word motions, Up/Down through the history (kept in a file between chats), Ctrl-R to search it. It runs on
the chat's event loop (asyncio), so a line being typed is cancelled like any other wait, and the terminal
is given back as it was. Chosen over ``readline``, which would block a worker thread that nothing can
cancel (a cancelled turn, the agent exiting, Ctrl-C at the prompt would leave it reading).

One ``PromptSession`` lives as long as the chat, and a line can be typed while a turn runs: what the turn
prints goes above the line being typed (``printing_above``: prompt_toolkit's ``patch_stdout``), what is
in progress (the reply's last block, a running command's last lines) is drawn above the prompt and redrawn
in place (``show``), and the terminal stays in prompt_toolkit's hands the whole time, so Ctrl-C and Ctrl-D
are keys, never a signal or an echo: Ctrl-C is the chat's (``on_ctrl_c``: it cancels a running turn),
else it clears the line, or on an empty line leaves; Ctrl-D on an empty line ends the input. Alt-Enter
sends the line as ``/steer`` does.

Elsewhere (a pipe, a file) ``LineReader`` reads a duplicate of fd 0 without blocking the event loop.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Final, Protocol

import anyio
from anyio.abc import ByteReceiveStream
from prompt_toolkit import PromptSession
from prompt_toolkit.formatted_text import ANSI
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from ..protocol.stdio import FdReceiveStream

__all__ = ["STEER", "EditedLines", "LineReader", "Lines", "open_terminal_input"]

STEER: Final = "/steer "
"""A line starting so is steered into the running turn (Alt-Enter adds it)."""


class Lines(Protocol):
    """Where the chat's lines come from. ``edits``: it shows the prompt itself (else the chat writes it).
    ``readline`` returns None at the end of input (Ctrl-D); Ctrl-C while typing raises KeyboardInterrupt
    (in a terminal in raw mode no SIGINT comes). ``remember``: the line joins the history."""

    @property
    def edits(self) -> bool: ...

    async def readline(self, prompt: str = "", *, remember: bool = True) -> str | None: ...

    def retitle(self, prompt: str, *, remember: bool = True) -> None: ...

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

    def retitle(self, prompt: str, *, remember: bool = True) -> None:
        pass  # the chat writes the prompt before each line it reads here

    async def aclose(self) -> None:
        await self._stream.aclose()


class EditedLines:
    """Lines typed in a terminal with editing and a history (see the module docstring)."""

    edits = True

    def __init__(self, history: Path | None) -> None:
        # No cursor position requests: a plain prompt needs none, and a terminal (or a pty in a test)
        # that does not answer them gets a warning printed after a wait.
        os.environ.setdefault("PROMPT_TOOLKIT_NO_CPR", "1")

        kept: History = InMemoryHistory()
        if history is not None:
            try:
                history.parent.mkdir(parents=True, exist_ok=True)
                os.close(os.open(history, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))  # the user's only
                kept = FileHistory(str(history))
            except OSError:
                pass  # no history file: the chat still edits lines, and remembers them until it ends
        self._history = _Remembered(kept)
        self._prompt = "> "
        self._above = ""
        self._steer = False
        self.on_ctrl_c: Callable[[], bool] | None = None
        """The chat's say on Ctrl-C (True: it took it, to cancel a turn); else the line is cleared, or
        an empty one ends with KeyboardInterrupt."""
        keys = KeyBindings()

        @keys.add("c-c")
        def _ctrl_c(event: KeyPressEvent) -> None:
            if self.on_ctrl_c is not None and self.on_ctrl_c():
                return
            if event.current_buffer.text:
                event.current_buffer.reset()
            else:
                event.app.exit(exception=KeyboardInterrupt())

        @keys.add("escape", "enter")
        def _steer(event: KeyPressEvent) -> None:
            self._steer = True
            event.current_buffer.validate_and_handle()

        self._session: PromptSession[str] = PromptSession(
            lambda: ANSI(self._above + self._prompt), history=self._history, key_bindings=keys
        )

    def retitle(self, prompt: str, *, remember: bool = True) -> None:
        """Change the prompt of the line being typed (a question asked meanwhile reads its answer)."""
        self._prompt = prompt
        self._history.skip = not remember
        self._redraw()

    def show(self, text: str) -> None:
        """What is in progress (the reply's last block, running tools' last lines), drawn above the
        prompt and redrawn in place; finished output is printed above it (``printing_above``)."""
        if text != self._above:
            self._above = text
            self._redraw()

    def _redraw(self) -> None:
        app = self._session.app
        if app.is_running:
            app.invalidate()

    def printing_above(self) -> AbstractContextManager[object]:
        """While it is entered, what is written to ``sys.stdout`` is printed above the line being typed."""
        from prompt_toolkit.patch_stdout import patch_stdout

        return patch_stdout(raw=True)

    async def readline(self, prompt: str = "", *, remember: bool = True) -> str | None:
        self.retitle(prompt, remember=remember)
        self._steer = False
        try:
            # handle_sigint=False: prompt_toolkit would take SIGINT from the chat and not give it back.
            line = await self._session.prompt_async(handle_sigint=False)
        except EOFError:
            return None
        return STEER + line if self._steer and line.strip() else line

    async def aclose(self) -> None:
        pass


class _Remembered(History):
    """A history that leaves out the lines typed while ``skip`` is set (answers to questions)."""

    def __init__(self, kept: History) -> None:
        super().__init__()
        self._kept = kept
        self.skip = False

    def load_history_strings(self) -> Iterable[str]:
        return self._kept.load_history_strings()

    def store_string(self, string: str) -> None:
        self._kept.store_string(string)

    def append_string(self, string: str) -> None:
        if not self.skip:
            super().append_string(string)


def open_terminal_input(history: Path | None = None) -> Lines:
    """Edited lines when stdin and stdout are a terminal (``history``: the file of past prompts), else a
    reader of a duplicate of fd 0 (the duplicate keeps fd 0 usable for everything else)."""
    if os.isatty(0) and os.isatty(1) and os.environ.get("TERM") != "dumb":
        return EditedLines(history)
    return LineReader(FdReceiveStream(os.dup(0)))
