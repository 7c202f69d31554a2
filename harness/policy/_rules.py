"""Policy rules: verdicts, and what one rule matches (a tool, its hints, a shell command, paths).

A command rule holds words (a prefix: ``git status`` matches ``git status -s``, not ``git stash``), a glob
over the whole command (``npm run *``), or, ``exact``, the whole command. How it matches depends on what
it does (the README's "What a shell rule matches" says the same):

- A rule that *allows* matches a simple command only when the parser fully understands it (every word a
  plain literal, a plain ``$name`` or a substitution judged on its own: ``_shellcheck``), it has no
  variable assignment but harmless ones (``LC_ALL=C``), is not a wrapper (``env``, ``nice``, ``xargs``,
  ``bash -c``, ``sudo``...: the policy judges what a transparent wrapper runs instead), and uses no option
  that writes or executes, or changes the directory, beyond the rule's own words (``_shelloptions.UNSAFE_OPTIONS``: ``sort -o``, ``git -c``, ``find -exec``...).
  An exact rule matches the very command, assignments included, and nothing else.
- A rule that *denies* or *asks* matches on the words alone, also inside wrappers (``sudo rm``,
  ``env X=1 rm``, ``bash -c 'rm x'`` all match "deny ``rm``").
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal

from .._errors import HarnessUsageError
from .._tools import Hints
from ._shelloptions import unsafe_reason
from ._shellparse import SimpleCommand
from ._shellwrappers import commands_within, harmful_assigns, unwrap

__all__ = ["HINT_NAMES", "Rule", "RuleKind", "Subject", "Verdict", "strictest"]

HINT_NAMES = ("read_only", "destructive", "idempotent", "open_world")


class Verdict(StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


_RANK = {Verdict.ALLOW: 0, Verdict.ASK: 1, Verdict.DENY: 2}


def strictest(verdicts: Iterable[Verdict]) -> Verdict:
    """deny > ask > allow; no verdicts at all is allow."""
    return max(verdicts, key=_RANK.__getitem__, default=Verdict.ALLOW)


RuleKind = Literal["tool", "hints", "command", "path"]


@dataclass(frozen=True, slots=True)
class Subject:
    """What a rule is matched against: a call, or one simple command of a shell command.

    ``hints`` are None when unknown or not trusted (an MCP server's annotations); ``command`` is None when
    the call is not a judgeable command (its name comes from an expansion)."""

    tool: str
    hints: Hints | None
    command: SimpleCommand | None = None
    paths: tuple[Path, ...] = ()


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule; build with ``Rule.tool``, ``Rule.hints``, ``Rule.command`` or ``Rule.path``."""

    kind: RuleKind
    verdict: Verdict
    tool_glob: str = "*"
    hint_filter: tuple[tuple[str, bool], ...] = ()
    command_words: tuple[str, ...] = ()
    command_pattern: str | None = None
    path_prefix: str | None = None
    exact: bool = False

    @classmethod
    def tool(cls, name_or_glob: str, verdict: Verdict) -> Rule:
        """Every call of the tool(s) named (``*``/``?`` globs: ``mcp_*``)."""
        return cls("tool", Verdict(verdict), name_or_glob)

    @classmethod
    def hints(
        cls,
        verdict: Verdict,
        *,
        read_only: bool | None = None,
        destructive: bool | None = None,
        idempotent: bool | None = None,
        open_world: bool | None = None,
    ) -> Rule:
        """Calls whose tool's hints have every value given (``Rule.hints(Verdict.ALLOW, read_only=True)``)."""
        given = {
            "read_only": read_only,
            "destructive": destructive,
            "idempotent": idempotent,
            "open_world": open_world,
        }
        chosen = tuple(sorted((k, v) for k, v in given.items() if v is not None))
        if not chosen:
            raise HarnessUsageError("Rule.hints needs at least one hint, e.g. read_only=True")
        return cls("hints", Verdict(verdict), "*", chosen)

    @classmethod
    def command(
        cls, prefix_or_pattern: str, verdict: Verdict, *, tool: str = "shell", exact: bool = False
    ) -> Rule:
        """A word prefix (``git status`` matches ``git status -s``, not ``git stash``), a glob over the
        whole command when it holds ``*``, ``?`` or ``[`` (``npm run *``), or with ``exact`` the whole
        command (assignments included) and nothing else. See the module docstring for what each matches."""
        text = prefix_or_pattern.strip()
        if not text:
            raise HarnessUsageError("Rule.command needs a command prefix or pattern")
        if not exact and any(c in text for c in "*?["):
            return cls("command", Verdict(verdict), tool, command_pattern=text)
        try:
            words = tuple(shlex.split(text))
        except ValueError as e:
            raise HarnessUsageError(f"Rule.command: cannot split {text!r}: {e}") from e
        return cls("command", Verdict(verdict), tool, command_words=words, exact=exact)

    @classmethod
    def path(cls, tool: str, path_prefix: str | Path, verdict: Verdict) -> Rule:
        """Calls of ``tool`` (a name or glob) whose every path lies under ``path_prefix`` (absolute)."""
        p = Path(path_prefix)
        if not p.is_absolute():
            raise HarnessUsageError(f"Rule.path needs an absolute path prefix, got {str(path_prefix)!r}")
        return cls("path", Verdict(verdict), tool, path_prefix=os.path.normpath(p))

    def matches(self, s: Subject) -> bool:
        if not fnmatchcase(s.tool, self.tool_glob):
            return False
        match self.kind:
            case "tool":
                return True
            case "hints":
                return s.hints is not None and all(getattr(s.hints, k) == v for k, v in self.hint_filter)
            case "command":
                return s.command is not None and self._matches_command(s.command)
            case "path":
                assert self.path_prefix is not None
                prefix = Path(self.path_prefix)
                return bool(s.paths) and all(p == prefix or p.is_relative_to(prefix) for p in s.paths)

    def _matches_command(self, cmd: SimpleCommand) -> bool:
        if cmd.dynamic or not cmd.words:
            return False
        if self.verdict is not Verdict.ALLOW:
            return any(self._words_match(c) for c in commands_within(cmd))
        if cmd.opaque:  # the parser does not fully understand it: no "allow" covers it (see _shellcheck)
            return False
        if self.exact:
            return not any(cmd.expanded) and (*cmd.assigns, *cmd.words) == self.command_words
        if harmful_assigns(cmd.assigns) or unwrap(cmd) is not None or not self._words_match(cmd):
            return False
        return unsafe_reason(cmd, self._literal_words()) is None

    def _words_match(self, cmd: SimpleCommand) -> bool:
        if not cmd.words or cmd.dynamic:
            return False
        if self.command_pattern is not None:
            return fnmatchcase(shlex.join(cmd.words), self.command_pattern) or fnmatchcase(
                " ".join(cmd.words), self.command_pattern
            )
        return cmd.words[: len(self.command_words)] == self.command_words

    def _literal_words(self) -> int:
        """How many leading words of a command the rule itself names (the user's: not second-guessed)."""
        if self.command_pattern is None:
            return len(self.command_words)
        words = self.command_pattern.split()
        return next((i for i, w in enumerate(words) if any(c in w for c in "*?[")), len(words))

    def describe(self) -> str:
        """A sentence for people: ``allow shell commands starting with `git status```."""
        v = self.verdict.value
        match self.kind:
            case "tool":
                return f"{v} {'every tool' if self.tool_glob == '*' else f'tool {self.tool_glob}'}"
            case "hints":
                hs = ", ".join(f"{k}={v2}" for k, v2 in self.hint_filter)
                return f"{v} tools with {hs}"
            case "command":
                if self.command_pattern is not None:
                    return f"{v} {self.tool_glob} commands matching `{self.command_pattern}`"
                if self.exact:
                    return f"{v} the {self.tool_glob} command `{shlex.join(self.command_words)}` exactly"
                return f"{v} {self.tool_glob} commands starting with `{shlex.join(self.command_words)}`"
            case "path":
                return f"{v} {self.tool_glob} under {self.path_prefix}"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"verdict": self.verdict.value, "kind": self.kind, "tool": self.tool_glob}
        if self.kind == "hints":
            d["hints"] = dict(self.hint_filter)
        elif self.kind == "command":
            if self.command_pattern is not None:
                d["pattern"] = self.command_pattern
            else:
                d["command"] = shlex.join(self.command_words)
            if self.exact:
                d["exact"] = True
        elif self.kind == "path":
            d["path"] = self.path_prefix
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Rule:
        verdict = Verdict(str(data["verdict"]))
        kind = str(data.get("kind", ""))
        tool = str(data.get("tool", "*"))
        if kind == "tool":
            return cls.tool(tool, verdict)
        if kind == "hints":
            hints: Mapping[str, Any] = data["hints"]
            unknown = set(hints) - set(HINT_NAMES)
            if unknown:
                raise ValueError(f"unknown hints {sorted(unknown)}")
            return cls("hints", verdict, "*", tuple(sorted((str(k), bool(v)) for k, v in hints.items())))
        if kind == "command":
            exact = data.get("exact") is True
            text = str(data["command"] if exact else data.get("pattern") or data["command"])
            return cls.command(text, verdict, tool=tool, exact=exact)
        if kind == "path":
            return cls.path(tool, str(data["path"]), verdict)
        raise ValueError(f"unknown rule kind {kind!r}")
