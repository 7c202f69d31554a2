"""``write_text_atomic``: replace a file so a reader (or a crash) sees the old content or the new, never
half of it. Blocking: call it in a worker thread."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["write_text_atomic"]


def write_text_atomic(path: Path, text: str, *, sync: bool = True) -> None:
    """Write ``text`` to a temporary file beside ``path`` (created readable by the user only), fsync it,
    then rename it over ``path``; the temporary file is removed if anything fails. ``sync=False`` skips
    the fsync: the rename is still atomic and the data survives a killed process (it is in the page
    cache), only not a power loss (a caller that needs that fsyncs ``path`` and its folder later)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
