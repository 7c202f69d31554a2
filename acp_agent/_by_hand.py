"""``acp-harness-agent`` started by hand in a terminal (stdin a TTY): say what this is and what to run
instead, leave on the first end of input (Ctrl-D), and answer typed text with a sentence, not a JSON-RPC parse
error. The first line that looks like a JSON-RPC message is handed to the agent, so ACP can still be typed or
pasted by hand. Standard library only: it runs before the agent is imported.
"""

from __future__ import annotations

import os
import sys
from typing import Final

__all__ = ["BANNER", "TYPED_TEXT", "wait_for_a_message"]

BANNER: Final = (
    "acp-harness-agent: this is the coding agent that editors start; it speaks the Agent Client Protocol\n"
    "(JSON-RPC) on stdin and stdout, and is not meant to be typed at. Instead run:\n"
    "  acp-harness-agent chat     to talk to the agent in this terminal\n"
    "  acp-harness-agent setup    to choose the model (then add the agent to your editor)\n"
    "  acp-harness-agent doctor   to check the configuration and the model\n"
    "Press Ctrl-D to quit, or paste a JSON-RPC message to speak ACP by hand.\n"
)
TYPED_TEXT: Final = (
    "acp-harness-agent: that is not a JSON-RPC message. To chat, quit with Ctrl-D and run "
    "`acp-harness-agent chat`.\n"
)


def _read_line(fd: int) -> bytes | None:
    """One line from the terminal, None at the end of input. (A terminal in canonical mode hands over a
    line per read; Ctrl-D after some text hands that text over without a newline.)"""
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return None
        if not chunk:
            return b"".join(chunks) + b"\n" if chunks else None
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            return b"".join(chunks)


def wait_for_a_message(fd: int = 0) -> bytes | None:
    """Show the banner, then read lines until one looks like a JSON-RPC message (returned, newline
    included) or the input ends (None: the caller exits, on the first Ctrl-D)."""
    sys.stderr.write(BANNER)
    sys.stderr.flush()
    while True:
        line = _read_line(fd)
        if line is None:
            return None
        text = line.strip()
        if text.startswith((b"{", b"[")):
            return line
        if text:
            sys.stderr.write(TYPED_TEXT)
            sys.stderr.flush()
