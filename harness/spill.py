"""``Spill``: a tool output too long for the model goes whole into a file the model can read back.

Past a budget (``max_chars``, and ``share`` of the context window at four characters a token), the model
gets the start and the end of the output and the path of a file in ``folder`` (the session's folder)
holding all of it. ``read_file`` (offset, limit) and ``grep`` calls for a path inside ``folder`` are served
here, read-only, by tools confined to that folder (they need no approval: the agent wrote the files); any
other path goes to the tools as usual. The shell keeps its own head and tail and hands the whole output
to ``keep`` (``Shell(spill=...)``). Put ``Spill`` outside the secrets middleware, so what it writes is
redacted. The folder lives and dies with the session: the application removes it with the session.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import anyio.to_thread

from ._call import Call
from ._messages import Text, ToolCall
from ._tools import Result
from .middleware import NextTool
from .tools import Grep, ReadFile, Root

__all__ = ["Spill"]

log = logging.getLogger("harness.run")

_SAFE = re.compile(r"[^A-Za-z0-9_.-]")
NOTE = (
    "[... {cut:,} characters cut; the whole output ({total:,} characters) is in {path}: "
    "read it with read_file (offset, limit) or search it with grep ...]"
)


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", errors="replace", newline="") as f:
        f.write(text)
    return path


class Spill:
    """See the module docstring. ``window`` gives the model's context window now (None: unknown)."""

    def __init__(
        self,
        folder: Path,
        *,
        max_chars: int = 30_000,
        share: float = 0.25,
        window: Callable[[], int | None] | None = None,
    ) -> None:
        self.folder = folder
        self.max_chars = max_chars
        self.share = share
        self._window = window
        self._count = 0

    def budget(self) -> int:
        """The characters of one output the model is sent whole."""
        window = self._window() if self._window is not None else None
        if window is None:
            return self.max_chars
        return max(2_000, min(self.max_chars, int(window * 4 * self.share)))

    async def keep(self, call_id: str, text: str) -> Path:
        """Write ``text`` (a whole output, already redacted) to a new file of the folder; its path."""
        self._count += 1
        name = f"{self._count:04d}-{_SAFE.sub('_', call_id)[:64]}.txt"
        return await anyio.to_thread.run_sync(_write, self.folder, name, text)

    def cut(self, text: str, path: Path, total: int | None = None) -> str:
        """``text``'s start and end around the note naming ``path`` (which holds ``total`` characters)."""
        half = max(500, self.budget() // 2)
        total = total or len(text)
        note = NOTE.format(cut=total - 2 * half, total=total, path=path)
        return f"{text[:half]}\n{note}\n{text[-half:]}"

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        served = await self._serve(call, context)
        if served is not None:
            return served
        result = await next(call, context)
        texts = [p for p in result.content if isinstance(p, Text)]
        whole = "".join(p.text for p in texts)
        if len(whole) <= self.budget() or len(texts) != len(result.content):
            return result  # short, or mixed with images (which are kept as they are)
        kept = result.meta.get("spilled")
        if isinstance(kept, str):  # the tool kept the whole already (the shell): cut to the budget only
            text = self.cut(whole, Path(kept), total=int(result.meta.get("spilled_chars") or len(whole)))
            return replace(result, content=(Text(text),))
        try:
            path = await self.keep(call.id, whole)
        except OSError as e:
            log.warning("could not keep a long output: %s", e)
            return result
        log.info("%s: a %d-character output kept in %s", call.name, len(whole), path)
        meta = {**result.meta, "spilled": str(path), "spilled_chars": len(whole)}
        return replace(result, content=(Text(self.cut(whole, path)),), meta=meta)

    async def _serve(self, call: ToolCall, context: Call) -> Result | None:
        """A read_file or grep of the folder, answered by a tool confined to it; None for anything else."""
        if call.name not in ("read_file", "grep"):
            return None
        path = call.input.get("path")
        if not isinstance(path, str) or not path:
            return None
        if not os.path.isabs(path):
            return None
        folder, real = await anyio.to_thread.run_sync(
            lambda: (os.path.realpath(self.folder), os.path.realpath(path))
        )
        if real != folder and not real.startswith(folder + os.sep):
            return None

        tool = ReadFile(Root([folder])) if call.name == "read_file" else Grep(Root([folder]))
        return await tool.call(dict(call.input), context)
