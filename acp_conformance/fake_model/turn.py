"""A scripted model turn, and the helpers every wire format uses to stream it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CREATED", "ToolCall", "Turn", "sse", "split_text"]

CREATED = 1770933892


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str


@dataclass(frozen=True)
class Turn:
    """What the model says in one response. ``finish``: ``stop`` or ``length`` (``tool`` is implied by
    ``tool_calls``). ``chunks``: how many deltas the text is cut into."""

    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    finish: str = "stop"
    chunks: int = 3
    stall: bool = False
    index: int = 0
    usage: dict[str, int] = field(default_factory=lambda: {"input": 42, "output": 7})


def split_text(text: str, chunks: int) -> list[str]:
    """``text`` in ``chunks`` nearly equal pieces (fewer for short texts; none for empty text)."""
    if not text:
        return []
    n = max(1, min(chunks, len(text)))
    size = -(-len(text) // n)
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse(obj: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(obj, separators=(',', ':'))}\n\n".encode()
