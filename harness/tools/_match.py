"""The looseness ladder: find a model's block of lines in a file when it drifted from the file's text.

Models copy text imperfectly: CRLF for LF, a BOM dropped, trailing spaces, indentation of 2 for the file's
4, curly quotes or dashes for straight ones. ``seek`` compares whole lines under keys that forgive more at
each level, in a fixed order, and stops at the first level that finds anything: a match is applied only
when it is unique there (``Sought.positions`` names every place otherwise). ``rebuild`` turns the model's
new lines into the file's own: lines the model kept keep the file's bytes, new lines are re-indented to
the file's indentation and, at the punctuation level, its plain quotes and dashes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["LEVELS", "Loose", "Sought", "loose_replace", "rebuild", "seek", "split_lines"]

_PUNCT = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u00a0": " ",
        "\u2002": " ",
        "\u2003": " ",
        "\u2007": " ",
        "\u2009": " ",
        "\u200a": " ",
        "\u202f": " ",
        "\u3000": " ",
        "\u200b": "",
        "\ufeff": "",
        "\u2026": "...",
    }
)


def _eol_key(line: str) -> str:
    return line.rstrip("\r").replace("\ufeff", "")


def _trailing_key(line: str) -> str:
    return _eol_key(line).rstrip()


def _indent_key(line: str) -> str:
    return _eol_key(line).strip()


def _punct_key(line: str) -> str:
    return _eol_key(line).translate(_PUNCT).strip()


# In order; each forgives what the ones before it did, and more. "exact" is the caller's substring search.
LEVELS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("line endings", _eol_key),
    ("trailing whitespace", _trailing_key),
    ("indentation", _indent_key),
    ("unicode punctuation", _punct_key),
)


@dataclass(frozen=True, slots=True)
class Sought:
    """Where a block matched: ``level`` names the first level with any match, ``positions`` its starts."""

    level: str
    positions: tuple[int, ...]
    length: int


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> tuple[list[str], list[str]]:
    """``text``'s lines and, apart, each one's end (``""`` for a last line without one)."""
    lines: list[str] = []
    ends: list[str] = []
    for m in _LINE.finditer(text):
        whole = m.group(0)
        body = whole.rstrip("\r\n")
        lines.append(body)
        ends.append(whole[len(body) :])
    return lines, ends


def _trim_blank(block: Sequence[str]) -> tuple[int, int]:
    """The slice of ``block`` without blank lines at either end (a model's stray newlines)."""
    lo, hi = 0, len(block)
    while lo < hi and not block[lo].strip():
        lo += 1
    while hi > lo and not block[hi - 1].strip():
        hi -= 1
    return lo, hi


def seek(lines: Sequence[str], block: Sequence[str], start: int = 0, *, trim: bool = True) -> Sought | None:
    """The first level at which ``block`` matches whole lines of ``lines`` (at or after ``start``);
    ``trim``: blank lines framing ``block`` are not part of it."""
    lo, hi = _trim_blank(block) if trim else (0, len(block))
    core = block[lo:hi]
    if not core:
        return None
    n = len(core)
    for name, key in LEVELS:
        want = [key(b) for b in core]
        keys = [key(x) for x in lines]
        found: list[int] = []
        pos = start
        first = want[0]
        while pos + n <= len(keys):
            if keys[pos] == first and keys[pos : pos + n] == want:
                found.append(pos)
                pos += n  # non-overlapping, as a substring search counts them
            else:
                pos += 1
        if found:
            return Sought(name, tuple(found), n)
    return None


def trimmed(block: Sequence[str]) -> list[str]:
    lo, hi = _trim_blank(block)
    return list(block[lo:hi])


_LEAD = re.compile(r"[ \t]*")


def _indent(line: str) -> str:
    m = _LEAD.match(line)
    return m.group(0) if m else ""


def _width(indent: str, tab: int = 4) -> int:
    return sum(tab if c == "\t" else 1 for c in indent)


def _reindenter(model: Sequence[str], file: Sequence[str]) -> Callable[[str], str]:
    """Maps a line's indentation in the model's style to the file's, fitted on the matched lines."""
    pairs = [(_width(_indent(m)), _width(_indent(f))) for m, f in zip(model, file, strict=True) if m.strip()]
    uses_tabs = any(_indent(f).startswith("\t") for f in file if f.strip())
    if not pairs or (all(a == b for a, b in pairs) and not uses_tabs):
        return lambda line: line
    m0, f0 = min(pairs)
    # A linear fit (file = f0 + (model - m0) * ratio) covers both a shifted block and 2-for-4 levels.
    steps = sorted({(a - m0, b - f0) for a, b in pairs if a != m0})
    ratio = steps[0][1] / steps[0][0] if steps and steps[0][0] else 1.0
    fits = all(f0 + (a - m0) * ratio == b for a, b in pairs)
    if not fits:
        ratio = 1.0
        m0, f0 = pairs[0]

    def to_file(line: str) -> str:
        if not line.strip():
            return line.strip(" \t")
        width = max(0, round(f0 + (_width(_indent(line)) - m0) * ratio))
        body = line[len(_indent(line)) :]
        if uses_tabs:
            return "\t" * (width // 4) + " " * (width % 4) + body
        return " " * width + body

    return to_file


def _plain_punctuation(file: Sequence[str]) -> Callable[[str], str]:
    """The model's typographic characters as the file's plain ones, unless the file uses them itself."""
    used = {c for line in file for c in line if c in _PUNCT_CHARS}

    def plain(line: str) -> str:
        return "".join(c if c in used or c not in _PUNCT_CHARS else str(c).translate(_PUNCT) for c in line)

    return plain


_PUNCT_CHARS = frozenset(chr(k) for k in _PUNCT)


def rebuild(level: str, old: Sequence[str], file_block: Sequence[str], new: Sequence[str]) -> list[str]:
    """The lines that replace ``file_block`` (which matched ``old`` at ``level``) for the model's ``new``.

    A new line equal to an old one is unchanged context and keeps the file's text; the others are
    re-indented to the file's style (from the indentation level on) and get plain punctuation (at the
    punctuation level) where the file has none of the model's typographic characters.
    """
    kept: dict[str, list[str]] = {}
    for m, f in zip(old, file_block, strict=True):
        kept.setdefault(m, []).append(f)
    reindent = _reindenter(old, file_block) if level in ("indentation", "unicode punctuation") else None
    plain = _plain_punctuation(file_block) if level == "unicode punctuation" else None
    out: list[str] = []
    for line in new:
        same = kept.get(line)
        if same:
            out.append(same.pop(0) if len(same) > 1 else same[0])
            continue
        fixed = _eol_key(line)
        if level != "line endings":
            fixed = fixed.rstrip()
        if reindent is not None:
            fixed = reindent(fixed)
        if plain is not None:
            fixed = plain(fixed)
        out.append(fixed)
    return out


@dataclass(frozen=True, slots=True)
class Loose:
    """A loose edit: the new ``text`` and where it changed, or ``ambiguous`` (the lines of each match)."""

    level: str
    text: str | None
    lines: tuple[int, ...]
    ambiguous: bool = False


def loose_replace(text: str, old_text: str, new_text: str, eol: str, *, replace_all: bool) -> Loose | None:
    """``old_text`` replaced by ``new_text`` in ``text`` at the first loose level that finds it.

    None: no level found it. The file keeps its line ends (``eol`` for new lines), BOM and final newline.
    """
    lines, ends = split_lines(text)
    old, _ = split_lines(old_text)
    new, _ = split_lines(new_text)
    found = seek(lines, old)
    if found is None:
        return None
    starts = tuple(p + 1 for p in found.positions)
    if len(found.positions) > 1 and not replace_all:
        return Loose(found.level, None, starts, ambiguous=True)
    core = trimmed(old)
    lo, hi = _trim_blank(old)
    # The model's new text loses the blank lines it framed old_text with, when it framed both alike.
    if new[:lo] == old[:lo] and (hi == len(old) or new[len(new) - (len(old) - hi) :] == old[hi:]):
        new = new[lo : len(new) - (len(old) - hi)]
    for pos in reversed(found.positions):
        block = lines[pos : pos + found.length]
        repl = rebuild(found.level, core, block, new)
        if pos == 0 and lines and lines[0].startswith("\ufeff") and repl and not repl[0].startswith("\ufeff"):
            repl[0] = "\ufeff" + repl[0]
        last_end = ends[pos + found.length - 1]
        repl_ends = [eol] * len(repl)
        if repl_ends:
            repl_ends[-1] = last_end
        lines[pos : pos + found.length] = repl
        ends[pos : pos + found.length] = repl_ends
    return Loose(found.level, "".join(b + e for b, e in zip(lines, ends, strict=True)), starts)
