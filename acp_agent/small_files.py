"""The one reader of the agent's small configuration files: ``config.toml``, ``mcp.json`` and the permission
files (``permissions.jsonl``), the project's and the user's.

What it trusts: a file the project ships (``beneath`` its folder) is read only when it is a regular file
reached from that folder without following any symlink: not the file, not ``.acp-agent`` (``harness.beneath``'s
``open_regular``, the file tools' own opener). A link could make the agent read (and show, and act on)
a file the project does not hold, and it can be swapped between a check and the read. The user's own
files follow the user's own symlinks when ``follow`` is set (dotfile managers link ``config.toml``);
either way a FIFO is never waited on (``O_NONBLOCK``), a device or a folder is never read, and at most
``limit`` bytes are. Standard library only (it runs before ``initialize`` is answered); the beneath-opener
is imported only when a project file is read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["UnreadableFile", "kind_phrase", "read_small_file", "written_inside"]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class UnreadableFile(Exception):
    """Why a file cannot be used: ``str()`` is a phrase that follows the path (``"is a symbolic link
    ..."``)."""


def read_small_file(
    path: Path, limit: int, *, beneath: Path | None = None, follow: bool = False
) -> bytes | None:
    """``path``'s bytes; None when it does not exist; ``UnreadableFile`` when it is not a regular file (a
    symbolic link, FIFO, socket, device or folder), over ``limit`` bytes, or cannot be read. Blocking.

    ``beneath``: the project folder the file came with (absolute): no symlink is followed from it down.
    Otherwise (the user's own file): the last component is a symlink followed only when ``follow``."""
    if beneath is not None:
        top = Path(os.path.realpath(beneath))
        path = Path(os.path.normpath(path))
        for base in (Path(os.path.normpath(beneath)), top):  # the folder as written, or its real path
            if path.is_relative_to(base):
                return _read_beneath(top / path.relative_to(base), top, limit)
    flags = os.O_RDONLY | os.O_NONBLOCK | _O_CLOEXEC | (0 if follow else _O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnreadableFile(_link_phrase(path, None)) from None
        raise UnreadableFile(f"cannot be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        return _read(f.fileno(), limit)


def _read_beneath(path: Path, top: Path, limit: int) -> bytes | None:
    from harness.beneath import BeneathError, NotRegularFileError, Place, open_regular

    try:
        with open_regular(Place.of(path, [top])) as f:
            return _read(f.fileno(), limit)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise UnreadableFile("cannot be opened (a folder on its way is not a folder)") from None
    except BeneathError:
        raise UnreadableFile(_link_phrase(path, top)) from None
    except NotRegularFileError:
        raise UnreadableFile(_kind_phrase(path)) from None
    except OSError as exc:
        raise UnreadableFile(f"cannot be opened ({exc.strerror})") from None


def _read(fd: int, limit: int) -> bytes:
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(_kind_phrase(None, info.st_mode))
        if info.st_size > limit:
            raise UnreadableFile(f"is larger than {limit // 1024} KiB")
        chunks: list[bytes] = []
        size = 0
        while size <= limit and (chunk := os.read(fd, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise UnreadableFile(f"cannot be read ({exc.strerror})") from None
    if size > limit:  # it grew while read
        raise UnreadableFile(f"is larger than {limit // 1024} KiB")
    return b"".join(chunks)


def _link_phrase(path: Path, top: Path | None) -> str:
    """Which component is the symbolic link (the file itself, or a folder such as ``.acp-agent``), and
    where it points."""
    parts = path.relative_to(top).parts if top is not None else (path.name,)
    base = top if top is not None else path.parent
    for i in range(len(parts)):
        here = base.joinpath(*parts[: i + 1])
        try:
            target = os.readlink(here)
        except OSError:
            continue
        if i == len(parts) - 1:
            return f"is a symbolic link (to {target}), which is not followed"
        return f"is in {parts[i]}, a symbolic link (to {target}), which is not followed"
    return "has a symbolic link on its way, which is not followed"


def _kind_phrase(path: Path | None, mode: int | None = None) -> str:
    if mode is None and path is not None:
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            mode = 0
    return kind_phrase(mode or 0)


def kind_phrase(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is that makes it no regular file, as a phrase after its path."""
    for test, kind in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return f"is {kind}, not a regular file"
    return "is not a regular file"


def written_inside(path: Path, root: Path) -> bool:
    """Whether ``path`` as written (normalised, no link followed) lies inside ``root``: a file the project
    placed there, even when a link makes it lead out (the reader then refuses it)."""
    return os.path.normpath(path).startswith(os.path.normpath(root).rstrip("/") + "/")
