"""``Policy``: allow, deny or ask for each tool call, by tool name, hints, paths and parsed shell commands.

A ``Policy`` is a ``ToolMiddleware``. Its rules are checked in order and the first that matches decides;
none matching gives ``default``. A shell command is split (with a real bash parser) into its simple
commands, including ``$(...)``, backticks, pipes and the parts of ``&&``/``;`` lists, and each is judged
alone; a redirection that writes a file (``>``, ``>>``...) is judged as a write of that path. The
verdict of the whole command is the strictest of its parts (deny > ask > allow); a command that cannot
be parsed is ``ASK`` unless a rule on the tool itself (``Rule.tool``, ``Rule.hints``) decides it.

ASK pauses through the harness contract (``Approval``); a resumed call whose approval was granted runs,
a denied one gets ``Denied: <reason>``. DENY gives the error result ``Denied: <reason>``.

``PermissionStore`` keeps "always" answers as rules in a JSON-lines file (one rule a line, human-readable
and editable); ``mode_policy`` builds the policy of a session mode.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal

import anyio
import anyio.to_thread

from ._call import Call
from ._errors import HarnessUsageError
from ._messages import ToolCall
from ._pause import Approval
from ._shellparse import ShellParseError, SimpleCommand, parse_command
from ._tools import Hints, Result, ToolSpec
from .middleware import NextTool

__all__ = [
    "MODES",
    "Judgement",
    "PermissionStore",
    "Policy",
    "Rule",
    "Verdict",
    "mode_policy",
    "strictest",
]

log = logging.getLogger(__name__)

MODES = ("read-only", "default", "accept-edits", "plan", "full-access")
SHELL_TOOLS = frozenset({"shell"})
EDIT_TOOLS = ("write_file", "edit_file", "apply_patch")
_HINT_NAMES = ("read_only", "destructive", "idempotent", "open_world")


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
class _Subject:
    """What a rule is matched against: a call, or one part of a shell command."""

    tool: str
    hints: Hints | None
    words: tuple[str, ...] | None = None  # a shell part's words; None: not a judgeable command
    paths: tuple[Path, ...] = ()
    shell_part: bool = False


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
    def command(cls, prefix_or_pattern: str, verdict: Verdict, *, tool: str = "shell") -> Rule:
        """A word prefix (``git status`` matches ``git status -s``, not ``git stash``), or a glob over the
        whole command when it holds ``*``, ``?`` or ``[`` (``npm run *``)."""
        text = prefix_or_pattern.strip()
        if not text:
            raise HarnessUsageError("Rule.command needs a command prefix or pattern")
        if any(c in text for c in "*?["):
            return cls("command", Verdict(verdict), tool, command_pattern=text)
        try:
            words = tuple(shlex.split(text))
        except ValueError as e:
            raise HarnessUsageError(f"Rule.command: cannot split {text!r}: {e}") from e
        return cls("command", Verdict(verdict), tool, command_words=words)

    @classmethod
    def path(cls, tool: str, path_prefix: str | Path, verdict: Verdict) -> Rule:
        """Calls of ``tool`` (a name or glob) whose every path lies under ``path_prefix`` (absolute)."""
        p = Path(path_prefix)
        if not p.is_absolute():
            raise HarnessUsageError(f"Rule.path needs an absolute path prefix, got {str(path_prefix)!r}")
        return cls("path", Verdict(verdict), tool, path_prefix=os.path.normpath(p))

    def matches(self, s: _Subject) -> bool:
        if not fnmatchcase(s.tool, self.tool_glob):
            return False
        if self.kind == "tool":
            return True
        if self.kind == "hints":
            return s.hints is not None and all(getattr(s.hints, k) == v for k, v in self.hint_filter)
        if self.kind == "command":
            if s.words is None or not s.words:
                return False
            if self.command_pattern is not None:
                return fnmatchcase(shlex.join(s.words), self.command_pattern) or fnmatchcase(
                    " ".join(s.words), self.command_pattern
                )
            return s.words[: len(self.command_words)] == self.command_words
        assert self.path_prefix is not None
        prefix = Path(self.path_prefix)
        return bool(s.paths) and all(p == prefix or p.is_relative_to(prefix) for p in s.paths)

    def describe(self) -> str:
        """A sentence for people: ``allow shell commands starting with `git status```."""
        v = self.verdict.value
        if self.kind == "tool":
            return f"{v} {'every tool' if self.tool_glob == '*' else f'tool {self.tool_glob}'}"
        if self.kind == "hints":
            hs = ", ".join(f"{k}={v2}" for k, v2 in self.hint_filter)
            return f"{v} tools with {hs}"
        if self.kind == "command":
            if self.command_pattern is not None:
                return f"{v} {self.tool_glob} commands matching `{self.command_pattern}`"
            return f"{v} {self.tool_glob} commands starting with `{shlex.join(self.command_words)}`"
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
            unknown = set(hints) - set(_HINT_NAMES)
            if unknown:
                raise ValueError(f"unknown hints {sorted(unknown)}")
            return cls("hints", verdict, "*", tuple(sorted((str(k), bool(v)) for k, v in hints.items())))
        if kind == "command":
            return cls.command(str(data.get("pattern") or data["command"]), verdict, tool=tool)
        if kind == "path":
            return cls.path(tool, str(data["path"]), verdict)
        raise ValueError(f"unknown rule kind {kind!r}")


@dataclass(frozen=True, slots=True)
class Judgement:
    """A policy's verdict on one call, why, and (for shell) the verdict of each part."""

    verdict: Verdict
    reason: str
    parts: tuple[tuple[str, Verdict], ...] = ()


class Policy:
    """A ``ToolMiddleware`` that allows, denies or asks for each call (see the module docstring).

    ``cwd`` resolves relative paths for ``Rule.path`` (default: the process's working directory);
    ``name`` appears in reasons ("not allowed in plan mode"); ``shell_tools`` names the tools whose
    ``command`` input is parsed.
    """

    def __init__(
        self,
        rules: Sequence[Rule],
        default: Verdict = Verdict.ASK,
        *,
        cwd: Path | str | None = None,
        name: str | None = None,
        shell_tools: Iterable[str] = SHELL_TOOLS,
    ) -> None:
        for r in rules:
            if not isinstance(r, Rule):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise HarnessUsageError(f"Policy rules must be Rule objects, got {r!r}")
        self.rules: tuple[Rule, ...] = tuple(rules)
        self.default = Verdict(default)
        self.cwd = Path(cwd) if cwd is not None else Path(os.getcwd())
        self.name = name
        self.shell_tools = frozenset(shell_tools)

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        j = self.judge(call, context.spec)
        if j.verdict is Verdict.DENY:
            return Result.failure(f"Denied: {j.reason}", meta={"policy": "deny"})
        if j.verdict is Verdict.ASK:
            decision = context.decision()
            if decision is None:
                return context.needs_input([Approval(j.reason)])
            if not decision.allowed:
                return Result.failure(
                    f"Denied: {decision.reason or 'the user declined'}", meta={"policy": "declined"}
                )
        return await next(call, context)

    # --- judging ---------------------------------------------------------------------------------

    def judge(self, call: ToolCall, spec: ToolSpec | None = None) -> Judgement:
        hints = spec.hints if spec is not None else None
        if call.name in self.shell_tools and isinstance(call.input.get("command"), str):
            return self._judge_shell(call, hints)
        subject = _Subject(call.name, hints, paths=self._paths_of(call))
        verdict, rule = self._first(subject)
        return Judgement(verdict, self._reason(call.name, _summary(call), verdict, rule))

    def _first(self, s: _Subject) -> tuple[Verdict, Rule | None]:
        for r in self.rules:
            if r.matches(s):
                return r.verdict, r
        return self.default, None

    def _judge_shell(self, call: ToolCall, hints: Hints | None) -> Judgement:
        command = str(call.input["command"])
        cwd = self._norm(str(call.input.get("cwd") or "."))
        try:
            parts = parse_command(command)
        except ShellParseError as e:
            # Only rules on the tool itself can decide a command nobody can read; else ask.
            s = _Subject(call.name, hints, None, (cwd,), shell_part=True)
            for r in self.rules:
                if r.kind in ("tool", "hints") and r.matches(s):
                    return Judgement(r.verdict, self._reason(call.name, f"`{command}`", r.verdict, r))
            return Judgement(Verdict.ASK, f"{call.name}: `{command}` ({e}; review it)")
        judged: list[tuple[str, Verdict, Rule | None]] = []
        for part in parts:
            words = None if part.dynamic else part.words
            v, rule = self._first(_Subject(call.name, hints, words, (cwd,), shell_part=True))
            judged.append((part.text or " ".join(part.words), v, rule))
            for target in part.writes:
                s = _Subject(call.name, hints, None, (self._norm(target, cwd),), shell_part=True)
                v, rule = self._first(s)
                judged.append((f"> {target}", v, rule))
        verdict = strictest(v for _, v, _ in judged)
        deciding = [(t, r) for t, v, r in judged if v is verdict]
        if len(parts) == 1 and not parts[0].writes:
            reason = self._reason(call.name, f"`{command}`", verdict, deciding[0][1])
        else:
            which = "; ".join(f"`{t}`" for t, _ in deciding)
            rule = next((r for _, r in deciding if r is not None), None)
            reason = self._reason(call.name, f"`{command}`", verdict, rule) + f" (because of {which})"
        return Judgement(verdict, reason, tuple((t, v) for t, v, _ in judged))

    def _reason(self, tool: str, what: str, verdict: Verdict, rule: Rule | None) -> str:
        if verdict is Verdict.ASK:
            return f"{tool}: {what}"
        by = f"rule: {rule.describe()}" if rule is not None else "the default"
        if verdict is Verdict.DENY and rule is None and self.name:
            return f"{tool} is not allowed in {self.name} mode: {what}"
        return f"{tool} {what} ({by})"

    def _norm(self, path: str, base: Path | None = None) -> Path:
        p = Path(path)
        return Path(os.path.normpath(p if p.is_absolute() else (base or self.cwd) / p))

    def _paths_of(self, call: ToolCall) -> tuple[Path, ...]:
        inp = call.input
        if call.name == "apply_patch" and isinstance(inp.get("patch"), str):
            from .tools._patch import PatchError, parse_patch

            try:
                fps = parse_patch(str(inp["patch"]))
            except PatchError:
                return ()
            raw = [p for fp in fps for p in (fp.old_path, fp.new_path) if p is not None]
            return tuple(self._norm(p) for p in raw)
        if isinstance(inp.get("path"), str):
            return (self._norm(str(inp["path"])),)
        if call.name in ("glob", "grep", "list_dir"):
            return (self.cwd,)
        return ()

    # --- "always" answers ------------------------------------------------------------------------

    def suggest(self, call: ToolCall, verdict: Verdict, spec: ToolSpec | None = None) -> list[Rule]:
        """The narrow rules that would remember ``verdict`` for calls like ``call`` ("always" answers).

        Shell: one command-prefix rule per part that was not already allowed (``git status``, ``pytest``;
        the whole command for wrappers like ``bash -c``, ``xargs``, ``sudo``). File tools: the tool under
        the file's directory. Other tools: the tool by name.
        """
        if call.name in self.shell_tools and isinstance(call.input.get("command"), str):
            command = str(call.input["command"])
            try:
                parts = parse_command(command)
            except ShellParseError:
                return []
            hints = spec.hints if spec is not None else None
            out: list[Rule] = []
            for part in parts:
                if part.dynamic or not part.words:
                    continue
                v, _ = self._first(_Subject(call.name, hints, part.words, shell_part=True))
                if v is Verdict.ALLOW and verdict is Verdict.ALLOW:
                    continue
                rule = Rule.command(shlex.join(_prefix(part)), verdict, tool=call.name)
                if rule not in out:
                    out.append(rule)
            return out
        paths = self._paths_of(call)
        if paths and call.name not in ("glob", "grep", "list_dir"):
            dirs = sorted({p.parent for p in paths})
            common = Path(os.path.commonpath([str(d) for d in dirs]))
            return [Rule.path(call.name, common, verdict)]
        return [Rule.tool(call.name, verdict)]


# Commands whose first word says little: remember them whole, never by prefix.
_WRAPPERS = frozenset(
    {"sudo", "su", "env", "xargs", "bash", "sh", "zsh", "dash", "fish", "eval", "exec", "nohup", "time",
     "timeout", "nice", "ionice", "command", "builtin", "source", ".", "find", "python", "python3", "node",
     "perl", "ruby", "php", "awk", "sed", "ssh", "docker", "kubectl", "watch", "parallel", "strace"}
)  # fmt: skip
# Tools whose second word is a subcommand worth keeping in the prefix (``git status``).
_SUBCOMMAND_TOOLS = frozenset(
    {"git", "npm", "pnpm", "yarn", "cargo", "go", "uv", "pip", "pip3", "poetry", "make", "dotnet", "gradle",
     "mvn", "bun", "deno", "gh", "hatch", "pdm", "rustup", "brew", "apt", "apt-get", "conda"}
)  # fmt: skip


def _prefix(part: SimpleCommand) -> tuple[str, ...]:
    words = part.words
    if Path(words[0]).name in _WRAPPERS:
        return words
    if words[0] in _SUBCOMMAND_TOOLS and len(words) > 1 and not words[1].startswith("-"):
        return words[:2]
    return words[:1]


def _summary(call: ToolCall) -> str:
    inp = call.input
    for key in ("path", "pattern", "command"):
        if isinstance(inp.get(key), str):
            return f"`{inp[key]}`"
    return ""


# --- the store of "always" answers ----------------------------------------------------------------

_HEADER = (
    "# acp-agent permission rules: one JSON object a line, checked before the mode's rules.\n"
    "# Delete a line to forget a rule. Kinds: tool, hints, command (prefix or glob pattern), path (prefix).\n"
)


class PermissionStore:
    """Rules remembered from "always" answers, in a JSON-lines file (``#`` lines are comments).

    One a project (``for_project``) and one a user (``for_user``). Writes replace the file atomically
    (a temporary file, then ``os.replace``).
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
        return await anyio.to_thread.run_sync(self._read)

    async def add(self, rule: Rule) -> bool:
        """Remember ``rule``; False when it was there already. A rule for the same subject with the
        other verdict is replaced."""
        async with self._lock:
            rules = await anyio.to_thread.run_sync(self._read)
            if rule in rules:
                return False
            same = [r for r in rules if _same_subject(r, rule)]
            rules = [r for r in rules if r not in same] + [rule]
            await self._write(rules)
            return True

    async def remove(self, rule: Rule) -> bool:
        """Forget ``rule``; False when it was not there."""
        async with self._lock:
            rules = await anyio.to_thread.run_sync(self._read)
            if rule not in rules:
                return False
            await self._write([r for r in rules if r != rule])
            return True

    def _read(self) -> list[Rule]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        out: list[Rule] = []
        for n, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            try:
                out.append(Rule.from_dict(json.loads(line)))
            except (ValueError, KeyError, TypeError, HarnessUsageError) as e:
                log.warning("%s:%d: skipped a rule that cannot be read: %s", self.path, n, e)
        return out

    async def _write(self, rules: list[Rule]) -> None:
        text = _HEADER + "".join(json.dumps(r.to_dict(), ensure_ascii=False) + "\n" for r in rules)
        with anyio.CancelScope(shield=True), anyio.move_on_after(10):
            await anyio.to_thread.run_sync(_atomic_write, self.path, text)


def _same_subject(a: Rule, b: Rule) -> bool:
    return (a.kind, a.tool_glob, a.hint_filter, a.command_words, a.command_pattern, a.path_prefix) == (
        b.kind,
        b.tool_glob,
        b.hint_filter,
        b.command_words,
        b.command_pattern,
        b.path_prefix,
    )


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with _suppress_os_error():
            os.unlink(tmp)
        raise


class _suppress_os_error:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return isinstance(exc[1], OSError)


# --- modes ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Mode:
    rules: tuple[Rule, ...]
    default: Verdict
    keep_allows: bool = True  # whether remembered allow rules apply in this mode


def mode_policy(mode: str, roots: Any, remembered: Sequence[Rule] = ()) -> Policy:
    """The policy of a session mode (one of ``MODES``) over ``roots`` (a ``Root`` or absolute paths).

    ``remembered`` rules (from ``PermissionStore``) come first; in ``read-only`` and ``plan`` only their
    denials apply. ``plan_*`` tools run in every mode.
    """
    paths = [Path(p) for p in getattr(roots, "paths", roots)]
    if not paths:
        raise HarnessUsageError("mode_policy needs at least one root")
    plan_tools = Rule.tool("plan_*", Verdict.ALLOW)
    reads = Rule.hints(Verdict.ALLOW, read_only=True)
    if mode in ("read-only", "plan"):
        m = _Mode((reads, plan_tools), Verdict.DENY, keep_allows=False)
    elif mode == "default":
        m = _Mode((reads, plan_tools), Verdict.ASK)
    elif mode == "accept-edits":
        edits = tuple(Rule.path(t, p, Verdict.ALLOW) for p in paths for t in EDIT_TOOLS)
        m = _Mode((reads, plan_tools, *edits), Verdict.ASK)
    elif mode == "full-access":
        m = _Mode((Rule.tool("*", Verdict.ALLOW),), Verdict.ALLOW)
    else:
        raise HarnessUsageError(f"unknown mode {mode!r}; one of {', '.join(MODES)}")
    kept = [r for r in remembered if m.keep_allows or r.verdict is Verdict.DENY]
    return Policy([*kept, *m.rules], m.default, cwd=paths[0], name=mode)
