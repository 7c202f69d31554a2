"""Finding a program the agent starts by name on its own account (its own ``git``, a hook's shell, an MCP
server's command) where the project cannot supply it.

A name is looked up on ``PATH``, entry by entry. An empty entry (``PATH=/usr/bin:``, a common slip) or a
relative one (``.``, ``node_modules/.bin``) names a folder relative to where the program starts, and the
agent starts these in the project: a ``git`` file a cloned repository ships, or one a sandboxed command
wrote there (it may write files in the project), would run outside the sandbox, unasked, at the next turn.
So those entries are skipped, and so are absolute entries inside the folders the caller names (the
project's), for the same reason, unless such a folder holds the user's home folder (a project opened at
``~`` or ``/``): the user's own tool folders (``~/.local/bin``, ``~/.cargo/bin``) are not the project's for
that. A name holding a ``/`` is a path the user wrote and is taken as given.
"""

from __future__ import annotations

import errno
import os

__all__ = ["absolute_path", "find_program", "require_program"]

_KEPT = 64


class _Finder:
    """``find_program``: the look-up, and where each program was found (``lookups`` counts the searches)."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str | None, tuple[str, ...], str], str] = {}
        self.lookups = 0

    def __call__(self, name: str, path: str | None, outside: tuple[str, ...] = ()) -> str | None:
        """The path of the program ``name`` on ``path`` (a ``PATH`` value; None: the system's default),
        found in its absolute entries that are not within ``outside`` (real paths); None when there is
        none. Blocking (a few ``stat``s). Where a program was found is kept per arguments and home folder;
        a program not found is looked for again next time (the user installs it after the message)."""
        if "/" in name:
            return name
        home = os.path.expanduser("~")
        key = (name, path, outside, home)
        found = self._found.get(key)
        if found is None:
            found = self._search(name, path, outside, home)
            if found is not None:
                if len(self._found) >= _KEPT:
                    self._found.clear()
                self._found[key] = found
        return found

    def cache_clear(self) -> None:
        self._found.clear()

    def _search(self, name: str, path: str | None, outside: tuple[str, ...], home: str) -> str | None:
        self.lookups += 1
        real_home = os.path.realpath(home)
        fenced = [f for f in map(os.path.realpath, outside) if not _within(real_home, f)]
        for entry in (os.defpath if path is None else path).split(os.pathsep):
            if not os.path.isabs(entry):
                continue
            real = os.path.realpath(entry)
            if any(_within(real, folder) for folder in fenced):
                continue
            candidate = os.path.join(entry, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
        return None


find_program = _Finder()


def require_program(name: str, path: str | None, outside: tuple[str, ...] = ()) -> str:
    """``find_program``'s path; ``FileNotFoundError`` saying what was not searched when there is none (a
    program only such an entry supplies). Blocking."""
    found = find_program(name, path, outside)
    if found is None:
        raise FileNotFoundError(
            errno.ENOENT,
            f"{name} was not found on PATH (an empty or relative PATH entry and the project's folders are "
            "not searched)",
            name,
        )
    return found


def absolute_path(path: str | None) -> str | None:
    """``path`` (a ``PATH`` value) without its empty and relative entries: what a child the agent starts gets,
    so that the programs *it* starts by name are not the project's either (``git`` in an allowed
    ``git status``, ``node`` under ``npx``)."""
    if path is None:
        return None
    return os.pathsep.join(entry for entry in path.split(os.pathsep) if os.path.isabs(entry))


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")
