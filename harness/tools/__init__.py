"""Coding tools: files under a ``Root`` (with a ``Journal`` to undo) and a ``shell``.

See ``harness.tools.files`` and ``harness.tools.shell`` for the tools and the ``Result.value`` shapes.
"""

from ._beneath import BeneathError, Place, real_path
from ._fs import FileSystem, LocalFileSystem, open_regular
from ._journal import FileChange, Journal, Revert, Undone, UndoPlan
from ._root import PathError, Root
from .files import ApplyPatch, EditFile, Glob, Grep, ListDir, ReadFile, WriteFile, file_tools
from .shell import CommandRequest, CommandRunner, LocalCommandRunner, OutputSink, Shell

__all__ = [
    "ApplyPatch",
    "BeneathError",
    "CommandRequest",
    "CommandRunner",
    "EditFile",
    "FileChange",
    "FileSystem",
    "Glob",
    "Grep",
    "Journal",
    "ListDir",
    "LocalCommandRunner",
    "LocalFileSystem",
    "OutputSink",
    "PathError",
    "Place",
    "ReadFile",
    "Revert",
    "Root",
    "Shell",
    "UndoPlan",
    "Undone",
    "WriteFile",
    "file_tools",
    "open_regular",
    "real_path",
]
