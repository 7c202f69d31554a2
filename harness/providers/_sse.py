"""Incremental server-sent-events parser: bytes in, ``(event, data)`` records out.

Robust to records and UTF-8 sequences split across reads, ``data:`` with or without the space,
comment lines (keep-alives), and LF, CRLF or CR line endings. Lines are split as bytes and decoded
whole, so a multi-byte character cut by a read boundary is never decoded in halves.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["SseEvent", "SseParser"]


class SseEvent(NamedTuple):
    """One record: ``event`` is ``"message"`` when the stream names none; data lines joined with LF.
    (A named tuple: made once per streamed delta, at a third of a frozen dataclass's cost.)"""

    event: str
    data: str


class SseParser:
    """Feed chunks with ``feed``; each call returns the records completed by that chunk."""

    __slots__ = ("_buf", "_data", "_event", "_has_data", "_pending_cr")

    def __init__(self) -> None:
        self._buf = b""
        self._pending_cr = False
        self._event = ""
        self._data: list[str] = []
        self._has_data = False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        if self._pending_cr:
            # A CR ended the previous chunk: a LF starting this one belongs to the same line end.
            self._pending_cr = False
            if chunk.startswith(b"\n"):
                chunk = chunk[1:]
        if b"\r" in chunk:
            if chunk.endswith(b"\r"):
                self._pending_cr = True
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buf = self._buf + chunk if self._buf else chunk
        if b"\n" not in buf:
            self._buf = buf
            return []
        lines = buf.split(b"\n")
        self._buf = lines.pop()
        out: list[SseEvent] = []
        for raw in lines:
            if not raw:
                if self._has_data:
                    out.append(SseEvent(self._event or "message", "\n".join(self._data)))
                self._event = ""
                self._data = []
                self._has_data = False
                continue
            if raw.startswith(b"data: "):  # the usual line, read without splitting it again
                self._data.append(raw[6:].decode("utf-8", "replace"))
                self._has_data = True
                continue
            if raw[0] == 0x3A:  # ":" comment / keep-alive
                continue
            line = raw.decode("utf-8", "replace")
            name, sep, value = line.partition(":")
            if sep and value.startswith(" "):
                value = value[1:]
            if name == "data":
                self._data.append(value)
                self._has_data = True
            elif name == "event":
                self._event = value
            # id, retry and unknown fields are ignored
        return out

    def flush(self) -> list[SseEvent]:
        """At end of stream: a record the server did not terminate with a blank line still counts
        when its last line was complete; a half line is dropped."""
        out: list[SseEvent] = []
        if self._has_data:
            out.append(SseEvent(self._event or "message", "\n".join(self._data)))
        self._buf = b""
        self._event = ""
        self._data = []
        self._has_data = False
        return out
