"""The one reader of a project's permission file (``permissions.jsonl``): the trust check (before
``initialize`` is answered) and the project's rule store (``coding._trust.ProjectRuleStore``) both read it
here, so they see the same bytes decoded the same way.

A file that cannot be used as a whole (not a regular file, a symlink, over ``RULE_FILE_LIMIT``, not UTF-8)
has an ``error`` and no lines: none of its rules apply, and the trust check counts it as something the
project asks that needs trust (never as an empty file). A UTF-8 byte-order mark is dropped; lines are split
as ``str.splitlines`` does (CRLF included); a line that is not a JSON object (a NUL in it, say) is
``foreign``. Standard library only.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from harness.rule_lines import split_rule_lines

__all__ = ["RULE_FILE_LIMIT", "RuleLines", "read_rule_lines"]

RULE_FILE_LIMIT: Final = 1024 * 1024
"""A rule file is small; anything bigger is not one."""


@dataclass(frozen=True, slots=True)
class RuleLines:
    """A rule file as read: ``objects`` (line number, JSON object), the numbers of the ``foreign`` lines
    (neither blank, a ``#`` comment nor a JSON object), ``exists``, and ``error``: why it cannot be used."""

    objects: tuple[tuple[int, dict[str, Any]], ...] = ()
    foreign: tuple[int, ...] = ()
    exists: bool = False
    error: str | None = None


def _bytes(path: Path) -> bytes | RuleLines:
    """The file's bytes, or the ``RuleLines`` that says why there are none (non-blocking: a FIFO never
    hangs; a symlink is not followed)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return RuleLines()
    except OSError as exc:
        why = (
            "is a symbolic link (not followed)"
            if exc.errno == errno.ELOOP
            else f"cannot be opened ({exc.strerror})"
        )
        return RuleLines(exists=True, error=why)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return RuleLines(exists=True, error="is not a regular file")
        if info.st_size > RULE_FILE_LIMIT:
            return RuleLines(exists=True, error=f"is larger than {RULE_FILE_LIMIT // 1024} KiB")
        chunks: list[bytes] = []
        size = 0
        while size <= RULE_FILE_LIMIT and (chunk := os.read(fd, RULE_FILE_LIMIT + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        return RuleLines(exists=True, error=f"cannot be read ({exc.strerror})")
    finally:
        os.close(fd)
    if size > RULE_FILE_LIMIT:  # it grew while read
        return RuleLines(exists=True, error=f"is larger than {RULE_FILE_LIMIT // 1024} KiB")
    return b"".join(chunks)


def read_rule_lines(path: Path) -> RuleLines:
    """``path`` as the trust check and the rule store see it (blocking)."""
    data = _bytes(path)
    if isinstance(data, RuleLines):
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return RuleLines(exists=True, error=f"is not UTF-8 text (byte {exc.start})")
    objects, foreign = split_rule_lines(text)
    return RuleLines(tuple(objects), tuple(foreign), exists=True)
