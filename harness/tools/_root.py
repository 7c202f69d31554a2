"""``Root``: the directories the file and shell tools may touch, and path confinement."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import anyio.to_thread

from .._errors import HarnessUsageError
from ..beneath import Place, real_path

__all__ = ["PathError", "Root"]


class PathError(Exception):
    """A path the tools refuse (outside the roots, through a symlink that leads out, malformed)."""


class Root:
    """All tool paths are confined to ``paths``; relative paths resolve against the first one.

    Confinement is checked on the real path (``os.path.realpath``), so ``..`` and symlinks that lead out
    of every root are refused, while symlinks that stay inside are followed. That is the check; the use
    opens the real path beneath its root with no symlink followed (``place``, ``harness.beneath``), so what
    changed in between is refused rather than followed.
    """

    __slots__ = ("_display", "_paths")

    def __init__(self, paths: Sequence[Path | str]) -> None:
        if isinstance(paths, str | Path):
            raise HarnessUsageError("Root takes a sequence of paths, e.g. Root([cwd])")
        if not paths:
            raise HarnessUsageError("Root needs at least one directory")
        resolved: list[Path] = []
        for p in paths:
            path = Path(p)
            if not path.is_absolute():
                raise HarnessUsageError(f"Root paths must be absolute, got {str(p)!r}")
            resolved.append(Path(os.path.realpath(path)))
        self._paths: tuple[Path, ...] = tuple(resolved)
        self._display = ", ".join(str(p) for p in self._paths)

    @property
    def paths(self) -> tuple[Path, ...]:
        return self._paths

    @property
    def first(self) -> Path:
        return self._paths[0]

    def contains(self, path: Path) -> bool:
        """Whether the already-resolved absolute ``path`` lies in one of the roots."""
        return any(path == r or path.is_relative_to(r) for r in self._paths)

    def resolve_sync(self, path: str) -> Path:
        """The real absolute path of ``path``, or ``PathError`` when it is not inside a root. Blocking."""
        if not isinstance(path, str) or not path.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise PathError("empty path")
        if "\x00" in path:
            raise PathError("path contains a NUL byte")
        given = Path(path)
        full = given if given.is_absolute() else self.first / given
        try:
            real = real_path(full)
        except OSError:
            raise PathError(
                f"{path!r} changed while it was being checked (a link on the way was replaced meanwhile)"
            ) from None
        if not self.contains(real):
            lexical = Path(os.path.normpath(full))
            how = " through a symlink" if self.contains(lexical) else ""
            why = "leads out of" if how else "is outside"
            raise PathError(f"{path!r} {why} the allowed directories ({self._display}){how}")
        return real

    async def resolve(self, path: str) -> Path:
        return await anyio.to_thread.run_sync(self.resolve_sync, path)

    def place(self, path: Path) -> Place:
        """The resolved ``path`` beneath the first root holding it, for opening it without following a
        symlink (``harness.beneath``); ``BeneathError`` when no root holds it."""
        return Place.of(path, self._paths)

    def display(self, path: Path) -> str:
        """``path`` relative to the first root containing it (for the model), else absolute."""
        for r in self._paths:
            if path == r:
                return "."
            if path.is_relative_to(r):
                return path.relative_to(r).as_posix()
        return str(path)

    def __repr__(self) -> str:
        return f"Root({[str(p) for p in self._paths]!r})"
