"""Coding tools: files under a ``Root`` (with a ``Journal`` to undo) and a ``shell``.

See ``harness.tools.files`` and ``harness.tools.shell`` for the tools. The ``Result.value`` shapes and the
tool metadata (``ToolMeta``, ``read_meta``, the ``*_value`` readers) and the patch parser (``parse_patch``)
are exported here: the contract between the tools and whoever presents or judges their calls.
"""

from ..beneath import BeneathError, Place, real_path
from ._envelope import parse_patch
from ._fs import FileSystem, LocalFileSystem, open_regular
from ._journal import FileChange, Journal, Revert, Undone, UndoPlan
from ._patch import PatchError
from ._root import PathError, Root
from ._values import (
    KINDS,
    Diff,
    DirEntry,
    EditValue,
    GlobValue,
    GrepMatch,
    GrepValue,
    ListValue,
    Location,
    PlanEntry,
    PlanValue,
    ReadValue,
    ShellValue,
    ToolKind,
    ToolMeta,
    edit_value,
    glob_value,
    grep_value,
    plan_value,
    read_meta,
    read_value,
    shell_value,
)
from .files import ApplyPatch, EditFile, Glob, Grep, ListDir, ReadFile, WriteFile, file_tools
from .shell import CommandRequest, CommandRunner, LocalCommandRunner, OutputSink, Shell

__all__ = [
    "KINDS",
    "ApplyPatch",
    "BeneathError",
    "CommandRequest",
    "CommandRunner",
    "Diff",
    "DirEntry",
    "EditFile",
    "EditValue",
    "FileChange",
    "FileSystem",
    "Glob",
    "GlobValue",
    "Grep",
    "GrepMatch",
    "GrepValue",
    "Journal",
    "ListDir",
    "ListValue",
    "LocalCommandRunner",
    "LocalFileSystem",
    "Location",
    "OutputSink",
    "PatchError",
    "PathError",
    "Place",
    "PlanEntry",
    "PlanValue",
    "ReadFile",
    "ReadValue",
    "Revert",
    "Root",
    "Shell",
    "ShellValue",
    "ToolKind",
    "ToolMeta",
    "UndoPlan",
    "Undone",
    "WriteFile",
    "edit_value",
    "file_tools",
    "glob_value",
    "grep_value",
    "open_regular",
    "parse_patch",
    "plan_value",
    "read_meta",
    "read_value",
    "real_path",
    "shell_value",
]
