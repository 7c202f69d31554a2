"""File tools under a ``Root``: read_file, write_file, edit_file, apply_patch, list_dir, glob, grep.

Every path is confined to the root (``..``, absolute paths elsewhere and symlinks leading out give an
error result). Reads and writes of text go through a ``FileSystem`` (the disk by default; the ACP layer
passes the editor's); deletions always happen on the local disk. Changes are recorded in a ``Journal``
when one is given.

``Result.value`` shapes (the ACP layer renders these; keep them stable):

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

Each spec's ``meta["kind"]`` is the ACP tool kind (``read``, ``edit``, ``search``).
"""

from __future__ import annotations

import mimetypes
import os
import re
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from .._call import Call
from .._tools import Hints, Result, Tool, ToolSpec
from ._fs import FileSystem, LocalFileSystem
from ._journal import FileChange, Journal
from ._patch import PatchError, apply_hunks, parse_patch
from ._root import PathError, Root
from ._walk import glob_regex, walk_files

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

T = TypeVar("T")

READ_LINES = 2000  # default limit of read_file, in lines
MAX_LINE_CHARS = 2000  # longer lines are cut (minified files)
MAX_READ_CHARS = 100_000  # output cap of one read_file
BIG_FILE_BYTES = 10 * 1024 * 1024  # above this a read streams the window from disk instead of reading all
SNIFF_BYTES = 8192
MAX_LIST = 1000
MAX_GLOB = 500
MAX_GREP = 200
MAX_GREP_LINE = 300
MAX_GREP_FILE_BYTES = 5 * 1024 * 1024

_READ = Hints(read_only=True, idempotent=True)
_WRITE = Hints(destructive=False, idempotent=False)


def _schema(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


_PATH = {"type": "string", "description": "A path relative to the project root, or absolute inside it"}


class _Base:
    def __init__(self, root: Root, *, fs: FileSystem | None = None, journal: Journal | None = None) -> None:
        self.root = root
        self.fs: FileSystem = fs or LocalFileSystem()
        self.journal = journal

    async def _resolve(self, path: str) -> Path:
        return await self.root.resolve(path)

    async def _read_or_none(self, path: Path) -> str | None:
        try:
            return await self.fs.read_text(path)
        except FileNotFoundError:
            return None


# --- probing files ---------------------------------------------------------------------------------

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF8", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"PK\x03\x04", "application/zip"),
    (b"\x7fELF", "application/x-executable (ELF)"),
    (b"\x1f\x8b", "application/gzip"),
    (b"RIFF", "application/octet-stream (RIFF)"),
)


@dataclass(frozen=True, slots=True)
class _Probe:
    kind: str  # missing, dir, other, binary, text
    size: int = 0
    mime: str = ""


def _probe(path: Path) -> _Probe:
    try:
        st = path.stat()
    except FileNotFoundError:
        return _Probe("missing")
    if stat.S_ISDIR(st.st_mode):
        return _Probe("dir", st.st_size)
    if not stat.S_ISREG(st.st_mode):
        return _Probe("other", st.st_size)
    with path.open("rb") as f:
        head = f.read(SNIFF_BYTES)
    if _is_binary(head):
        mime = next((m for sig, m in _MAGIC if head.startswith(sig)), None)
        mime = mime or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        return _Probe("binary", st.st_size, mime)
    return _Probe("text", st.st_size)


def _is_binary(head: bytes) -> bool:
    if b"\x00" in head:
        return True
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        # A multi-byte character cut at the sniff boundary is still text.
        return e.start < len(head) - 4
    return False


def _human(size: int) -> str:
    value = float(size)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} bytes" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} bytes"


async def _in_thread(fn: Callable[[Callable[[], bool]], T]) -> T:
    """Run blocking ``fn(stop)`` in a thread; on cancellation ``stop()`` turns true and the wait is abandoned."""
    flag = threading.Event()
    try:
        return await anyio.to_thread.run_sync(fn, flag.is_set, abandon_on_cancel=True)
    finally:
        flag.set()


def _eol(text: str) -> str:
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def _to_eol(text: str, eol: str) -> str:
    if eol == "\r\n" and "\r" not in text:
        return text.replace("\n", "\r\n")
    return text


def _diff(path: Path, old: str | None, new: str) -> dict[str, Any]:
    return {"path": str(path), "old_text": old, "new_text": new}


def _first_changed_line(old: str | None, new: str) -> int:
    if not old:
        return 1
    a, b = old.splitlines(), new.splitlines()
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i + 1
    return min(len(a), len(b)) + 1 if len(a) != len(b) else 1


# --- read_file -----------------------------------------------------------------------------------


class ReadFile(_Base):
    """``read_file {path, offset?, limit?}``: lines numbered like ``cat -n``; binary files described."""

    def spec(self) -> ToolSpec:
        return ToolSpec(
            "read_file",
            f"Read a text file. Lines are numbered like `cat -n`. `offset` is the first line (1-based), "
            f"`limit` the number of lines (default {READ_LINES}); long lines and long outputs are cut and "
            "the output says so. Binary files are described, not shown.",
            _schema(
                {
                    "path": _PATH,
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to read, 1-based"},
                    "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read"},
                },
                ["path"],
            ),
            _READ,
            meta={"kind": "read"},
        )

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        raw = str(input["path"])
        try:
            path = await self._resolve(raw)
        except PathError as e:
            return Result.failure(f"read_file: {e}")
        offset = int(input.get("offset") or 1)
        limit = int(input.get("limit") or READ_LINES)
        probe = await anyio.to_thread.run_sync(_probe, path)
        shown = self.root.display(path)
        if probe.kind == "dir":
            return Result.failure(f"read_file: {shown} is a directory; use list_dir")
        if probe.kind == "other":
            return Result.failure(f"read_file: {shown} is not a regular file")
        if probe.kind == "binary":
            return Result.text(
                f"{shown}: binary file, {probe.mime}, {_human(probe.size)}; not shown.",
                value={"path": str(path), "line": 1, "binary": True, "size": probe.size, "type": probe.mime},
            )
        if probe.kind == "text" and probe.size > BIG_FILE_BYTES:
            window, total = await _in_thread(lambda stop: _read_window(path, offset, limit, stop))
        else:
            try:
                text = await self.fs.read_text(path)
            except FileNotFoundError:
                return Result.failure(f"read_file: {shown} does not exist")
            except (OSError, UnicodeError) as e:
                return Result.failure(f"read_file: cannot read {shown}: {e}")
            lines = text.splitlines()
            total = len(lines)
            window = lines[offset - 1 : offset - 1 + limit]
        return _render_read(path, shown, window, offset, total)


def _read_window(path: Path, offset: int, limit: int, stop: Callable[[], bool]) -> tuple[list[str], int]:
    out: list[str] = []
    total = 0
    with path.open("r", encoding="utf-8", errors="replace", newline="") as f:
        for total, line in enumerate(f, 1):
            if offset <= total < offset + limit:
                out.append(line.rstrip("\r\n"))
            if total % 10_000 == 0 and stop():
                break
    return out, total


def _render_read(path: Path, shown: str, window: list[str], offset: int, total: int) -> Result:
    value: dict[str, Any] = {
        "path": str(path),
        "line": offset,
        "lines": 0,
        "total_lines": total,
        "truncated": False,
    }
    if total == 0:
        return Result.text(f"{shown} is empty.", value=value)
    if offset > total:
        return Result.failure(f"read_file: offset {offset} is past the end of {shown} ({total} lines)")
    out: list[str] = []
    size = 0
    cut_lines = 0
    count = 0
    for i, line in enumerate(window):
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + f" [... line cut, {len(line) - MAX_LINE_CHARS} more characters]"
            cut_lines += 1
        row = f"{offset + i:6}\t{line}"
        if size + len(row) + 1 > MAX_READ_CHARS and out:
            break
        out.append(row)
        size += len(row) + 1
        count += 1
    last = offset + count - 1
    notes: list[str] = []
    if last < total:
        notes.append(f"[lines {offset}-{last} of {total}; read on with offset={last + 1}]")
    if cut_lines:
        notes.append(f"[{cut_lines} long line(s) cut at {MAX_LINE_CHARS} characters]")
    value.update(lines=count, truncated=last < total or bool(cut_lines))
    return Result.text("\n".join(out + notes), value=value)


# --- write_file ----------------------------------------------------------------------------------


class WriteFile(_Base):
    """``write_file {path, content}``: creates or replaces a file (parent directories made)."""

    def spec(self) -> ToolSpec:
        return ToolSpec(
            "write_file",
            "Create a file or replace its whole content. Prefer edit_file or apply_patch to change part of "
            "an existing file. Parent directories are created.",
            _schema({"path": _PATH, "content": {"type": "string"}}, ["path", "content"]),
            _WRITE,
            meta={"kind": "edit"},
        )

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        raw = str(input["path"])
        try:
            path = await self._resolve(raw)
        except PathError as e:
            return Result.failure(f"write_file: {e}")
        shown = self.root.display(path)
        probe = await anyio.to_thread.run_sync(_probe, path)
        if probe.kind in ("dir", "other"):
            return Result.failure(f"write_file: {shown} is a directory or not a regular file")
        old = await self._read_or_none(path)
        content = str(input["content"])
        if old is not None:
            content = _to_eol(content, _eol(old))
        if old == content:
            return Result.text(
                f"{shown} already has this content; nothing written.", value=_edit_value(path, old, content)
            )
        try:
            await self.fs.write_text(path, content)
        except OSError as e:
            return Result.failure(f"write_file: cannot write {shown}: {e}")
        if self.journal is not None:
            self.journal.record([FileChange(path, old, content)], f"write_file {shown}")
        verb = "Created" if old is None else "Wrote"
        return Result.text(
            f"{verb} {shown} ({len(content.splitlines())} lines).", value=_edit_value(path, old, content)
        )


def _edit_value(path: Path, old: str | None, new: str, line: int | None = None) -> dict[str, Any]:
    first = line if line is not None else _first_changed_line(old, new)
    return {
        "diffs": [_diff(path, old, new)],
        "locations": [{"path": str(path), "line": first}],
        "path": str(path),
        "line": first,
    }


# --- edit_file -----------------------------------------------------------------------------------


class EditFile(_Base):
    """``edit_file {path, old_text, new_text, replace_all?}``: exact replacement; line endings preserved."""

    def spec(self) -> ToolSpec:
        return ToolSpec(
            "edit_file",
            "Replace `old_text` with `new_text` in a file. `old_text` must match the file exactly (whitespace "
            "and indentation included) and occur once, unless `replace_all` is true. Include enough "
            "surrounding lines to make it unique.",
            _schema(
                {
                    "path": _PATH,
                    "old_text": {"type": "string", "minLength": 1},
                    "new_text": {"type": "string"},
                    "replace_all": {"type": "boolean", "default": False},
                },
                ["path", "old_text", "new_text"],
            ),
            _WRITE,
            meta={"kind": "edit"},
        )

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        raw = str(input["path"])
        try:
            path = await self._resolve(raw)
        except PathError as e:
            return Result.failure(f"edit_file: {e}")
        shown = self.root.display(path)
        old_text, new_text = str(input["old_text"]), str(input["new_text"])
        if not old_text:
            return Result.failure("edit_file: old_text is empty; use write_file to create a file")
        if old_text == new_text:
            return Result.failure("edit_file: old_text and new_text are the same; nothing to change")
        text = await self._read_or_none(path)
        if text is None:
            return Result.failure(f"edit_file: {shown} does not exist; use write_file to create it")
        eol = _eol(text)
        old_text, new_text = _to_eol(old_text, eol), _to_eol(new_text, eol)
        count = text.count(old_text)
        if count == 0:
            return Result.failure(
                f"edit_file: old_text was not found in {shown}. It must match exactly, including "
                "whitespace and indentation; read the file again and copy the text."
            )
        replace_all = bool(input.get("replace_all", False))
        if count > 1 and not replace_all:
            lines = _match_lines(text, old_text)
            return Result.failure(
                f"edit_file: old_text occurs {count} times in {shown} (at lines {', '.join(map(str, lines[:10]))}"
                f"{', ...' if len(lines) > 10 else ''}); include more surrounding text to make it unique, "
                "or set replace_all to replace every occurrence."
            )
        first_line = text.count("\n", 0, text.index(old_text)) + 1
        new = text.replace(old_text, new_text) if replace_all else text.replace(old_text, new_text, 1)
        try:
            await self.fs.write_text(path, new)
        except OSError as e:
            return Result.failure(f"edit_file: cannot write {shown}: {e}")
        if self.journal is not None:
            self.journal.record([FileChange(path, text, new)], f"edit_file {shown}")
        n = count if replace_all else 1
        return Result.text(
            f"Edited {shown}: replaced {n} occurrence{'s' if n != 1 else ''} (first at line {first_line}).",
            value=_edit_value(path, text, new, first_line),
        )


def _match_lines(text: str, needle: str) -> list[int]:
    out: list[int] = []
    start = 0
    while (i := text.find(needle, start)) >= 0:
        out.append(text.count("\n", 0, i) + 1)
        start = i + len(needle)
    return out


# --- apply_patch ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Planned:
    path: Path
    before: str | None
    after: str | None
    line: int


class ApplyPatch(_Base):
    """``apply_patch {patch}``: a unified diff over one or more files; all of it applies or nothing does."""

    def spec(self) -> ToolSpec:
        return ToolSpec(
            "apply_patch",
            "Apply a unified diff (`--- a/path`, `+++ b/path`, `@@ -l,n +l,n @@` hunks) to one or more files. "
            "Use `--- /dev/null` to create a file and `+++ /dev/null` to delete one. Either every file is "
            "changed or none is.",
            _schema({"patch": {"type": "string", "minLength": 1}}, ["patch"]),
            _WRITE,
            meta={"kind": "edit"},
        )

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        try:
            patches = parse_patch(str(input["patch"]))
        except PatchError as e:
            return Result.failure(f"apply_patch: {e}")
        plan: list[_Planned] = []
        seen: set[Path] = set()
        summary: list[str] = []
        try:
            for fp in patches:
                old_p = await self._resolve(fp.old_path) if fp.old_path is not None else None
                new_p = await self._resolve(fp.new_path) if fp.new_path is not None else None
                touched = {p for p in (old_p, new_p) if p is not None}
                for p in touched & seen:
                    raise PatchError(f"{self.root.display(p)} appears more than once in the patch")
                before = await self._read_or_none(old_p) if old_p is not None else None
                if new_p is not None and old_p is None and await self._read_or_none(new_p) is not None:
                    raise PatchError(f"{self.root.display(new_p)}: cannot create, the file already exists")
                if old_p is not None and before is None:
                    raise PatchError(f"{self.root.display(old_p)} does not exist")
                after = apply_hunks(before, fp)
                if old_p is not None and new_p is not None and old_p != new_p:
                    # A rename: the old file goes, the new one is created with the patched text.
                    if await self._read_or_none(new_p) is not None:
                        raise PatchError(f"{self.root.display(new_p)}: cannot rename onto an existing file")
                    plan.append(_Planned(old_p, before, None, 1))
                    plan.append(_Planned(new_p, None, after or "", 1))
                    summary.append(f"R {self.root.display(old_p)} -> {self.root.display(new_p)}")
                elif new_p is None:
                    assert old_p is not None
                    plan.append(_Planned(old_p, before, None, 1))
                    summary.append(f"D {self.root.display(old_p)}")
                else:
                    assert after is not None
                    line = fp.hunks[0].new_start if fp.hunks else 1
                    plan.append(_Planned(new_p, before, after, max(line, 1)))
                    summary.append(
                        f"{'A' if before is None else 'M'} {self.root.display(new_p)}{_counts(fp)}"
                    )
                seen.update(touched)
        except (PathError, PatchError) as e:
            return Result.failure(f"apply_patch: {e}; no file was changed")
        done: list[_Planned] = []
        try:
            for item in plan:
                await self._apply(item)
                done.append(item)
        except OSError as e:
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                for item in reversed(done):
                    await self._apply(_Planned(item.path, item.after, item.before, item.line))
            return Result.failure(f"apply_patch: writing failed ({e}); the files written were restored")
        if self.journal is not None:
            self.journal.record([FileChange(p.path, p.before, p.after) for p in plan], "apply_patch")
        diffs: list[dict[str, Any]] = []
        for p in plan:
            d = _diff(p.path, p.before, p.after or "")
            if p.after is None:
                d["deleted"] = True
            diffs.append(d)
        value = {
            "diffs": diffs,
            "locations": [{"path": str(p.path), "line": p.line} for p in plan if p.after is not None],
        }
        n = len(patches)
        return Result.text(f"Patched {n} file{'s' if n != 1 else ''}:\n" + "\n".join(summary), value=value)

    async def _apply(self, item: _Planned) -> None:
        if item.after is None:
            await anyio.Path(item.path).unlink(missing_ok=True)
        else:
            await self.fs.write_text(item.path, item.after)


def _counts(fp: Any) -> str:
    plus = sum(1 for h in fp.hunks for ln in h.lines if ln[0] == "+")
    minus = sum(1 for h in fp.hunks for ln in h.lines if ln[0] == "-")
    return f" (+{plus} -{minus})"


# --- list_dir ------------------------------------------------------------------------------------


class ListDir(_Base):
    """``list_dir {path}``: a directory's entries, directories marked with ``/``."""

    def spec(self) -> ToolSpec:
        return ToolSpec(
            "list_dir",
            f"List a directory: directories end with `/`, files show their size, symlinks their target. "
            f"At most {MAX_LIST} entries.",
            _schema({"path": _PATH}, ["path"]),
            _READ,
            meta={"kind": "read"},
        )

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        try:
            path = await self._resolve(str(input["path"]))
        except PathError as e:
            return Result.failure(f"list_dir: {e}")
        shown = self.root.display(path)
        try:
            entries = await anyio.to_thread.run_sync(self._list, path)
        except NotADirectoryError:
            return Result.failure(f"list_dir: {shown} is not a directory")
        except FileNotFoundError:
            return Result.failure(f"list_dir: {shown} does not exist")
        except OSError as e:
            return Result.failure(f"list_dir: cannot list {shown}: {e}")
        truncated = len(entries) > MAX_LIST
        entries = entries[:MAX_LIST]
        rows: list[str] = []
        for e in entries:
            if e["type"] == "dir":
                rows.append(f"{e['name']}/")
            elif e["type"] == "symlink":
                rows.append(f"{e['name']} -> {e['target']}")
            elif e["type"] == "file":
                rows.append(f"{e['name']}  ({_human(e['size'])})")
            else:
                rows.append(e["name"])
        head = f"{shown}/ ({len(entries)} entries{', truncated' if truncated else ''})"
        text = head + ("\n" + "\n".join(rows) if rows else "\n(empty)")
        return Result.text(text, value={"path": str(path), "entries": entries, "truncated": truncated})

    def _list(self, path: Path) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        with os.scandir(path) as it:
            for entry in it:
                item: dict[str, Any] = {"name": entry.name, "size": 0}
                if entry.is_symlink():
                    real = Path(os.path.realpath(entry.path))
                    item["type"] = "symlink"
                    item["target"] = (
                        self.root.display(real) if self.root.contains(real) else "(outside the project)"
                    )
                elif entry.is_dir():
                    item["type"] = "dir"
                elif entry.is_file():
                    item["type"] = "file"
                    item["size"] = entry.stat().st_size
                else:
                    item["type"] = "other"
                out.append(item)
        out.sort(key=lambda e: (e["type"] != "dir", e["name"]))
        return out


# --- glob ----------------------------------------------------------------------------------------


def _check_pattern(pattern: str) -> str | None:
    if not pattern:
        return "the pattern is empty"
    if pattern.startswith("/") or pattern.startswith("~"):
        return "the pattern must be relative (set `path` to search elsewhere inside the project)"
    if ".." in pattern.split("/"):
        return "the pattern may not contain '..'"
    return None


class Glob(_Base):
    """``glob {pattern, path?}``: files under ``path`` (default the root) matching ``pattern``."""

    def spec(self) -> ToolSpec:
        return ToolSpec(
            "glob",
            f"Find files by name pattern: `*` (within a directory), `**` (any depth), `?`, `[abc]`, `{{a,b}}`, "
            f"relative to `path` (default: the project root). E.g. `**/*.py`. At most {MAX_GLOB} results; "
            "dependency and VCS directories (.git, node_modules, .venv, ...) are skipped unless `path` is inside one.",
            _schema({"pattern": {"type": "string", "minLength": 1}, "path": _PATH}, ["pattern"]),
            _READ,
            meta={"kind": "search"},
        )

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        pattern = str(input["pattern"])
        problem = _check_pattern(pattern)
        if problem is not None:
            return Result.failure(f"glob: {problem}")
        try:
            base = await self._resolve(str(input.get("path") or "."))
        except PathError as e:
            return Result.failure(f"glob: {e}")
        if not await anyio.Path(base).is_dir():
            return Result.failure(f"glob: {self.root.display(base)} is not a directory")
        rx = glob_regex(pattern)

        def find(stop: Callable[[], bool]) -> tuple[list[Path], bool]:
            found: list[Path] = []
            for p, rel in walk_files(self.root, base, stop):
                if rx.match(rel):
                    if len(found) >= MAX_GLOB:
                        return found, True
                    found.append(p)
            return found, False

        files, truncated = await _in_thread(find)
        if not files:
            return Result.text(
                f"No files match {pattern!r}.", value={"path": str(base), "files": [], "truncated": False}
            )
        text = "\n".join(self.root.display(p) for p in files)
        if truncated:
            text += f"\n[only the first {MAX_GLOB} matches; narrow the pattern]"
        return Result.text(
            text, value={"path": str(base), "files": [str(p) for p in files], "truncated": truncated}
        )


# --- grep ----------------------------------------------------------------------------------------


class Grep(_Base):
    """``grep {pattern, path?, glob?, case_sensitive?}``: a regex search over text files."""

    def spec(self) -> ToolSpec:
        return ToolSpec(
            "grep",
            f"Search file contents with a regular expression (Python syntax). `path` is a file or directory "
            f"(default: the project root); `glob` filters files (`*.py`, `src/**/*.ts`); case-sensitive unless "
            f"`case_sensitive` is false. Prints `path:line: text`, at most {MAX_GREP} matches; binary files "
            "and dependency/VCS directories are skipped.",
            _schema(
                {
                    "pattern": {"type": "string", "minLength": 1},
                    "path": _PATH,
                    "glob": {"type": "string"},
                    "case_sensitive": {"type": "boolean", "default": True},
                },
                ["pattern"],
            ),
            _READ,
            meta={"kind": "search"},
        )

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        flags = 0 if input.get("case_sensitive", True) else re.IGNORECASE
        try:
            rx = re.compile(str(input["pattern"]), flags)
        except re.error as e:
            return Result.failure(f"grep: invalid regular expression: {e}")
        file_glob = input.get("glob")
        if file_glob is not None:
            problem = _check_pattern(str(file_glob))
            if problem is not None:
                return Result.failure(f"grep: glob: {problem}")
        try:
            base = await self._resolve(str(input.get("path") or "."))
        except PathError as e:
            return Result.failure(f"grep: {e}")
        probe = await anyio.to_thread.run_sync(_probe, base)
        if probe.kind == "missing":
            return Result.failure(f"grep: {self.root.display(base)} does not exist")
        g = glob_regex(str(file_glob)) if file_glob else None
        g_name_only = file_glob is not None and "/" not in str(file_glob)

        def search(stop: Callable[[], bool]) -> tuple[list[dict[str, Any]], bool]:
            hits: list[dict[str, Any]] = []
            files = [(base, base.name)] if probe.kind != "dir" else walk_files(self.root, base, stop)
            for p, rel in files:
                if stop():
                    break
                if g is not None and not g.match(p.name if g_name_only else rel):
                    continue
                if _grep_file(p, rx, hits, stop):
                    return hits, True
            return hits, False

        hits, truncated = await _in_thread(search)
        value = {"path": str(base), "matches": hits, "truncated": truncated}
        if not hits:
            return Result.text("No matches.", value=value)
        rows = [f"{self.root.display(Path(h['path']))}:{h['line']}: {h['text']}" for h in hits]
        if truncated:
            rows.append(f"[only the first {MAX_GREP} matches; narrow the pattern, path or glob]")
        return Result.text("\n".join(rows), value=value)


def _grep_file(path: Path, rx: re.Pattern[str], hits: list[dict[str, Any]], stop: Callable[[], bool]) -> bool:
    """Append ``path``'s matches to ``hits``; True when the cap was reached."""
    try:
        if path.stat().st_size > MAX_GREP_FILE_BYTES:
            return False
        data = path.read_bytes()
    except OSError:
        return False
    if _is_binary(data[:SNIFF_BYTES]):
        return False
    for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
        if rx.search(line):
            if len(hits) >= MAX_GREP:
                return True
            text = line if len(line) <= MAX_GREP_LINE else line[:MAX_GREP_LINE] + " [...]"
            hits.append({"path": str(path), "line": n, "text": text})
    return stop()


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
