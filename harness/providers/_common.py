"""Pieces the providers share: stream records and a call's JSON input parsed, token counts read, image data
URLs, the continued text of a Resume, think-tag splitting."""

from __future__ import annotations

import json
from typing import Any, cast

from pydantic_core import from_json

from .._errors import ModelError, UnsupportedOptionError
from .._kinds import ErrorKind, Role
from .._messages import Image, Message, Reasoning, Text, ToolCall
from ..model import Delta, Prompt, ReasoningChunk, TextChunk

__all__ = [
    "FALLBACK",
    "ThinkSplitter",
    "continued_text",
    "count",
    "image_url",
    "obj",
    "parse_input",
    "stream_record",
]

FALLBACK = "fall back to appending the edit as a finished assistant message and asking for the next one"
"""What a provider that cannot continue a Resume tells the host to do instead."""


def obj(value: object) -> dict[str, Any]:
    """A JSON object as a typed dict; anything else as an empty one."""
    # Not typing.cast: this runs several times per streamed record, and cast is a call.
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def stream_record(data: str, base_url: str) -> dict[str, Any]:
    """One streamed JSON record; a record that is not JSON is the transport's failure."""
    try:
        # pydantic_core's parser (jiter) takes a third of json.loads's time on a stream record, which is
        # parsed once per streamed delta; json.loads has the last word (it takes lone surrogate escapes).
        return obj(from_json(data))
    except ValueError:
        pass
    try:
        return obj(json.loads(data))
    except ValueError:
        raise ModelError(
            f"model endpoint {base_url} sent a stream record that is not JSON; the server or a proxy garbled the stream",
            ErrorKind.TRANSPORT_ERROR,
        ) from None


def count(value: Any) -> int | None:
    """A token count as the wire gives it; anything but a number is unknown."""
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def parse_input(raw: str) -> dict[str, Any] | None:
    """The call's input from its streamed JSON; ``{}`` for no arguments, None when it does not parse."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def image_url(image: Image) -> str:
    if image.url is not None:
        return image.url
    return f"data:{image.media_type};base64,{image.data or ''}"


def continued_text(prompt: Prompt, provider: str, fallback: str) -> str:
    """The text of the assistant message a Resume extends; misuse when there is none or it holds calls."""
    if not prompt.messages or prompt.messages[-1].role is not Role.ASSISTANT:
        raise UnsupportedOptionError(f"{provider}: continue_ needs an assistant message last; {fallback}")
    last: Message = prompt.messages[-1]
    if any(isinstance(p, ToolCall) for p in last.parts):
        raise UnsupportedOptionError(
            f"{provider} cannot continue a message that ends with tool calls; {fallback}"
        )
    return "".join(p.text for p in last.parts if isinstance(p, Text))


def drop_reasoning(message: Message) -> Message:
    return Message(message.role, tuple(p for p in message.parts if not isinstance(p, Reasoning)), message.id)


_OPEN = "<think>"
_CLOSE = "</think>"


class ThinkSplitter:
    """Routes a leading ``<think>…</think>`` in streamed content to reasoning (templates without a parser)."""

    __slots__ = ("_buf", "_state")

    def __init__(self) -> None:
        self._state = 0  # 0 undecided, 1 inside think, 2 plain text
        self._buf = ""

    @property
    def passing(self) -> bool:
        """Decided that the content is plain text: every later piece passes as it is."""
        return self._state == 2

    def feed(self, text: str) -> list[Delta]:
        if self._state == 2:
            return [TextChunk(text)]
        self._buf += text
        out: list[Delta] = []
        if self._state == 0:
            stripped = self._buf.lstrip()
            if len(stripped) < len(_OPEN) and _OPEN.startswith(stripped):
                return out
            if not stripped.startswith(_OPEN):
                self._state = 2
                buf, self._buf = self._buf, ""
                return [TextChunk(buf)]
            self._state = 1
            self._buf = stripped[len(_OPEN) :]
        # inside think: emit all but a tail that may be the start of the closing tag
        end = self._buf.find(_CLOSE)
        if end >= 0:
            if end:
                out.append(ReasoningChunk(self._buf[:end]))
            rest = self._buf[end + len(_CLOSE) :].lstrip("\n")
            self._buf = ""
            self._state = 2
            if rest:
                out.append(TextChunk(rest))
            return out
        keep = 0
        for k in range(min(len(_CLOSE) - 1, len(self._buf)), 0, -1):
            if _CLOSE.startswith(self._buf[-k:]):
                keep = k
                break
        emit = self._buf[: len(self._buf) - keep]
        self._buf = self._buf[len(self._buf) - keep :]
        if emit:
            out.append(ReasoningChunk(emit))
        return out

    def flush(self) -> list[Delta]:
        buf, self._buf = self._buf, ""
        if not buf:
            return []
        return [ReasoningChunk(buf)] if self._state == 1 else [TextChunk(buf)]
