"""How the coding tools look in the editor: a ``ToolView`` per file tool (titles such as "Edit src/app.py",
locations that drive the editor's follow mode, diffs from ``EditValue``), read from the typed
``Result.value`` contracts of ``harness.tools._values``. ``coding_views`` gives the views of a session's
tools by name; the shell's is ``_shell_view.ShellView``.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from harness.tools import (
    ApplyPatch,
    EditFile,
    Glob,
    Grep,
    ListDir,
    PatchError,
    ReadFile,
    WriteFile,
    edit_value,
    glob_value,
    grep_value,
    parse_patch,
    read_value,
)

from ...protocol.models import DiffToolCallContent, ToolCallLocation
from ...session.plugin import Shown, result_content, text_block

if TYPE_CHECKING:
    from harness import Result, Tool, ToolCall, ToolResult

    from ...protocol.models import ToolCallContent, ToolCallLocation, ToolKind
    from ...session.plugin import CallView, ToolView

__all__ = ["ProjectPaths", "coding_views", "patch_files"]

MAX_LOCATIONS: Final = 50


class ProjectPaths:
    """The session's roots: paths shown relative to them, and made absolute from the first one."""

    def __init__(self, roots: Sequence[Path]) -> None:
        self.roots = tuple(roots)

    def shown(self, raw: str) -> str:
        if self.roots and os.path.isabs(raw):
            for r in self.roots:
                try:
                    rel = Path(os.path.normpath(raw)).relative_to(r)
                except ValueError:
                    continue
                return rel.as_posix() or "."
        return raw

    def absolute(self, raw: Any) -> str | None:
        if not isinstance(raw, str) or not raw or "\x00" in raw:
            return None
        if os.path.isabs(raw):
            return os.path.normpath(raw)
        if not self.roots:
            return None
        return os.path.normpath(os.path.join(self.roots[0], raw))


def _location(path: str, line: Any = None) -> ToolCallLocation:
    return ToolCallLocation(path=path, line=line if isinstance(line, int) and line >= 1 else None)


def patch_files(patch: str) -> list[str]:
    """The files a patch names, in order, as the tool reads them (``harness.tools.parse_patch``: a
    unified diff or the ``*** Begin Patch`` envelope); none for a patch that does not parse."""
    try:
        patches = parse_patch(patch)
    except PatchError:
        return []
    names = (p for fp in patches for p in (fp.old_path, fp.new_path) if p is not None)
    return list(dict.fromkeys(names))


class _Ended:
    """A call whose updates say nothing until it ends; its view shows the result."""

    def __init__(self, view: _FileView) -> None:
        self._view = view

    def ready(self, tool_input: Mapping[str, Any]) -> Shown:
        return Shown()

    def progress(self, value: Any) -> Shown | None:
        return None

    def ended(self, result: Result) -> Shown:
        return self._view.ended(result)


class _FileView:
    """A file tool: the path in the title and as the location; the result's text (and what ``ended`` adds)."""

    verb = ""

    def __init__(self, paths: ProjectPaths, kind: ToolKind) -> None:
        self.paths = paths
        self._kind: ToolKind = kind

    @property
    def kind(self) -> ToolKind:
        return self._kind

    def _path(self, tool_input: Mapping[str, Any] | None) -> str | None:
        raw = tool_input.get("path") if tool_input is not None else None
        return self.paths.shown(raw) if isinstance(raw, str) and raw else None

    def title(self, tool_input: Mapping[str, Any] | None) -> str | None:
        path = self._path(tool_input)
        return f"{self.verb} {path}" if path else None

    def locations(self, tool_input: Mapping[str, Any]) -> list[ToolCallLocation] | None:
        path = self.paths.absolute(tool_input.get("path"))
        return [_location(path)] if path else None

    def open(self, call_id: str) -> CallView:
        return _Ended(self)

    def ended(self, result: Result) -> Shown:
        return Shown(content=result_content(result))

    def replayed(self, call: ToolCall, result: ToolResult | None) -> Shown:
        return Shown(content=result_content(result) if result is not None else None)


class _ReadView(_FileView):
    verb = "Read"

    def title(self, tool_input: Mapping[str, Any] | None) -> str | None:
        title = super().title(tool_input)
        offset = tool_input.get("offset") if tool_input is not None else None
        return f"{title} (from line {offset})" if title and isinstance(offset, int) else title

    def locations(self, tool_input: Mapping[str, Any]) -> list[ToolCallLocation] | None:
        path = self.paths.absolute(tool_input.get("path"))
        return [_location(path, tool_input.get("offset"))] if path else None

    def ended(self, result: Result) -> Shown:
        value = read_value(result.value)
        where = [_location(value["path"], value["line"])] if value is not None else None
        return Shown(content=result_content(result), locations=where)


class _EditView(_FileView):
    """``write_file``, ``edit_file``, ``apply_patch``: the diffs of their ``EditValue``."""

    def __init__(self, paths: ProjectPaths, verb: str) -> None:
        super().__init__(paths, "edit")
        self.verb = verb

    def ended(self, result: Result) -> Shown:
        value = edit_value(result.value)
        if value is None:
            return Shown(content=result_content(result))
        diffs: list[ToolCallContent] = [
            DiffToolCallContent(path=d["path"], old_text=d["old_text"], new_text=d["new_text"])
            for d in value["diffs"]
        ]
        where = [_location(loc["path"], loc.get("line")) for loc in value["locations"][:MAX_LOCATIONS]]
        return Shown(content=[*diffs, *result_content(result)], locations=where or None)

    def replayed(self, call: ToolCall, result: ToolResult | None) -> Shown:
        # Without a record only the input is known: the edit's fragments as a diff of text, never as a file.
        old, new = call.input.get("old_text"), call.input.get("new_text")
        shown = result_content(result) if result is not None else []
        if isinstance(old, str) and isinstance(new, str):
            lines = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=2)
            return Shown(content=[*text_block("```diff\n" + "\n".join(lines) + "\n```"), *shown])
        return Shown(content=shown or None)


class _PatchView(_EditView):
    def __init__(self, paths: ProjectPaths) -> None:
        super().__init__(paths, "Patch")

    def _files(self, tool_input: Mapping[str, Any] | None) -> list[str]:
        patch = tool_input.get("patch") if tool_input is not None else None
        return patch_files(patch) if isinstance(patch, str) else []

    def title(self, tool_input: Mapping[str, Any] | None) -> str | None:
        files = self._files(tool_input)
        if not files:
            return None
        shown = ", ".join(self.paths.shown(f) for f in files[:3])
        return f"Patch {shown}" + (" …" if len(files) > 3 else "")

    def locations(self, tool_input: Mapping[str, Any]) -> list[ToolCallLocation] | None:
        paths = [self.paths.absolute(f) for f in self._files(tool_input)]
        return [_location(p) for p in paths if p] or None

    def replayed(self, call: ToolCall, result: ToolResult | None) -> Shown:
        patch = call.input.get("patch")
        shown = result_content(result) if result is not None else []
        if isinstance(patch, str):
            return Shown(content=[*text_block(f"```diff\n{patch}\n```"), *shown])
        return Shown(content=shown or None)


class _ListView(_FileView):
    verb = "List"

    def title(self, tool_input: Mapping[str, Any] | None) -> str | None:
        return f"List {self._path(tool_input) or '.'}" if tool_input is not None else None


class _SearchView(_FileView):
    """``glob`` and ``grep``: the pattern in the title, the files found as locations."""

    def __init__(self, paths: ProjectPaths, verb: str, *, quoted: bool) -> None:
        super().__init__(paths, "search")
        self.verb = verb
        self._quoted = quoted

    def title(self, tool_input: Mapping[str, Any] | None) -> str | None:
        pattern = tool_input.get("pattern") if tool_input is not None else None
        if not isinstance(pattern, str):
            return None
        path = self._path(tool_input)
        shown = repr(pattern) if self._quoted else pattern
        return f"{self.verb} {shown}" + (f" in {path}" if path else "")

    def ended(self, result: Result) -> Shown:
        found: list[ToolCallLocation] = []
        grep = grep_value(result.value)
        if grep is not None:
            found = [_location(m["path"], m["line"]) for m in grep["matches"][:MAX_LOCATIONS]]
        glob = glob_value(result.value)
        if glob is not None:
            found = [_location(f) for f in glob["files"][:MAX_LOCATIONS]]
        return Shown(content=result_content(result), locations=found or None)


def coding_views(tools: Sequence[Tool], paths: ProjectPaths) -> dict[str, ToolView]:
    """The views of the file tools among ``tools``, by tool name (the shell's is added by the factory)."""
    views: dict[str, ToolView] = {}
    for tool in tools:
        view: ToolView | None
        match tool:
            case ReadFile():
                view = _ReadView(paths, "read")
            case WriteFile():
                view = _EditView(paths, "Write")
            case EditFile():
                view = _EditView(paths, "Edit")
            case ApplyPatch():
                view = _PatchView(paths)
            case ListDir():
                view = _ListView(paths, "read")
            case Glob():
                view = _SearchView(paths, "Find", quoted=False)
            case Grep():
                view = _SearchView(paths, "Search", quoted=True)
            case _:
                view = None
        if view is not None:
            views[tool.spec().name] = view
    return views
