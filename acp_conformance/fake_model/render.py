"""One scripted model turn rendered in each provider's exact wire format, streamed or not.

The envelopes follow real captures (``../shared/reference/providers-wire.md``): Chat Completions chunks with
the role delta, content deltas, a finish chunk, a usage chunk with ``choices: []`` and ``data: [DONE]``;
Responses ``response.created`` … ``response.completed`` with the items repeated in ``output_item.done``;
Anthropic ``event:``/``data:`` records from ``message_start`` to ``message_stop`` (a ``ping`` included);
Gemini ``streamGenerateContent?alt=sse`` candidates with ``usageMetadata``.

A stream is returned as ``(head, tail)``: ``head`` holds everything up to the last content delta, ``tail`` the
finish records. A stalled turn sends ``head`` and then holds the connection open (``Stall``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ._anthropic import anthropic_json, anthropic_stream
from ._gemini import gemini_json, gemini_stream
from ._openai import chat_json, chat_stream, responses_json, responses_stream
from .turn import ToolCall, Turn, split_text

__all__ = ["API_NAMES", "ToolCall", "Turn", "render_json", "render_stream", "split_text"]

API_NAMES = ("chat", "responses", "anthropic", "gemini")

_STREAMS: dict[str, Callable[[Turn, str], tuple[list[bytes], list[bytes]]]] = {
    "chat": chat_stream,
    "responses": responses_stream,
    "anthropic": anthropic_stream,
    "gemini": gemini_stream,
}
_JSON: dict[str, Callable[[Turn, str], dict[str, Any]]] = {
    "chat": chat_json,
    "responses": responses_json,
    "anthropic": anthropic_json,
    "gemini": gemini_json,
}


def render_stream(api: str, turn: Turn, model: str) -> tuple[Sequence[bytes], Sequence[bytes]]:
    """``(head, tail)`` SSE records of ``turn`` in ``api``'s format."""
    return _STREAMS[api](turn, model)


def render_json(api: str, turn: Turn, model: str) -> dict[str, Any]:
    """The non-streamed response body of ``turn`` in ``api``'s format."""
    return _JSON[api](turn, model)
