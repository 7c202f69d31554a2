"""Unified diffs: parse a multi-file patch and apply its hunks to text (no disk access here)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ._match import LEVELS, rebuild, seek
from ._nearest import nearest, nearest_note

__all__ = ["FilePatch", "Hunk", "PatchError", "apply_hunks", "eol_of", "parse_unified"]

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_NO_EOL = "\\ No newline at end of file"
_loosest = LEVELS[-1][1]  # the ladder's loosest key: whitespace and typographic punctuation forgiven


class PatchError(Exception):
    """The patch is malformed or does not apply; the message says where."""


@dataclass(slots=True)
class Hunk:
    """A hunk: its ``lines``, placed by its line numbers (a unified diff's) or, ``located``, by its lines
    alone from where the hunk before ended (the ``*** Begin Patch`` envelope's, ``_envelope``): at or after
    the line ``anchor`` when given, at the file's end when ``at_end``."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: list[str] = field(default_factory=list[str])  # each starts with ' ', '-' or '+'
    old_no_eol: bool = False
    new_no_eol: bool = False
    located: bool = False
    anchor: str | None = None
    at_end: bool = False

    @property
    def label(self) -> str:
        if self.located:
            return f"hunk @@ {self.anchor}" if self.anchor else "hunk"
        return f"hunk @@ -{self.old_start},{self.old_count} @@"

    @property
    def old(self) -> list[str]:
        return [ln[1:] for ln in self.lines if ln[0] in " -"]

    @property
    def new(self) -> list[str]:
        return [ln[1:] for ln in self.lines if ln[0] in " +"]


@dataclass(slots=True)
class FilePatch:
    """One file's part of a patch. ``old_path`` is None for a created file, ``new_path`` None for a deleted one.
    ``notes``: what the parser repaired (a hunk header's line counts, recounted), for the result."""

    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list[Hunk])
    notes: list[str] = field(default_factory=list[str])

    @property
    def path(self) -> str:
        p = self.new_path if self.new_path is not None else self.old_path
        assert p is not None
        return p


def _header_path(raw: str) -> str | None:
    raw = raw.split("\t", 1)[0].rstrip()
    if raw.startswith('"') and raw.endswith('"') and len(raw) >= 2:
        raw = raw[1:-1]
    return None if raw == "/dev/null" else raw


def _strip_git_prefix(fp: FilePatch) -> None:
    # git writes a/ and b/ prefixes; strip them only when both sides agree that they are prefixes.
    o, n = fp.old_path, fp.new_path
    if (o is None or o.startswith("a/")) and (n is None or n.startswith("b/")) and (o or n):
        fp.old_path = o[2:] if o is not None else None
        fp.new_path = n[2:] if n is not None else None


def parse_unified(text: str) -> list[FilePatch]:
    """The file patches of a unified diff (``---``/``+++`` headers, ``@@`` hunks, ``/dev/null`` for create/delete)."""
    lines = text.splitlines()
    out: list[FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("--- ") or i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
            i += 1
            continue
        fp = FilePatch(_header_path(line[4:]), _header_path(lines[i + 1][4:]))
        if fp.old_path is None and fp.new_path is None:
            raise PatchError(f"line {i + 1}: both sides are /dev/null")
        _strip_git_prefix(fp)
        i += 2
        while i < len(lines) and lines[i].startswith("@@"):
            hunk, i = _parse_hunk(lines, i, fp)
            fp.hunks.append(hunk)
        if not fp.hunks and not (fp.old_path is None or fp.new_path is None):
            raise PatchError(f"{fp.path}: no hunks")
        out.append(fp)
    if not out:
        raise PatchError(
            "no file headers found: expected a unified diff with '--- path' and '+++ path' lines"
        )
    return out


def _parse_hunk(lines: list[str], i: int, fp: FilePatch) -> tuple[Hunk, int]:
    """The hunk whose ``@@`` header is ``lines[i]``, and the index after it.

    Models miscount the header's line counts; the hunk's own lines are what it means (``git apply
    --recount``): read up to the header's counts, then on while the lines still belong to a hunk (not a
    header: ``@@``, or ``---`` followed by ``+++``, which inside the counts is a removed ``--`` line). Fewer
    lines than counted are taken only when another hunk or file follows (a patch that ends there may be
    cut short), and never when a line without its prefix stopped them.
    Blank lines at its end are the patch's spacing unless the header's counts need them. A recount is
    noted."""
    m = _HUNK.match(lines[i])
    if m is None:
        raise PatchError(f"line {i + 1}: malformed hunk header {lines[i]!r}")
    hunk = Hunk(
        int(m[1]), int(m[2]) if m[2] is not None else 1, int(m[3]), int(m[4]) if m[4] is not None else 1
    )
    header = f"@@ -{hunk.old_start},{hunk.old_count} +{hunk.new_start},{hunk.new_count} @@"
    i += 1
    old_seen = new_seen = 0
    bare: list[bool] = []  # per line: an empty line, no tag (a context line whose space was dropped?)
    while i < len(lines):
        body = lines[i]
        counted = old_seen >= hunk.old_count and new_seen >= hunk.new_count
        if body == _NO_EOL:
            if counted:
                break  # (read below, for the hunk's last line)
            i += 1
            continue
        tag = body[:1] or " "  # some tools drop the space of an empty context line
        if tag not in " -+" and not counted and not body.startswith("diff "):
            raise PatchError(  # (a context line without its space, say: never a hunk cut short)
                f"line {i + 1}: {body!r} in hunk {header} of {fp.path} does not start with ' ', '-' or '+' "
                f"(after {old_seen} old and {new_seen} new lines of the {hunk.old_count} and "
                f"{hunk.new_count} its header counts)"
            )
        if tag not in " -+" or body.startswith("@@"):
            break
        if _file_header(lines, i) and (counted or _next_file(lines, i, hunk, old_seen, new_seen)):
            break
        hunk.lines.append(tag + body[1:])
        bare.append(not body)
        old_seen += tag in " -"
        new_seen += tag in " +"
        i += 1
    while bare and bare[-1] and (old_seen, new_seen) != (hunk.old_count, hunk.new_count):
        bare.pop()  # a blank line after the hunk: spacing, unless the header's counts need it
        hunk.lines.pop()
        old_seen -= 1
        new_seen -= 1
    if not hunk.lines:
        raise PatchError(f"hunk @@ -{hunk.old_start},{hunk.old_count} @@ of {fp.path} has no lines")
    if i >= len(lines) and (old_seen < hunk.old_count or new_seen < hunk.new_count):
        raise PatchError(  # fewer lines than counted, and nothing after them: cut short, not miscounted
            f"hunk {header} of {fp.path}: expected {hunk.old_count} old and {hunk.new_count} new lines, "
            f"found {old_seen} and {new_seen} before the patch ends (is it cut short?)"
        )
    if old_seen != hunk.old_count or new_seen != hunk.new_count:
        fp.notes.append(
            f"{fp.path}: hunk {header} has {old_seen} old and {new_seen} new lines: recounted (applied as its "
            "lines say)"
        )
        hunk.old_count, hunk.new_count = old_seen, new_seen
    if i < len(lines) and lines[i] == _NO_EOL:
        last = hunk.lines[-1][0] if hunk.lines else " "
        hunk.old_no_eol = last in " -"
        hunk.new_no_eol = last in " +"
        i += 1
    return hunk, i


def _file_header(lines: list[str], i: int) -> bool:
    return lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


def _next_file(lines: list[str], i: int, hunk: Hunk, old_seen: int, new_seen: int) -> bool:
    """``---``/``+++`` at ``i`` before the header's counts are reached: the next file's header when a hunk
    header follows and the two lines would not complete the counts (else a removed ``--`` and an added
    ``++`` line, the last of this hunk)."""
    followed = i + 2 < len(lines) and lines[i + 2].startswith("@@")
    return followed and (old_seen + 1, new_seen + 1) != (hunk.old_count, hunk.new_count)


def eol_of(text: str) -> str:
    """The line ending ``text`` mostly uses (``\\r\\n`` or ``\\n``)."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"


def _find(lines: list[str], block: list[str], expected: int, start: int) -> int | None:
    """The index where ``block`` occurs, nearest to ``expected``, at or after ``start``."""
    n = len(block)
    limit = len(lines) - n
    if limit < start:
        return None
    expected = min(max(expected, start), limit)
    for delta in range(max(expected - start, limit - expected) + 1):
        for pos in (expected - delta, expected + delta):
            if start <= pos <= limit and lines[pos : pos + n] == block:
                return pos
    return None


def _seek_loose(lines: list[str], hunk: Hunk, pos: int, path: str, notes: list[str]) -> tuple[int, list[str]]:
    """No exact place for the hunk's old lines: the looseness ladder's unique match, re-fitted new lines."""
    old = hunk.old
    found = seek(lines, old, pos, trim=False)
    where = f"{path}: {hunk.label}"
    if found is None:
        preview = old[0] if old else ""
        missed = (
            f"{where} does not match the file, not even ignoring whitespace, indentation or typographic "
            f"quotes (looked for {len(old)} lines starting {preview!r})"
        )
        near = nearest(lines, old, start=pos)
        if near is None:
            raise PatchError(missed)
        raise PatchError(
            f"{missed}; {nearest_note(near)}\nCopy the hunk's context and removed lines from these lines "
            "exactly (without the line numbers)"
        )
    if len(found.positions) > 1:
        at = ", ".join(str(p + 1) for p in found.positions[:10])
        raise PatchError(
            f"{where} does not match exactly; ignoring {found.level} it matches {len(found.positions)} "
            f"places (lines {at}); give more context lines"
        )
    at = next(iter(found.positions))
    notes.append(f"{where} matched at line {at + 1} ignoring {found.level}")
    return at, rebuild(found.level, old, lines[at : at + len(old)], hunk.new)


def _anchor_at(lines: list[str], hunk: Hunk, pos: int, path: str) -> int:
    """Where the line ``hunk.anchor`` names is, at or after ``pos``: the first line equal to it but for
    whitespace and typographic punctuation, else the first that begins with it (``@@ class Foo`` for
    ``class Foo(Base):``)."""
    anchor = hunk.anchor or ""
    want = _loosest(anchor)
    keys = [_loosest(line) for line in lines[pos:]]
    for i, key in enumerate(keys, pos):
        if key == want:
            return i
    for i, key in enumerate(keys, pos):
        if want and key.startswith(want):
            return i
    missed = f"{path}: {hunk.label}: no line {anchor!r} at or after line {pos + 1}"
    near = nearest(lines, [anchor], start=pos)
    if near is None:
        raise PatchError(f"{missed}; name a line of the file after @@, or leave it empty")
    raise PatchError(f"{missed}; {nearest_note(near)}\nName one of the file's lines exactly after @@")


def apply_hunks(original: str | None, fp: FilePatch, notes: list[str] | None = None) -> str | None:
    """The new text of ``fp``'s file given its ``original`` text (None: absent); None means deleted.

    A hunk whose context is not found exactly is placed by the looseness ladder; ``notes`` gets a line
    for each such hunk."""
    if fp.new_path is None:
        if original is None:
            raise PatchError(f"{fp.path}: cannot delete, the file does not exist")
        return None
    if fp.old_path is None and original is not None:
        raise PatchError(f"{fp.path}: cannot create, the file already exists")
    text = original or ""
    eol = eol_of(text) if text else "\n"
    ends_with_eol = text.endswith("\n") or not text
    lines = text.splitlines()
    lines = [ln.rstrip("\r") for ln in lines]
    pos = 0
    offset = 0
    for hunk in fp.hunks:
        old = hunk.old
        new = hunk.new
        start = _anchor_at(lines, hunk, pos, fp.path) if hunk.anchor is not None else pos
        if not old and hunk.located:  # (an envelope's pure addition: after its anchor, else at the end)
            at = start + 1 if hunk.anchor is not None else len(lines)
        elif not old:
            at = hunk.old_start if hunk.old_start > 0 else 0
            at = min(max(at + offset, pos), len(lines))
        else:
            if hunk.located:
                expected = len(lines) - len(old) if hunk.at_end else start
            else:
                expected = hunk.old_start - 1 + offset
            found = _find(lines, old, expected, start)
            if found is None:
                found, new = _seek_loose(lines, hunk, start, fp.path, notes if notes is not None else [])
            at = found
        lines[at : at + len(old)] = new
        touches_end = at + len(new) >= len(lines)
        if touches_end and hunk.new_no_eol:
            ends_with_eol = False
        elif touches_end and hunk.old_no_eol:
            ends_with_eol = True
        offset += len(new) - len(old)
        pos = at + len(new)
    if not lines:
        return ""
    return eol.join(lines) + (eol if ends_with_eol else "")
