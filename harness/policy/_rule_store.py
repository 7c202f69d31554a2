"""``PermissionStore``: the rules remembered from "always" answers, one JSON object a line in a file the user
can read and edit (re-exported by ``harness.policy``; it stores ``harness.policy._rules.Rule``)."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from .._errors import HarnessUsageError
from ..atomic import write_text_atomic
from ..rule_lines import split_rule_lines
from ._rules import Rule

__all__ = ["PermissionFileError", "PermissionStore"]

log = logging.getLogger("harness.policy")

_HEADER = (
    "# acp-agent permission rules: one JSON object a line, checked before the mode's rules.\n"
    "# Delete a line to forget a rule. Kinds: tool, hints, command (prefix or glob pattern), path (prefix).\n"
)


class PermissionFileError(OSError):
    """The rule file's path holds something that is not a rule file: the store will not replace it."""


_MAX_RULES_BYTES = 1024 * 1024  # a rule file is small; anything bigger is not ours


class PermissionStore:
    """Rules remembered from "always" answers, in a JSON-lines file (``#`` lines are comments).

    One a project (``for_project``) and one a user (``for_user``). Writes replace the file atomically
    (a temporary file beside it, then ``os.replace``), and only a file that is the store's own: absent, or
    a regular file (not a symlink) whose every line is blank, a ``#`` comment or a JSON object; anything else
    (``~/.bashrc``, a link, a FIFO) raises ``PermissionFileError`` and is left as it is. Reads never block on
    a FIFO or a device and read nothing from a file above 1 MiB.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = anyio.Lock()

    @classmethod
    def for_project(cls, cwd: Path | str, folder: str) -> PermissionStore:
        """The store of the project at ``cwd``: ``permissions.jsonl`` in its ``folder`` (the application's
        project folder, ``.acp-agent`` for ``acp_agent``)."""
        return cls(Path(cwd) / folder / "permissions.jsonl")

    @classmethod
    def for_user(cls, app: str, config_home: Path | str | None = None) -> PermissionStore:
        """The user's store: ``permissions.jsonl`` in the application's folder ``app`` of the XDG
        configuration home."""
        base = Path(config_home or os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
        return cls(base / app / "permissions.jsonl")

    async def rules(self) -> list[Rule]:
        return await anyio.to_thread.run_sync(self.rules_sync)

    def rules_sync(self) -> list[Rule]:
        """The rules (blocking: call it in a worker thread)."""
        return self._read()

    async def add(self, rule: Rule) -> bool:
        """Remember ``rule``; False when it was there already. A rule for the same subject with the
        other verdict is replaced. Raises ``PermissionFileError`` when the file is not a rule file."""
        async with self._lock:
            rules = await anyio.to_thread.run_sync(self._read_own)
            if rule in rules:
                return False
            same = [r for r in rules if _same_subject(r, rule)]
            rules = [r for r in rules if r not in same] + [rule]
            await self._write(rules)
            return True

    async def remove(self, rule: Rule) -> bool:
        """Forget ``rule``; False when it was not there."""
        async with self._lock:
            rules = await anyio.to_thread.run_sync(self._read_own)
            if rule not in rules:
                return False
            await self._write([r for r in rules if r != rule])
            return True

    def _lines(self) -> tuple[list[tuple[int, dict[str, Any]]], list[int]] | None:
        """The file's JSON-object lines (numbered) and the numbers of its other lines; None when it is
        absent. Raises ``PermissionFileError`` for a file that cannot be used as a whole. (A subclass may
        read the file through another reader: the project's store reads it as the trust check does.)"""
        text = self._text()
        if text is None:
            return None
        return split_rule_lines(text)

    def _text(self) -> str | None:
        """The file's text; None when it is absent. Raises ``PermissionFileError`` for what is not a
        regular UTF-8 file of a sensible size (opened non-blocking: a FIFO must not hang the session)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return None
        except OSError as e:
            raise PermissionFileError(f"{self.path} cannot be opened as a rule file: {e.strerror}") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise PermissionFileError(f"{self.path} is not a regular file")
            if info.st_size > _MAX_RULES_BYTES:
                raise PermissionFileError(f"{self.path} is too big to be a rule file")
            with os.fdopen(fd, "rb") as f:
                fd = -1
                data = f.read(_MAX_RULES_BYTES + 1)
        except OSError as e:
            raise PermissionFileError(f"{self.path} cannot be read: {e.strerror or e}") from None
        finally:
            if fd >= 0:
                os.close(fd)
        if len(data) > _MAX_RULES_BYTES:
            raise PermissionFileError(f"{self.path} is too big to be a rule file")
        try:
            # Strict: a rule file that does not decode is not read at all (never "leniently", with
            # replacement characters, which is how one reader once saw rules another did not).
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise PermissionFileError(f"{self.path} is not UTF-8 text (byte {e.start})") from None

    def _entries(self) -> tuple[list[tuple[dict[str, Any], Rule]], list[int]] | None:
        """The rules with the objects they were read from, and the numbers of the foreign lines."""
        lines = self._lines()
        if lines is None:
            return None
        objects, foreign = lines
        out: list[tuple[dict[str, Any], Rule]] = []
        for n, data in objects:
            try:
                out.append((data, _rule_from_dict(data)))
            except (ValueError, KeyError, TypeError, AttributeError, HarnessUsageError) as e:
                log.warning("%s:%d: skipped a rule that cannot be read: %s", self.path, n, e)
        return out, foreign

    def _applies(self, data: dict[str, Any], rule: Rule) -> bool:
        """Whether a rule read (from ``data``) applies; every one does here (see the project's store)."""
        return True

    def _read(self) -> list[Rule]:
        try:
            entries = self._entries()
        except PermissionFileError as e:
            log.warning("%s; its rules are not used", e)
            return []
        if entries is None:
            return []
        found, foreign = entries
        for n in foreign:
            log.warning("%s:%d: skipped a line that is not a rule", self.path, n)
        return [rule for data, rule in found if self._applies(data, rule)]

    def _read_own(self) -> list[Rule]:
        """The rules, before a write: raises ``PermissionFileError`` when the file is not the store's."""
        entries = self._entries()
        if entries is None:
            return []
        found, foreign = entries
        if foreign:
            raise PermissionFileError(
                f"{self.path} is not a rule file (line {foreign[0]} is not a JSON rule); "
                "it is left as it is: fix that line or point the configuration at another file"
            )
        return [rule for _data, rule in found]

    async def _write(self, rules: list[Rule]) -> None:
        text = _HEADER + "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in rules)
        with anyio.CancelScope(shield=True), anyio.move_on_after(10):
            await anyio.to_thread.run_sync(write_text_atomic, self.path, text)


def _same_subject(a: Rule, b: Rule) -> bool:
    return (
        a.kind,
        a.tool_glob,
        a.hint_filter,
        a.command_words,
        a.command_pattern,
        a.path_prefix,
        a.exact,
    ) == (
        b.kind,
        b.tool_glob,
        b.hint_filter,
        b.command_words,
        b.command_pattern,
        b.path_prefix,
        b.exact,
    )


def _rule_from_dict(data: dict[str, Any]) -> Rule:
    return Rule.from_dict(data)
