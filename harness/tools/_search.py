"""``glob`` and ``grep``: finding files by name and lines by a regular expression (RE2, in a thread)."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread

from .._call import Call
from .._tools import Result
from ..beneath import Place
from ._filetool import PATH_ARG, READ_HINTS, FileTool, in_thread
from ._fs import open_regular
from ._inputs import arg
from ._probe import SNIFF_BYTES, is_binary, probe
from ._regex import Regex, RegexError, compile_regex
from ._values import GlobValue, GrepMatch, GrepValue
from ._walk import glob_regex, walk_files

__all__ = ["Glob", "Grep"]

MAX_GLOB = 500
MAX_GREP = 200
MAX_GREP_LINE = 300
MAX_GREP_FILE_BYTES = 5 * 1024 * 1024


def _check_pattern(pattern: str) -> str | None:
    if not pattern:
        return "the pattern is empty"
    if pattern.startswith("/") or pattern.startswith("~"):
        return "the pattern must be relative (set `path` to search elsewhere inside the project)"
    if ".." in pattern.split("/"):
        return "the pattern may not contain '..'"
    return None


# --- glob ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GlobInput:
    pattern: str = arg(minLength=1)
    path: str | None = arg(PATH_ARG, default=None)


class Glob(FileTool[GlobInput]):
    """``glob {pattern, path?}``: files under ``path`` (default the root) matching ``pattern``."""

    name = "glob"
    kind = "search"
    hints = READ_HINTS
    Input = GlobInput
    description = (
        f"Find files by name pattern: `*` (within a directory), `**` (any depth), `?`, `[abc]`, `{{a,b}}`, "
        f"relative to `path` (default: the project root). E.g. `**/*.py`. At most {MAX_GLOB} results; "
        "dependency and VCS directories (.git, node_modules, .venv, ...) are skipped unless `path` is inside one."
    )

    async def run(self, args: GlobInput, call: Call) -> Result:
        pattern = args.pattern
        problem = _check_pattern(pattern)
        if problem is not None:
            return Result.failure(f"glob: {problem}")
        base = await self.resolve(args.path or ".")
        found = await anyio.to_thread.run_sync(probe, self.place(base))
        if found.kind != "dir":
            return Result.failure(f"glob: {self.root.display(base)} is not a directory")
        try:
            rx = await anyio.to_thread.run_sync(glob_regex, pattern)
        except RegexError as e:
            return Result.failure(f"glob: the pattern cannot be used: {e}")

        def find(stop: Callable[[], bool]) -> tuple[list[Path], bool]:
            found: list[Path] = []
            for p, rel, _ in walk_files(self.root, base, stop):
                if rx.fullmatch(rel):
                    if len(found) >= MAX_GLOB:
                        return found, True
                    found.append(p)
            return found, False

        files, truncated = await in_thread(find)
        if not files:
            return Result.text(
                f"No files match {pattern!r}.", value=GlobValue(path=str(base), files=[], truncated=False)
            )
        text = "\n".join(self.root.display(p) for p in files)
        if truncated:
            text += f"\n[only the first {MAX_GLOB} matches; narrow the pattern]"
        return Result.text(
            text, value=GlobValue(path=str(base), files=[str(p) for p in files], truncated=truncated)
        )


# --- grep ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GrepInput:
    pattern: str = arg(minLength=1)
    path: str | None = arg(PATH_ARG, default=None)
    glob: str | None = arg(default=None)
    case_sensitive: bool = arg(default=True)


class Grep(FileTool[GrepInput]):
    """``grep {pattern, path?, glob?, case_sensitive?}``: a regex search over text files."""

    name = "grep"
    kind = "search"
    hints = READ_HINTS
    Input = GrepInput
    description = (
        f"Search file contents with a regular expression (RE2 syntax: like Python's, without lookaround "
        f"or backreferences). `path` is a file or directory (default: the project root); `glob` filters "
        f"files (`*.py`, `src/**/*.ts`); case-sensitive unless `case_sensitive` is false. Prints "
        f"`path:line: text`, at most {MAX_GREP} matches; binary files and dependency/VCS directories are "
        "skipped."
    )

    async def run(self, args: GrepInput, call: Call) -> Result:
        compile_ = functools.partial(
            compile_regex, args.pattern, ignore_case=not args.case_sensitive, one_line=True
        )
        try:
            rx = await anyio.to_thread.run_sync(compile_, abandon_on_cancel=True)
        except RegexError as e:
            return Result.failure(f"grep: invalid regular expression: {e}")
        file_glob = args.glob
        if file_glob is not None:
            problem = _check_pattern(file_glob)
            if problem is not None:
                return Result.failure(f"grep: glob: {problem}")
        base = await self.resolve(args.path or ".")
        found = await anyio.to_thread.run_sync(probe, self.place(base))
        if found.kind == "missing":
            return Result.failure(f"grep: {self.root.display(base)} does not exist")
        if found.kind == "other":
            return Result.failure(f"grep: {self.root.display(base)} is not a regular file or directory")
        try:
            g = await anyio.to_thread.run_sync(glob_regex, file_glob) if file_glob else None
        except RegexError as e:
            return Result.failure(f"grep: glob: the pattern cannot be used: {e}")
        g_name_only = file_glob is not None and "/" not in file_glob

        def search(stop: Callable[[], bool]) -> tuple[list[GrepMatch], bool]:
            hits: list[GrepMatch] = []
            one = [(base, base.name, self.place(base))]
            files = one if found.kind != "dir" else walk_files(self.root, base, stop)
            for p, rel, place in files:
                if stop():
                    break
                if g is not None and not g.fullmatch(p.name if g_name_only else rel):
                    continue
                if _grep_file(p, place, rx, hits, stop):
                    return hits, True
            return hits, False

        hits, truncated = await in_thread(search)
        value = GrepValue(path=str(base), matches=hits, truncated=truncated)
        if not hits:
            return Result.text("No matches.", value=value)
        rows = [f"{self.root.display(Path(h['path']))}:{h['line']}: {h['text']}" for h in hits]
        if truncated:
            rows.append(f"[only the first {MAX_GREP} matches; narrow the pattern, path or glob]")
        return Result.text("\n".join(rows), value=value)


def _grep_file(path: Path, place: Place, rx: Regex, hits: list[GrepMatch], stop: Callable[[], bool]) -> bool:
    """Append ``path``'s matching lines to ``hits``; True when the cap was reached.

    One RE2 search over the whole file per matching line (``rx`` never matches across a newline), not
    one Python call per line."""
    try:
        with open_regular(place) as f:
            if os.fstat(f.fileno()).st_size > MAX_GREP_FILE_BYTES:
                return False
            data = f.read(MAX_GREP_FILE_BYTES + 1)
    except OSError:
        return False
    if len(data) > MAX_GREP_FILE_BYTES or is_binary(data[:SNIFF_BYTES]):
        return False
    phantom = len(data) if not data or data.endswith(b"\n") else -1  # the "line" after a final newline
    pos, line, counted = 0, 1, 0
    while pos <= len(data) and (m := rx.search(data, pos)) is not None:
        start = m.start()
        if start == phantom:
            break
        line += data.count(b"\n", counted, start)
        counted = start
        line_start = data.rfind(b"\n", 0, start) + 1
        line_end = data.find(b"\n", start)
        line_end = len(data) if line_end < 0 else line_end
        if len(hits) >= MAX_GREP:
            return True
        text = data[line_start:line_end].decode("utf-8", errors="replace").removesuffix("\r")
        text = text if len(text) <= MAX_GREP_LINE else text[:MAX_GREP_LINE] + " [...]"
        hits.append(GrepMatch(path=str(path), line=line, text=text))
        pos = line_end + 1
        if stop():
            break
    return stop()
