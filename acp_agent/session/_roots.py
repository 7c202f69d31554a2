"""Where a session may work: its ``cwd`` and ``additionalDirectories`` are absolute, existing directories.

``session/new``, ``session/load`` and ``session/resume`` check them before anything is opened; a bad entry
is answered -32602 naming the field (``cwd``, ``additionalDirectories.1``). ``session/list`` only needs its
``cwd`` filter to be absolute: it may name a folder that is gone.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from typing import Final

import anyio.to_thread

from ..protocol.errors import RpcError

__all__ = ["checked_roots", "checked_roots_sync", "list_filter"]

_SHOWN: Final = 200  # characters of a bad path echoed in the error


async def checked_roots(cwd: str, dirs: Sequence[str] | None) -> tuple[str, tuple[str, ...]]:
    """``cwd`` and ``dirs`` normalised; ``RpcError`` (-32602, naming the field) for one that is not an
    absolute, existing directory. The file system is asked in a worker thread."""
    return await anyio.to_thread.run_sync(checked_roots_sync, cwd, tuple(dirs or ()))


def list_filter(cwd: str | None) -> str | None:
    """``session/list``'s ``cwd`` filter, normalised; it must be absolute (it need not exist)."""
    if cwd is None:
        return None
    if not os.path.isabs(cwd):
        raise RpcError.invalid_params("invalid params: cwd: must be an absolute path")
    return os.path.normpath(cwd)


def checked_roots_sync(cwd: str, dirs: Sequence[str]) -> tuple[str, tuple[str, ...]]:
    """``checked_roots``, blocking: for a worker thread that has more file work to do."""
    fields = [("cwd", cwd), *((f"additionalDirectories.{i}", d) for i, d in enumerate(dirs))]
    for name, path in fields:
        if not os.path.isabs(path):
            raise RpcError.invalid_params(f"invalid params: {name}: must be an absolute path")
    for name, path in fields:
        problem = _problem(path)
        if problem is not None:
            raise RpcError.invalid_params(f"invalid params: {name}: {problem}: {_clip(path)}")
    return os.path.normpath(cwd), tuple(os.path.normpath(d) for d in dirs)


def _problem(path: str) -> str | None:
    """Why ``path`` is not a directory a session can use, or None when it is one."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "no such directory"
    except PermissionError:
        return "permission denied"
    except (OSError, ValueError):  # ValueError: a NUL byte, or a lone surrogate
        return "not a usable path"
    return None if stat.S_ISDIR(mode) else "not a directory"


def _clip(path: str) -> str:
    return path if len(path) <= _SHOWN else path[:_SHOWN] + "…"
