"""Walking a root for ``glob`` and ``grep``: glob patterns as linear-time regexes, confined, skipping
tool caches and anything that is not a regular file (FIFOs, sockets and devices are never opened)."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path

from ..beneath import Place, open_dir, real_path
from ._fs import stat_place
from ._regex import Regex, compile_regex
from ._root import Root

__all__ = ["SKIPPED_DIRS", "glob_regex", "walk_files"]

# Directories a project search almost never wants; searched only when the search path is inside one.
SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> Regex:
    """``*`` (no ``/``), ``?``, ``[...]``, ``**`` (any depth), ``{a,b}`` as a regex over posix paths
    (RE2: a pattern like ``*a*a*a*a*b`` cannot backtrack). Match it with ``fullmatch``."""
    return compile_regex("(?s:" + _translate(pattern) + ")")


def _translate(pattern: str) -> str:
    i = 0
    out: list[str] = []
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                i += 2
                if i < n and pattern[i] == "/":
                    out.append("(?:.*/)?")
                    i += 1
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = pattern.find("]", i + 2)
            if j < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        elif c == "{":
            j = pattern.find("}", i)
            if j < 0:
                out.append(re.escape(c))
            else:
                alts = pattern[i + 1 : j].split(",")
                out.append("(?:" + "|".join(_translate(a) for a in alts) + ")")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def walk_files(root: Root, base: Path, stop: Callable[[], bool]) -> Iterator[tuple[Path, str, Place]]:
    """Regular files under ``base`` as ``(path, posix path relative to base, where to open it)``, depth
    first, sorted per directory (a directory's files before its subdirectories).

    Each directory is opened beneath the root without following a symlink (``harness.beneath``) and listed
    through its descriptor, so a directory swapped for a symlink mid-walk is skipped, not entered.
    Symlinked directories are not followed; a symlinked file is yielded only when it resolves to a
    regular file inside ``root`` (its place is the target's). FIFOs, sockets and devices are skipped by
    their directory entry, never opened or stat'ed through. Blocking: run it in a thread."""
    inside_skipped = any(part in SKIPPED_DIRS for part in base.parts)
    pending = [root.place(base)]
    while pending:
        if stop():
            return
        here = pending.pop()
        try:
            fd = open_dir(here)
        except OSError:
            continue
        try:
            with os.scandir(fd) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        finally:
            os.close(fd)
        subdirs: list[Place] = []
        here_path = here.path
        for entry in entries:
            place = here.child(entry.name)
            p = here_path / entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if inside_skipped or entry.name not in SKIPPED_DIRS:
                        subdirs.append(place)
                    continue
                if entry.is_symlink():
                    real = real_path(p)
                    if not root.contains(real):
                        continue
                    place = root.place(real)
                    st = stat_place(place)
                    if st is None or not stat.S_ISREG(st.st_mode):
                        continue
                elif not entry.is_file(follow_symlinks=False):
                    continue  # a FIFO, socket or device
            except OSError:
                continue
            yield p, p.relative_to(base).as_posix(), place
        pending.extend(reversed(subdirs))
