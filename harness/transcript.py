"""Transcripts in files: ``JsonlTranscript`` (the conversation) and ``JsonlEvents`` (the event stream).

File format (the ACP session store uses the same), UTF-8, one JSON object per line, each line ended by
``\\n``, append-only:

- ``JsonlTranscript``: each line is one ``Message.to_dict()``:
  ``{"role": "user", "content": [{"type": "text", "text": "hi"}]}``; assistant lines may carry ``id``,
  ``usage``, ``finish`` and ``meta``. ``Message.from_dict`` reads a line back.
- ``JsonlEvents``: each line is one ``event.to_dict()``: ``{"type": "text_delta", "turn": 1,
  "parent": null, "id": "m1", "text": "Hel"}``; ``harness.events.from_dict`` reads a line back.

There is no header line. Blank lines are skipped. A line without its ``\\n`` at the end of the file is a
torn write (the process died mid-append): ``read()`` ignores it and the next ``append()`` truncates it
away first, so the file stays valid. A complete line that is not JSON is corruption and raises
``TranscriptError``. Each append is one write, flushed and fsync'd, in a worker thread; an append with
``sync=False`` is flushed only (it survives a kill of the process, not a power loss) and its writer fsyncs
it later with ``fsync_paths``.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from ._messages import Message
from .atomic import open_private_append
from .events import Event
from .events import from_dict as event_from_dict

__all__ = ["JsonlEvents", "JsonlTranscript", "TranscriptError", "fsync_paths"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_TAIL_CHUNK = 64 * 1024


class TranscriptError(Exception):
    """A transcript file holds a complete line that is not a JSON object: the file was damaged."""


class _JsonlFile:
    """Append-only JSON lines with torn-tail repair; the typed classes wrap it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        # One append at a time per object: concurrent tasks would otherwise interleave their repairs.
        self._lock = anyio.Lock()

    async def append_dicts(self, items: Iterable[dict[str, Any]], *, sync: bool = True) -> None:
        data = b"".join(
            json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode() + b"\n" for item in items
        )
        if not data:
            return
        async with self._lock:
            # Not abandoned on cancel: the thread finishes the write, so a line is never left half done
            # by a cancellation (only by a kill, which the torn-tail repair handles).
            await anyio.to_thread.run_sync(_append, self.path, data, sync)

    async def read(self, decode: Callable[[dict[str, Any]], T]) -> list[T]:
        """Every line, ``decode``d, both in a worker thread: a long session's lines (some 4 us each to
        decode) would otherwise hold the event loop for tens of milliseconds, every other stream with it."""
        path = self.path
        return await anyio.to_thread.run_sync(lambda: [decode(d) for d in _read(path)])


def _append(path: Path, data: bytes, sync: bool = True) -> None:
    created = not path.exists()
    fd = open_private_append(path, os.O_RDWR)  # 0600: a transcript holds the whole conversation
    with os.fdopen(fd, "r+b") as f:
        end = f.seek(0, os.SEEK_END)
        if end > 0:
            f.seek(end - 1)
            if f.read(1) != b"\n":
                cut = _end_of_last_line(f, end)
                log.warning("%s: dropping a torn last line (%d bytes)", path, end - cut)
                f.truncate(cut)
                end = cut
        f.seek(end)
        f.write(data)
        f.flush()
        if sync:
            os.fsync(f.fileno())
    if created and sync:
        _fsync_dir(path.parent)


def _end_of_last_line(f: Any, end: int) -> int:
    """The offset just past the last ``\\n`` before ``end`` (0 when there is none)."""
    pos = end
    while pos > 0:
        start = max(0, pos - _TAIL_CHUNK)
        f.seek(start)
        chunk: bytes = f.read(pos - start)
        i = chunk.rfind(b"\n")
        if i >= 0:
            return start + i + 1
        pos = start
    return 0


def _fsync_dir(directory: Path) -> None:
    # The new file's directory entry must survive a crash too; not every platform can open a directory.
    _fsync_path(directory)


def _fsync_path(path: Path) -> bool:
    """fsync a file or a folder; False when it cannot be opened (gone, or a platform without it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
    return True


def fsync_paths(paths: Iterable[Path]) -> None:
    """fsync each file (one that is gone is skipped) and then each of their folders once: what appends
    with ``sync=False`` and ``write_text_atomic(sync=False)`` left to the page cache (blocking: call it in
    a worker thread)."""
    folders = {path.parent for path in paths if _fsync_path(path)}
    for folder in sorted(folders):
        _fsync_path(folder)


def _read(path: Path) -> list[dict[str, Any]]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    lines = raw.split(b"\n")
    if lines[-1]:
        log.warning("%s: ignoring a torn last line (%d bytes)", path, len(lines[-1]))
    out: list[dict[str, Any]] = []
    for n, line in enumerate(lines[:-1], start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as e:
            raise TranscriptError(f"{path}:{n}: not JSON ({e})") from None
        if not isinstance(item, dict):
            raise TranscriptError(f"{path}:{n}: not a JSON object")
        out.append(item)  # pyright: ignore[reportUnknownArgumentType]
    return out


class JsonlTranscript:
    """The conversation in a file: ``append`` messages, ``read`` them back."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._file = _JsonlFile(path)

    @property
    def path(self) -> Path:
        return self._file.path

    async def append(self, messages: Message | Iterable[Message], *, sync: bool = True) -> None:
        """Append ``messages``; without ``sync`` written and flushed (a kill of the process loses nothing)
        but not fsync'd: the caller fsyncs (``fsync_paths``) once it answered."""
        items = (messages,) if isinstance(messages, Message) else tuple(messages)
        await self._file.append_dicts((m.to_dict() for m in items), sync=sync)

    async def read(self) -> list[Message]:
        return await self._file.read(Message.from_dict)


class JsonlEvents:
    """The event stream in a file: ``append`` events, ``read`` them back typed."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._file = _JsonlFile(path)

    @property
    def path(self) -> Path:
        return self._file.path

    async def append(self, events: Event | Iterable[Event]) -> None:
        items: tuple[Event, ...] = tuple(events) if isinstance(events, Iterable) else (events,)
        await self._file.append_dicts(e.to_dict() for e in items)

    async def read(self) -> list[Event]:
        return await self._file.read(event_from_dict)
