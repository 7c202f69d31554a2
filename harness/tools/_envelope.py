"""The ``*** Begin Patch`` envelope: the patch format OpenAI's models are trained to send to a tool named
``apply_patch`` (Codex's), read into the same ``FilePatch``es as a unified diff (``_patch``).

::

    *** Begin Patch
    *** Add File: hello.txt
    +Hello
    *** Update File: src/app.py
    *** Move to: src/main.py
    @@ def greet():
    -    print("Hi")
    +    print("Hello")
    *** Delete File: old.txt
    *** End Patch

Its hunks carry no line numbers: each is placed by its own lines, searched from where the one before ended
(``Hunk.located``); an ``@@ <line>`` header names a line the hunk comes at or after (``Hunk.anchor``), and
``*** End of File`` places it at the file's end. The looseness ladder and the nearest-lines hint apply as
to a unified diff's hunks. Leniency, as models write it: text around the envelope (a shell heredoc's
``apply_patch <<'EOF'``) and a missing ``*** End Patch`` are ignored, a first hunk may come without ``@@``,
an empty line in a hunk is an empty context line, and blank lines that end a hunk are spacing.
"""

from __future__ import annotations

from typing import Final

from ._patch import FilePatch, Hunk, PatchError, parse_unified

__all__ = ["is_envelope", "parse_envelope", "parse_patch"]

_BEGIN: Final = "*** Begin Patch"
_END: Final = "*** End Patch"
_ADD: Final = "*** Add File:"
_DELETE: Final = "*** Delete File:"
_UPDATE: Final = "*** Update File:"
_MOVE: Final = "*** Move to:"
_EOF: Final = "*** End of File"


def is_envelope(text: str) -> bool:
    return any(line.strip() == _BEGIN for line in text.splitlines())


def parse_patch(text: str) -> list[FilePatch]:
    """The file patches of ``text``: the envelope when it holds ``*** Begin Patch``, else a unified diff.
    The one parser of a patch: the tool, the permission policy and the session's confinement all read
    the files a patch names here, so none sees other files than the one that writes them."""
    return parse_envelope(text) if is_envelope(text) else parse_unified(text)


def parse_envelope(text: str) -> list[FilePatch]:
    """The file operations of a ``*** Begin Patch`` envelope (see the module docstring)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == _BEGIN) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].strip() == _END), len(lines))
    out: list[FilePatch] = []
    i = start
    while i < end:
        line = lines[i]
        if not line.strip():
            i += 1
        elif line.startswith(_ADD):
            path = _path(line, _ADD, i)
            first = i = i + 1
            while i < end and not _is_operation(lines[i]):
                i += 1
            raw = lines[first:i]
            while raw and not raw[-1]:
                raw.pop()  # spacing before the next operation
            for k, added in enumerate(raw, first):
                if added and not added.startswith("+"):
                    raise PatchError(f"line {k + 1}: a line of an added file starts with '+': {added!r}")
            out.append(FilePatch(None, path, [_located(["+" + added[1:] for added in raw], None)]))
        elif line.startswith(_DELETE):
            out.append(FilePatch(_path(line, _DELETE, i), None))
            i += 1
        elif line.startswith(_UPDATE):
            fp, i = _update(lines, i, end)
            out.append(fp)
        else:
            raise PatchError(
                f"line {i + 1}: expected '*** Add File: <path>', '*** Update File: <path>' or "
                f"'*** Delete File: <path>', found {line!r}"
            )
    if not out:
        raise PatchError("the patch between '*** Begin Patch' and '*** End Patch' changes no file")
    return out


def _update(lines: list[str], i: int, end: int) -> tuple[FilePatch, int]:
    """The ``*** Update File:`` at ``i`` (an optional ``*** Move to:``, then its hunks); the index after."""
    path = _path(lines[i], _UPDATE, i)
    i += 1
    new_path = path
    if i < end and lines[i].startswith(_MOVE):
        new_path = _path(lines[i], _MOVE, i)
        i += 1
    fp = FilePatch(path, new_path)
    hunk: list[str] | None = None
    anchor: str | None = None
    at_end = False

    def close() -> None:
        if hunk is not None:
            body = _without_spacing(hunk)
            if not any(line[0] in "-+" for line in body):
                raise PatchError(f"{path}: a hunk{_named(anchor)} changes no line (no '-' or '+' line)")
            fp.hunks.append(_located(body, anchor, at_end))

    while i < end and not _is_operation(lines[i]):
        line = lines[i]
        if line.startswith("@@"):
            close()
            hunk, anchor, at_end = [], line[2:].strip() or None, False
        elif line.strip() == _EOF:
            at_end = True
        elif line[:1] in ("", " ", "-", "+"):
            if hunk is None:
                hunk = []  # a first hunk without its ``@@``
            hunk.append((line[:1] or " ") + line[1:])
        else:
            raise PatchError(
                f"line {i + 1}: a hunk line of {path} starts with ' ', '-' or '+' (or is '@@'), "
                f"found {line!r}"
            )
        i += 1
    close()
    if not fp.hunks and new_path == path:
        raise PatchError(f"{path}: '*** Update File' with no hunk")
    return fp, i


def _located(body: list[str], anchor: str | None, at_end: bool = False) -> Hunk:
    old = sum(1 for line in body if line[0] in " -")
    new = sum(1 for line in body if line[0] in " +")
    return Hunk(0, old, 0, new, body, located=True, anchor=anchor, at_end=at_end)


def _without_spacing(body: list[str]) -> list[str]:
    """``body`` without the empty lines that end it (the patch's spacing, not the hunk's context)."""
    out = list(body)
    while out and out[-1] == " ":
        out.pop()
    return out


def _is_operation(line: str) -> bool:
    return line.startswith((_ADD, _DELETE, _UPDATE)) or line.strip() == _END


def _path(line: str, marker: str, i: int) -> str:
    path = line[len(marker) :].strip()
    if not path:
        raise PatchError(f"line {i + 1}: {marker.removeprefix('*** ').rstrip(':')} names no path")
    return path


def _named(anchor: str | None) -> str:
    return f" (@@ {anchor})" if anchor else ""
