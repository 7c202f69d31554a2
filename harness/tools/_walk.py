"""Walking a root for ``glob`` and ``grep``: glob patterns as regexes, confined, skipping tool caches."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path

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
def glob_regex(pattern: str) -> re.Pattern[str]:
    """``*`` (no ``/``), ``?``, ``[...]``, ``**`` (any depth), ``{a,b}`` as a regex over posix paths."""
    return re.compile("(?s:" + _translate(pattern) + r")\Z")


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


def walk_files(root: Root, base: Path, stop: Callable[[], bool]) -> Iterator[tuple[Path, str]]:
    """Files under ``base`` as ``(real path, posix path relative to base)``, sorted per directory.

    Symlinked directories are not followed; symlinked files are yielded only when they resolve inside
    ``root``. Blocking: run it in a thread.
    """
    inside_skipped = any(part in SKIPPED_DIRS for part in base.parts)
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        if stop():
            return
        if not inside_skipped:
            dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        else:
            dirnames.sort()
        here = Path(dirpath)
        for name in sorted(filenames):
            p = here / name
            if p.is_symlink():
                real = Path(os.path.realpath(p))
                if not root.contains(real) or not real.is_file():
                    continue
            yield p, p.relative_to(base).as_posix()
