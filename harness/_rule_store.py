"""``PermissionStore``: the rules remembered from "always" answers, one JSON object a line in a file the user
can read and edit (re-exported by ``harness.policy``; it stores ``harness._rules.Rule``)."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

import anyio
import anyio.to_thread

from ._errors import HarnessUsageError
from ._rules import Rule
from .atomic import write_text_atomic

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
    def for_project(cls, cwd: Path | str) -> PermissionStore:
        return cls(Path(cwd) / ".acp-agent" / "permissions.jsonl")

    @classmethod
    def for_user(cls, config_home: Path | str | None = None) -> PermissionStore:
        base = Path(config_home or os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
        return cls(base / "acp-agent" / "permissions.jsonl")

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

    def _text(self) -> str | None:
        """The file's text; None when it is absent. Raises ``PermissionFileError`` for what is not a
        regular file of a sensible size (opened non-blocking: a FIFO must not hang the session)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return None
        except OSError as e:
            raise PermissionFileError(f"{self.path} cannot be opened as a rule file: {e.strerror}") from None
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(f.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise PermissionFileError(f"{self.path} is not a regular file")
            if info.st_size > _MAX_RULES_BYTES:
                raise PermissionFileError(f"{self.path} is too big to be a rule file")
            return f.read(_MAX_RULES_BYTES + 1).decode("utf-8", "replace")

    def _parse(self, text: str) -> tuple[list[Rule], list[int]]:
        """The readable rules, and the numbers of the lines that are not JSON objects at all."""
        out: list[Rule] = []
        foreign: list[int] = []
        for n, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                data = json.loads(line)
            except ValueError:
                foreign.append(n)
                continue
            if not isinstance(data, dict):
                foreign.append(n)
                continue
            try:
                out.append(_rule_from_dict(data))  # pyright: ignore[reportUnknownArgumentType]
            except (ValueError, KeyError, TypeError, HarnessUsageError) as e:
                log.warning("%s:%d: skipped a rule that cannot be read: %s", self.path, n, e)
        return out, foreign

    def _read(self) -> list[Rule]:
        try:
            text = self._text()
        except PermissionFileError as e:
            log.warning("%s; its rules are not used", e)
            return []
        if text is None:
            return []
        rules, foreign = self._parse(text)
        for n in foreign:
            log.warning("%s:%d: skipped a line that is not a rule", self.path, n)
        return rules

    def _read_own(self) -> list[Rule]:
        """The rules, before a write: raises ``PermissionFileError`` when the file is not the store's."""
        text = self._text()
        if text is None:
            return []
        rules, foreign = self._parse(text)
        if foreign:
            raise PermissionFileError(
                f"{self.path} is not a rule file (line {foreign[0]} is not a JSON rule); "
                "it is left as it is: fix that line or point the configuration at another file"
            )
        return rules

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


def _rule_from_dict(data: dict[str, object]) -> Rule:
    return Rule.from_dict(data)
