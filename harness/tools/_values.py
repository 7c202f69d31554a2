"""The typed contracts between tools and the applications that show them.

``Result.value`` is for the application (an editor shows diffs, locations, exit codes); the model never
sees it. The built-in tools build their values with these ``TypedDict``s and applications read them
through the same types (``edit_value``, ``shell_value`` … check the shape of a value of unknown origin and
return it typed, or None). ``ToolMeta`` is the one shape of ``ToolSpec.meta``: the tool's ``kind``, a
``title`` (a string, or a callable making one from the input) and ``agent`` (a sub-agent tool).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, NotRequired, TypedDict, cast, get_args

__all__ = [
    "KINDS",
    "DirEntry",
    "Diff",
    "EditValue",
    "GlobValue",
    "GrepMatch",
    "GrepValue",
    "ListValue",
    "Location",
    "PlanEntry",
    "PlanValue",
    "ReadValue",
    "ShellValue",
    "ToolKind",
    "ToolMeta",
    "edit_value",
    "glob_value",
    "grep_value",
    "plan_value",
    "read_meta",
    "read_value",
    "shell_value",
]

ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
"""What a tool does, for the application's icons and grouping."""
KINDS: frozenset[str] = frozenset(get_args(ToolKind))

Title = str | Callable[[Mapping[str, Any]], "str | None"]


class ToolMeta(TypedDict, total=False):
    """``ToolSpec.meta``: ``kind``, ``title`` (a string, or made from the input; None: the tool's name)
    and ``agent`` (the tool runs a sub-agent whose events are nested under the call)."""

    kind: ToolKind
    title: Title
    agent: bool


def read_meta(meta: Mapping[str, Any]) -> ToolMeta:
    """``meta`` as a ``ToolMeta``, keeping only the keys of the right type (a tool source may be foreign)."""
    out = ToolMeta()
    kind = meta.get("kind")
    if isinstance(kind, str) and kind in KINDS:
        out["kind"] = cast(ToolKind, kind)
    title = meta.get("title")
    if isinstance(title, str) or callable(title):
        out["title"] = cast(Title, title)
    if isinstance(meta.get("agent"), bool):
        out["agent"] = bool(meta["agent"])
    return out


# --- the file tools --------------------------------------------------------------------------------


class Diff(TypedDict):
    """A file change: ``old_text`` None for a created file; a deleted file has ``new_text`` ``""``."""

    path: str
    old_text: str | None
    new_text: str
    deleted: NotRequired[bool]


class Location(TypedDict):
    path: str
    line: NotRequired[int]


class EditValue(TypedDict):
    """``write_file``, ``edit_file``, ``apply_patch``; the first two also give the first changed line."""

    diffs: list[Diff]
    locations: list[Location]
    path: NotRequired[str]
    line: NotRequired[int]


class ReadValue(TypedDict):
    """``read_file``: the lines shown, or (``binary``) the file's size and type."""

    path: str
    line: int
    lines: NotRequired[int]
    total_lines: NotRequired[int]
    truncated: NotRequired[bool]
    binary: NotRequired[bool]
    size: NotRequired[int]
    type: NotRequired[str]


class DirEntry(TypedDict):
    name: str
    type: Literal["file", "dir", "symlink", "other"]
    size: int
    target: NotRequired[str]


class ListValue(TypedDict):
    path: str
    entries: list[DirEntry]
    truncated: bool


class GlobValue(TypedDict):
    path: str
    files: list[str]
    truncated: bool


class GrepMatch(TypedDict):
    path: str
    line: int
    text: str


class GrepValue(TypedDict):
    path: str
    matches: list[GrepMatch]
    truncated: bool


# --- shell and plan ----------------------------------------------------------------------------------


class ShellValue(TypedDict):
    """``exit_code`` is ``-signal`` when the command died of a signal, None when it never finished."""

    exit_code: int | None
    output: str
    timed_out: bool
    cancelled: bool
    truncated: bool
    command: str
    cwd: str
    sandbox: NotRequired[str]
    """How the command was confined (``SandboxPolicy.describe()``), or ``off``; absent without a sandbox."""
    sandbox_note: NotRequired[str]
    """What the sandbox probably denied, when the command failed."""
    sandbox_removed: NotRequired[list[str]]
    """Protected paths the sandboxed command made, removed once it ended (``harness.sandbox._guard``)."""


class PlanEntry(TypedDict):
    content: str
    status: Literal["pending", "in_progress", "completed"]
    priority: Literal["high", "medium", "low"]


class PlanValue(TypedDict):
    """``plan_set`` and ``plan_update``: the whole plan after the change."""

    entries: list[PlanEntry]


# --- readers -----------------------------------------------------------------------------------------


def _dict(value: object) -> dict[str, Any] | None:
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def _has(value: object, key: str, kind: type | tuple[type, ...]) -> dict[str, Any] | None:
    d = _dict(value)
    return d if d is not None and isinstance(d.get(key), kind) else None


def edit_value(value: object) -> EditValue | None:
    d = _has(value, "diffs", list)
    return cast(EditValue, d) if d is not None and isinstance(d.get("locations", []), list) else None


def read_value(value: object) -> ReadValue | None:
    d = _has(value, "path", str)
    return cast(ReadValue, d) if d is not None and isinstance(d.get("line"), int) else None


def glob_value(value: object) -> GlobValue | None:
    return cast("GlobValue | None", _has(value, "files", list))


def grep_value(value: object) -> GrepValue | None:
    return cast("GrepValue | None", _has(value, "matches", list))


def shell_value(value: object) -> ShellValue | None:
    d = _has(value, "output", str)
    return cast(ShellValue, d) if d is not None and "exit_code" in d else None


def plan_value(value: object) -> PlanValue | None:
    return cast("PlanValue | None", _has(value, "entries", list))
