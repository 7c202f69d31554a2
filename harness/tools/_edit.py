"""``write_file`` and ``edit_file``: whole-file writes and exact replacements, line endings preserved."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import anyio.to_thread

from .._call import Call
from .._tools import Result
from ._filetool import PATH_ARG, WRITE_HINTS, FileTool
from ._inputs import arg
from ._journal import FileChange
from ._match import Loose, loose_replace, split_lines
from ._nearest import Nearest, nearest, nearest_note
from ._patch import eol_of
from ._probe import probe
from ._values import Diff, EditValue, Location

__all__ = ["EditFile", "WriteFile", "diff_value", "to_eol"]


def to_eol(text: str, eol: str) -> str:
    if eol == "\r\n" and "\r" not in text:
        return text.replace("\n", "\r\n")
    return text


def diff_value(path: Path, old: str | None, new: str) -> Diff:
    return Diff(path=str(path), old_text=old, new_text=new)


def _first_changed_line(old: str | None, new: str) -> int:
    if not old:
        return 1
    a, b = old.splitlines(), new.splitlines()
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i + 1
    return min(len(a), len(b)) + 1 if len(a) != len(b) else 1


def _edit_value(path: Path, old: str | None, new: str, line: int | None = None) -> EditValue:
    first = line if line is not None else _first_changed_line(old, new)
    return EditValue(
        diffs=[diff_value(path, old, new)],
        locations=[Location(path=str(path), line=first)],
        path=str(path),
        line=first,
    )


# --- write_file ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WriteInput:
    path: str = arg(PATH_ARG)
    content: str = arg()


class WriteFile(FileTool[WriteInput]):
    """``write_file {path, content}``: creates or replaces a file (parent directories made)."""

    name = "write_file"
    kind = "edit"
    hints = WRITE_HINTS
    Input = WriteInput
    description = (
        "Create a file or replace its whole content. Prefer edit_file or apply_patch to change part of "
        "an existing file. Parent directories are created."
    )

    async def run(self, args: WriteInput, call: Call) -> Result:
        path = await self.resolve(args.path)
        shown = self.root.display(path)
        found = await anyio.to_thread.run_sync(probe, self.place(path))
        if found.kind in ("dir", "other"):
            return Result.failure(f"write_file: {shown} is a directory or not a regular file")
        old = await self.read_or_none(path)
        content = args.content
        if old is not None:
            content = to_eol(content, eol_of(old))
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
        escaped = content.count("\\n") if "\n" not in content else 0
        note = (
            f" It has no line break but {escaped} times the two characters \\n: if line breaks were meant, "
            "write it again with real ones (as plain text, not escaped)."
            if escaped >= 2
            else ""
        )
        return Result.text(
            f"{verb} {shown} ({len(content.splitlines())} lines).{note}",
            value=_edit_value(path, old, content),
        )


# --- edit_file -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EditInput:
    path: str = arg(PATH_ARG)
    old_text: str = arg(minLength=1)
    new_text: str = arg()
    replace_all: bool = arg(default=False)


class EditFile(FileTool[EditInput]):
    """``edit_file {path, old_text, new_text, replace_all?}``: exact replacement; line endings preserved."""

    name = "edit_file"
    kind = "edit"
    hints = WRITE_HINTS
    Input = EditInput
    description = (
        "Replace `old_text` with `new_text` in a file. `old_text` should match the file exactly (whitespace "
        "and indentation included) and occur once, unless `replace_all` is true. Include enough "
        "surrounding lines to make it unique. Whole lines that differ only in line endings, trailing "
        "spaces, indentation or typographic quotes still match when the match is unique; the result says so."
    )

    async def run(self, args: EditInput, call: Call) -> Result:
        path = await self.resolve(args.path)
        shown = self.root.display(path)
        old_text, new_text = args.old_text, args.new_text
        if not old_text:
            return Result.failure("edit_file: old_text is empty; use write_file to create a file")
        if old_text == new_text:
            return Result.failure("edit_file: old_text and new_text are the same; nothing to change")
        text = await self.read_or_none(path)
        if text is None:
            return Result.failure(f"edit_file: {shown} does not exist; use write_file to create it")
        eol = eol_of(text)
        old_text, new_text = to_eol(old_text, eol), to_eol(new_text, eol)
        count = text.count(old_text)
        if count == 0:
            return await self._loose(path, text, args, eol)
        if count > 1 and not args.replace_all:
            lines = _match_lines(text, old_text)
            return Result.failure(
                f"edit_file: old_text occurs {count} times in {shown} (at lines {', '.join(map(str, lines[:10]))}"
                f"{', ...' if len(lines) > 10 else ''}); include more surrounding text to make it unique, "
                "or set replace_all to replace every occurrence."
            )
        first_line = text.count("\n", 0, text.index(old_text)) + 1
        new = text.replace(old_text, new_text) if args.replace_all else text.replace(old_text, new_text, 1)
        try:
            await self.fs.write_text(path, new)
        except OSError as e:
            return Result.failure(f"edit_file: cannot write {shown}: {e}")
        if self.journal is not None:
            self.journal.record([FileChange(path, text, new)], f"edit_file {shown}")
        n = count if args.replace_all else 1
        return Result.text(
            f"Edited {shown}: replaced {n} occurrence{'s' if n != 1 else ''} (first at line {first_line}).",
            value=_edit_value(path, text, new, first_line),
        )

    async def _loose(self, path: Path, text: str, args: EditInput, eol: str) -> Result:
        """No exact match: the looseness ladder (``_match``) applies a unique match and says how."""
        shown = self.root.display(path)
        found = await anyio.to_thread.run_sync(_loose_or_nearest, text, args, eol)
        if found is None or isinstance(found, Nearest):
            missed = (
                f"edit_file: old_text was not found in {shown}, not even ignoring line endings, trailing "
                "whitespace, indentation or typographic quotes and dashes; "
            )
            if found is None:
                return Result.failure(missed + "read the file again and copy the text.")
            return Result.failure(
                f"{missed}{nearest_note(found)}\nCopy old_text from these lines exactly (without the line "
                "numbers), or read the file again."
            )
        at = ", ".join(map(str, found.lines[:10])) + (", ..." if len(found.lines) > 10 else "")
        if found.ambiguous or found.text is None:
            return Result.failure(
                f"edit_file: old_text was not found exactly in {shown}; ignoring {found.level} it matches "
                f"{len(found.lines)} places (at lines {at}). Include more surrounding lines to make it "
                "unique, or copy the text exactly."
            )
        try:
            await self.fs.write_text(path, found.text)
        except OSError as e:
            return Result.failure(f"edit_file: cannot write {shown}: {e}")
        if self.journal is not None:
            self.journal.record([FileChange(path, text, found.text)], f"edit_file {shown}")
        n = len(found.lines)
        how = f"it matched ignoring {found.level} (the new text was fitted to the file's own)"
        if found.level == ESCAPED_TWICE:
            how = "it matched once old_text and new_text were read as text escaped twice"
        elif found.level.startswith(ESCAPED_TWICE):
            how = (
                f"it matched once read as text escaped twice, ignoring {found.level.rpartition(', then ')[2]}"
            )
        if found.level.startswith(ESCAPED_TWICE):
            how += " (the two characters \\n stood for each line break: send plain text)"
        return Result.text(
            f"Edited {shown}: old_text did not match exactly; {how} "
            f"and replaced {n} occurrence{'s' if n != 1 else ''} "
            f"(at line{'s' if n != 1 else ''} {at}). Copy text exactly next time.",
            value=_edit_value(path, text, found.text, next(iter(found.lines))),
            meta={"match": found.level},
        )


def _loose_or_nearest(text: str, args: EditInput, eol: str) -> Loose | Nearest | None:
    """The looseness ladder's edit; then the same for text escaped twice (``_escaped_twice``); when nothing
    matched, the file's text nearest to ``old_text`` (blocking)."""
    old, new = args.old_text, args.new_text
    found = loose_replace(text, old, new, eol, replace_all=args.replace_all)
    if found is not None:
        return found
    twice = _escaped_twice(old, new)
    if twice is not None:
        old, new = to_eol(twice[0], eol), to_eol(twice[1], eol)
        found = _exactly(text, old, new, replace_all=args.replace_all)
        if found is None:
            found = loose_replace(text, old, new, eol, replace_all=args.replace_all)
            if found is not None:
                found = replace(found, level=f"{ESCAPED_TWICE}, then {found.level}")
        if found is not None:
            return found
    return nearest(split_lines(text)[0], split_lines(old)[0])


ESCAPED_TWICE = "double escaping"
_ESCAPE = re.compile(r"""\\(u[0-9a-fA-F]{4}|["'\\/bfnrt])""")
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _escaped_twice(old_text: str, new_text: str) -> tuple[str, str] | None:
    """Both texts read once more when ``old_text`` came escaped twice (a JSON string's escapes as text: the
    two characters ``\\n`` for each line break, and neither text has a real one), else None. Both are
    decoded alike: a model that escaped one twice escaped the other so (``\\\\n`` is a code's own ``\\n``)."""
    if "\n" in old_text or "\n" in new_text or "\\n" not in old_text:
        return None

    def once(text: str) -> str:
        def one(m: re.Match[str]) -> str:
            c = m.group(1)
            return chr(int(c[1:], 16)) if c[0] == "u" else _ESCAPES.get(c, c)

        return _ESCAPE.sub(one, text)

    return once(old_text), once(new_text)


def _exactly(text: str, old: str, new: str, *, replace_all: bool) -> Loose | None:
    """``old`` replaced exactly (as ``run`` does), as a ``Loose`` of the ``ESCAPED_TWICE`` level."""
    count = text.count(old)
    if count == 0:
        return None
    lines = tuple(_match_lines(text, old))
    if count > 1 and not replace_all:
        return Loose(ESCAPED_TWICE, None, lines, ambiguous=True)
    return Loose(ESCAPED_TWICE, text.replace(old, new) if replace_all else text.replace(old, new, 1), lines)


def _match_lines(text: str, needle: str) -> list[int]:
    out: list[int] = []
    start = 0
    while (i := text.find(needle, start)) >= 0:
        out.append(text.count("\n", 0, i) + 1)
        start = i + len(needle)
    return out
