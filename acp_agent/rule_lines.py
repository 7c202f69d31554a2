"""The one reader of the permission files (``permissions.jsonl``): the trust check (before ``initialize`` is
answered), the project's rule store (``coding._trust.ProjectRuleStore``) and the user's
(``coding._trust.RuleFileStore``) all read them here, so they see the same bytes decoded the same way; the bytes come from
``acp_agent.small_files`` (a project's file through no symlink; the user's own file through its own link, as
the user's ``config.toml`` is: a dotfiles manager's, or home-manager's into the Nix store).

A file that cannot be used as a whole (not a regular file, a symlink, over ``RULE_FILE_LIMIT``, not UTF-8)
has an ``error`` and no lines: none of its rules apply, and the trust check counts it as something the
project asks that needs trust (never as an empty file). A UTF-8 byte-order mark is dropped; lines are split
as ``str.splitlines`` does (CRLF included); a line that is not a JSON object (a NUL in it, say) is
``foreign``. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from harness.rule_lines import split_rule_lines

from .small_files import UnreadableFile, read_small_file

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


def read_rule_lines(path: Path, *, beneath: Path | None = None, follow: bool = False) -> RuleLines:
    """``path`` as the trust check and the rule stores see it (blocking). ``beneath``: the project folder
    (no symlink followed from it down, ``.acp-agent`` included); ``follow``: the user's own file, read
    through its link when it is one."""
    try:
        data = read_small_file(path, RULE_FILE_LIMIT, beneath=beneath, follow=follow)
    except UnreadableFile as exc:
        return RuleLines(exists=True, error=str(exc))
    if data is None:
        return RuleLines()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return RuleLines(exists=True, error=f"is not UTF-8 text (byte {exc.start})")
    objects, foreign = split_rule_lines(text)
    return RuleLines(tuple(objects), tuple(foreign), exists=True)
