"""The shared part of the file tools: root, file system, journal, typed input and one failure prologue.

A file tool subclasses ``FileTool[Input]``, names its input dataclass (``Input``) and implements ``run``.
``call`` parses the input and turns the refusals every tool shares (a path outside the root, a file too
big, a read or write the file system refused) into the error result ``"<tool>: <why>"``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import anyio
import anyio.to_thread

from .._call import Call
from .._tools import Hints, Result, ToolSpec
from ..beneath import Place
from ._fs import FileSystem, LocalFileSystem, stat_place
from ._inputs import input_schema, parse_input
from ._journal import Journal
from ._probe import human_size
from ._root import PathError, Root
from ._values import ToolKind, ToolMeta

__all__ = ["MAX_EDIT_BYTES", "PATH_ARG", "READ_HINTS", "WRITE_HINTS", "FileTool", "Refused", "in_thread"]

InputT = TypeVar("InputT")
T = TypeVar("T")

MAX_EDIT_BYTES = 10 * 1024 * 1024  # a file read whole to edit it (or to show its diff) is at most this big
PATH_ARG = "A path relative to the project root, or absolute inside it"
READ_HINTS = Hints(read_only=True, idempotent=True)
WRITE_HINTS = Hints(destructive=False, idempotent=False)


class Refused(Exception):
    """A tool refuses the call; the message (after ``"<tool>: "``) tells the model why."""


class FileTool(Generic[InputT]):
    """Base of the file tools (see the module docstring)."""

    name: ClassVar[str]
    description: ClassVar[str]
    kind: ClassVar[ToolKind]  # read, edit, search
    hints: ClassVar[Hints]
    Input: ClassVar[type[Any]]

    def __init__(self, root: Root, *, fs: FileSystem | None = None, journal: Journal | None = None) -> None:
        self.root = root
        self.disk = LocalFileSystem(root)  # deletions, and the reads that size or sniff a file first
        self.fs: FileSystem = fs or self.disk
        self.journal = journal

    def spec(self) -> ToolSpec:
        return ToolSpec(
            self.name, self.description, input_schema(self.Input), self.hints, meta=ToolMeta(kind=self.kind)
        )

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        try:
            args: InputT = parse_input(self.Input, input)
        except TypeError as e:
            return Result.failure(f"{self.name}: invalid input: {e}")
        try:
            return await self.run(args, call)
        except (PathError, Refused) as e:
            return Result.failure(f"{self.name}: {e}")
        except OSError as e:  # a file system (the editor's, or the disk) refused a read or write
            return Result.failure(f"{self.name}: {e.strerror or e}")

    async def run(self, args: InputT, call: Call) -> Result:
        raise NotImplementedError

    async def resolve(self, path: str) -> Path:
        """The real path of ``path`` inside the root; ``PathError`` (an error result) otherwise."""
        return await self.root.resolve(path)

    def place(self, path: Path) -> Place:
        """The resolved ``path`` beneath its root, to open it without following a symlink."""
        return self.root.place(path)

    async def read_or_none(self, path: Path) -> str | None:
        """The file's text through the file system, None when it does not exist; a file over
        ``MAX_EDIT_BYTES`` on disk is refused rather than read whole."""
        try:
            st = await anyio.to_thread.run_sync(stat_place, self.place(path))
        except (FileNotFoundError, NotADirectoryError):
            st = None
        size = st.st_size if st is not None else 0
        if size > MAX_EDIT_BYTES:
            raise Refused(
                f"{self.root.display(path)} is {human_size(size)}, too big to edit here "
                f"(the limit is {human_size(MAX_EDIT_BYTES)})"
            )
        try:
            return await self.fs.read_text(path)
        except FileNotFoundError:
            return None


async def in_thread(fn: Callable[[Callable[[], bool]], T]) -> T:
    """Run blocking ``fn(stop)`` in a thread; on cancellation ``stop()`` turns true and the wait is abandoned."""
    flag = threading.Event()
    try:
        return await anyio.to_thread.run_sync(fn, flag.is_set, abandon_on_cancel=True)
    finally:
        flag.set()
