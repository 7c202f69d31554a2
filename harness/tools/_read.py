"""``read_file`` and ``list_dir``: reading a file's lines (bounded in memory) and a directory's entries."""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio.to_thread

from .._call import Call
from .._tools import Result
from ..beneath import Place, open_dir, real_path
from ._filetool import PATH_ARG, READ_HINTS, FileTool, in_thread
from ._fs import open_regular
from ._inputs import arg
from ._probe import human_size, probe
from ._values import DirEntry, ListValue, ReadValue

__all__ = ["ListDir", "ReadFile"]

READ_LINES = 2000  # default limit of read_file, in lines
MAX_LINE_CHARS = 2000  # longer lines are cut (minified files)
MAX_READ_CHARS = 100_000  # output cap of one read_file
BIG_FILE_BYTES = 10 * 1024 * 1024  # above this a read streams the window from disk instead of reading all
CHUNK_BYTES = 1 << 20  # what a streamed read holds at once
MAX_LIST = 1000


@dataclass(frozen=True, slots=True)
class ReadInput:
    path: str = arg(PATH_ARG)
    offset: int = arg("First line to read, 1-based", default=1, minimum=1)
    limit: int = arg("How many lines to read", default=READ_LINES, minimum=1)


@dataclass(frozen=True, slots=True)
class _Line:
    """A line to show: its text (perhaps only the head of it) and its full length in characters."""

    text: str
    chars: int


class ReadFile(FileTool[ReadInput]):
    """``read_file {path, offset?, limit?}``: lines numbered like ``cat -n``; binary files described."""

    name = "read_file"
    kind = "read"
    hints = READ_HINTS
    Input = ReadInput
    description = (
        f"Read a text file. Lines are numbered like `cat -n`. `offset` is the first line (1-based), "
        f"`limit` the number of lines (default {READ_LINES}); long lines and long outputs are cut and "
        "the output says so. Binary files are described, not shown."
    )

    async def run(self, args: ReadInput, call: Call) -> Result:
        path = await self.resolve(args.path)
        offset, limit = args.offset, args.limit
        place = self.place(path)
        found = await anyio.to_thread.run_sync(probe, place)
        shown = self.root.display(path)
        if found.kind == "missing":
            return Result.failure(f"read_file: {shown} does not exist")
        if found.kind == "dir":
            return Result.failure(f"read_file: {shown} is a directory; use list_dir")
        if found.kind == "other":
            return Result.failure(f"read_file: {shown} is not a regular file")
        if found.kind == "binary":
            return Result.text(
                f"{shown}: binary file, {found.mime}, {human_size(found.size)}; not shown.",
                value=ReadValue(path=str(path), line=1, binary=True, size=found.size, type=found.mime),
            )
        if found.size > BIG_FILE_BYTES:
            window, total = await in_thread(lambda stop: _read_window(place, offset, limit, stop))
        else:
            try:
                text = await self.fs.read_text(path)
            except FileNotFoundError:
                return Result.failure(f"read_file: {shown} does not exist")
            except (OSError, UnicodeError) as e:
                return Result.failure(f"read_file: cannot read {shown}: {e}")
            lines = _lines_of(text)
            total = len(lines)
            window = [_Line(line, len(line)) for line in lines[offset - 1 : offset - 1 + limit]]
        return _render_read(path, shown, window, offset, total)


def _lines_of(text: str) -> list[str]:
    """Lines split at ``\\n`` (a ``\\r`` before it dropped), as editors and ``grep`` count them."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _read_window(place: Place, offset: int, limit: int, stop: Callable[[], bool]) -> tuple[list[_Line], int]:
    """Lines ``offset .. offset+limit-1`` of a big file and its line count, holding at most one chunk and
    the head of each shown line in memory, whatever the line lengths (a file without newlines too)."""
    out: list[_Line] = []
    total = 0  # lines ended by a newline so far
    last = offset + limit - 1
    tail = False  # the file goes on after its last newline
    line: _LineReader | None = None  # the shown line being read
    with open_regular(place) as f:
        while chunk := f.read(CHUNK_BYTES):
            if stop():
                break
            start = 0
            while start < len(chunk):
                number = total + 1  # the line that ``start`` is in
                if number > last or (number < offset and total + chunk.count(b"\n", start) < offset - 1):
                    total += chunk.count(b"\n", start)  # nothing left in this chunk to show
                    break
                end = chunk.find(b"\n", start)
                if number >= offset:
                    line = line or _LineReader()
                    line.feed(chunk[start : end if end >= 0 else len(chunk)])
                if end < 0:
                    break
                if line is not None:
                    out.append(line.finish())
                    line = None
                total += 1
                start = end + 1
            tail = not chunk.endswith(b"\n")
    if tail:
        total += 1
        if line is not None:
            out.append(line.finish())
    return out, total


class _LineReader:
    """Decodes one line fed in pieces, keeping only its first ``MAX_LINE_CHARS + 1`` characters."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._head: list[str] = []
        self._kept = 0
        self.chars = 0

    def feed(self, data: bytes) -> None:
        text = self._decoder.decode(data)
        self._add(text)

    def _add(self, text: str) -> None:
        self.chars += len(text)
        room = MAX_LINE_CHARS + 1 - self._kept
        if room > 0 and text:
            self._head.append(text[:room])
            self._kept += min(room, len(text))

    def finish(self) -> _Line:
        self._add(self._decoder.decode(b"", final=True))
        text = "".join(self._head)
        if text.endswith("\r") and self.chars == len(text):
            text = text[:-1]
            self.chars -= 1
        return _Line(text, self.chars)


def _render_read(path: Path, shown: str, window: list[_Line], offset: int, total: int) -> Result:
    value = ReadValue(path=str(path), line=offset, lines=0, total_lines=total, truncated=False)
    if total == 0:
        return Result.text(f"{shown} is empty.", value=value)
    if offset > total:
        return Result.failure(f"read_file: offset {offset} is past the end of {shown} ({total} lines)")
    out: list[str] = []
    size = 0
    cut_lines = 0
    count = 0
    for i, line in enumerate(window):
        text = line.text
        if line.chars > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + f" [... line cut, {line.chars - MAX_LINE_CHARS} more characters]"
            cut_lines += 1
        row = f"{offset + i:6}\t{text}"
        if size + len(row) + 1 > MAX_READ_CHARS and out:
            break
        out.append(row)
        size += len(row) + 1
        count += 1
    last = offset + count - 1
    notes: list[str] = []
    if last < total:
        notes.append(f"[lines {offset}-{last} of {total}; read on with offset={last + 1}]")
    if cut_lines:
        notes.append(f"[{cut_lines} long line(s) cut at {MAX_LINE_CHARS} characters]")
    value.update(lines=count, truncated=last < total or bool(cut_lines))
    return Result.text("\n".join(out + notes), value=value)


# --- list_dir ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListInput:
    path: str = arg(PATH_ARG)


class ListDir(FileTool[ListInput]):
    """``list_dir {path}``: a directory's entries, directories marked with ``/``."""

    name = "list_dir"
    kind = "read"
    hints = READ_HINTS
    Input = ListInput
    description = (
        f"List a directory: directories end with `/`, files show their size, symlinks their target. "
        f"At most {MAX_LIST} entries."
    )

    async def run(self, args: ListInput, call: Call) -> Result:
        path = await self.resolve(args.path)
        shown = self.root.display(path)
        try:
            entries = await anyio.to_thread.run_sync(self._list, path, self.place(path))
        except NotADirectoryError:
            return Result.failure(f"list_dir: {shown} is not a directory")
        except FileNotFoundError:
            return Result.failure(f"list_dir: {shown} does not exist")
        except OSError as e:
            return Result.failure(f"list_dir: cannot list {shown}: {e}")
        truncated = len(entries) > MAX_LIST
        entries = entries[:MAX_LIST]
        rows: list[str] = []
        for e in entries:
            if e["type"] == "dir":
                rows.append(f"{e['name']}/")
            elif e["type"] == "symlink":
                rows.append(f"{e['name']} -> {e['target']}")
            elif e["type"] == "file":
                rows.append(f"{e['name']}  ({human_size(e['size'])})")
            else:
                rows.append(e["name"])
        head = f"{shown}/ ({len(entries)} entries{', truncated' if truncated else ''})"
        text = head + ("\n" + "\n".join(rows) if rows else "\n(empty)")
        return Result.text(
            text,
            value=ListValue(path=str(path), entries=cast(list[DirEntry], entries), truncated=truncated),
        )

    def _list(self, path: Path, place: Place) -> list[dict[str, Any]]:
        """The entries of the directory ``place``, opened beneath the root (no symlink followed) and read
        through its descriptor. A symlink's target is only named, never opened."""
        out: list[dict[str, Any]] = []
        fd = open_dir(place)
        try:
            with os.scandir(fd) as it:
                entries = list(it)
            for entry in entries:
                item: dict[str, Any] = {"name": entry.name, "size": 0}
                if entry.is_symlink():
                    item["type"] = "symlink"
                    item["target"] = self._target(path / entry.name)
                elif entry.is_dir(follow_symlinks=False):
                    item["type"] = "dir"
                elif entry.is_file(follow_symlinks=False):
                    item["type"] = "file"
                    item["size"] = entry.stat(follow_symlinks=False).st_size
                else:
                    item["type"] = "other"
                out.append(item)
        finally:
            os.close(fd)
        out.sort(key=lambda e: (e["type"] != "dir", e["name"]))
        return out

    def _target(self, link: Path) -> str:
        """Where a listed symlink leads, for the model (named, never opened)."""
        try:
            real = real_path(link)
        except OSError:
            return "(changing)"
        return self.root.display(real) if self.root.contains(real) else "(outside the project)"
