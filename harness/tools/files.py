"""File tools under a ``Root``: read_file, write_file, edit_file, apply_patch, list_dir, glob, grep.

Every path is confined to the root (``..``, absolute paths elsewhere and symlinks leading out give an
error result), and every disk read, write, delete, listing and walk then opens the checked real path
beneath its root without following any symlink (``harness.beneath``: ``openat2`` or an ``O_NOFOLLOW`` walk), so
a symlink swapped in after the check is refused, never followed; writes replace the file through a
temporary one renamed in the opened folder. The tools never open a FIFO, socket or device; a read holds a bounded amount of memory
whatever the file's size or line length; ``grep`` patterns are RE2 (linear time), compiled and matched in a
thread. Reads and writes of text go through a ``FileSystem`` (the disk by default; the ACP layer
passes the editor's); deletions always happen on the local disk. Changes are recorded in a ``Journal``
when one is given.

``Result.value`` shapes (typed in ``harness.tools._values``; the ACP layer renders them):

- ``read_file``: ``{"path": abs, "line": first_line, "lines": n_shown, "total_lines": n, "truncated": bool}``;
  a binary file: ``{"path": abs, "line": 1, "binary": True, "size": bytes, "type": mime}``.
- ``write_file``, ``edit_file``, ``apply_patch``: ``{"diffs": [{"path": abs, "old_text": str | None,
  "new_text": str}], "locations": [{"path": abs, "line": int}]}``; ``old_text`` is None for a created
  file; a deleted file has ``"new_text": ""`` and ``"deleted": True``. ``write_file`` and ``edit_file`` also
  give ``"path"`` and ``"line"`` (the first changed line).
- ``list_dir``: ``{"path": abs, "entries": [{"name", "type": "file"|"dir"|"symlink"|"other", "size"}],
  "truncated": bool}``.
- ``glob``: ``{"path": abs base, "files": [abs, ...], "truncated": bool}``.
- ``grep``: ``{"path": abs base, "matches": [{"path": abs, "line": int, "text": str}], "truncated": bool}``.

Each spec's ``meta`` is a ``ToolMeta`` giving the tool's kind (``read``, ``edit``, ``search``). The tools live in
``_read`` (read_file, list_dir), ``_edit`` (write_file, edit_file), ``_apply_patch`` and ``_search`` (glob,
grep), over ``_filetool.FileTool`` (typed input, the shared failure prologue).
"""

from __future__ import annotations

from typing import Any

from .._tools import Tool
from ._apply_patch import ApplyPatch
from ._edit import EditFile, WriteFile
from ._fs import FileSystem
from ._journal import Journal
from ._read import ListDir, ReadFile
from ._root import Root
from ._search import Glob, Grep

__all__ = [
    "ApplyPatch",
    "EditFile",
    "Glob",
    "Grep",
    "ListDir",
    "ReadFile",
    "WriteFile",
    "file_tools",
]


def file_tools(root: Root, journal: Journal | None = None, fs: FileSystem | None = None) -> list[Tool]:
    """All seven file tools sharing ``root``, ``journal`` and ``fs``."""
    kw: dict[str, Any] = {"fs": fs, "journal": journal}
    return [
        ReadFile(root, **kw),
        WriteFile(root, **kw),
        EditFile(root, **kw),
        ApplyPatch(root, **kw),
        ListDir(root, **kw),
        Glob(root, **kw),
        Grep(root, **kw),
    ]
