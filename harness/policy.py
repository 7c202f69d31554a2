"""``Policy``: allow, deny or ask for each tool call, by tool name, hints, paths and parsed shell commands.

A ``Policy`` is a ``ToolMiddleware``. Its rules are checked in order and the first that matches decides;
none matching gives ``default``. A shell command is split (with a real bash parser) into its simple
commands, including ``$(...)``, backticks, pipes and the parts of ``&&``/``;`` lists, and each is judged
alone; a wrapper that only runs another command (``nice``, ``timeout``, ``env``, ``bash -c '...'``) is
judged by what it runs; a redirection that writes a file (``>``, ``>>``...) is judged as a write of that
path. The verdict of the whole command is the strictest of its parts (deny > ask > allow); a command
that cannot be parsed is ``ASK`` unless a rule on the tool itself (``Rule.tool``, ``Rule.hints``) decides it.
What a command rule matches (assignments, wrappers, options that write or execute) is in ``_rules``.

Two things no rule can change: a write of a protected path (``harness.protected``) asks in every mode
but ``full-access``, and an MCP server's tool annotations (``readOnlyHint``) are hints, believed only for
the servers named trusted.

ASK pauses through the harness contract (``Approval``); a resumed call whose approval was granted runs,
a denied one gets ``Denied: <reason>``. DENY gives the error result ``Denied: <reason>``.

``PermissionStore`` keeps "always" answers as rules in a JSON-lines file (one rule a line, human-readable
and editable); ``mode_policy`` builds the policy of a session mode.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from ._errors import HarnessUsageError
from ._policy import SHELL_TOOLS, Judgement, Policy
from ._rules import Rule, Verdict, strictest
from .protected import PROTECTED, ProtectedPaths

__all__ = [
    "MODES",
    "PROTECTED",
    "SHELL_TOOLS",
    "Judgement",
    "PermissionStore",
    "Policy",
    "ProtectedPaths",
    "Rule",
    "Verdict",
    "mode_policy",
    "strictest",
]

log = logging.getLogger(__name__)

MODES = ("read-only", "default", "accept-edits", "plan", "full-access")
EDIT_TOOLS = ("write_file", "edit_file", "apply_patch")


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


def mode_policy(
    mode: str,
    roots: Any,
    remembered: Sequence[Rule] = (),
    *,
    protected: ProtectedPaths | None = None,
    trusted_servers: Iterable[str] = (),
) -> Policy:
    """The policy of a session mode (one of ``MODES``) over ``roots`` (a ``Root`` or absolute paths).

    ``remembered`` rules (from ``PermissionStore``) come first; in ``read-only`` and ``plan`` only their
    denials apply. ``plan_*`` tools run in every mode. Every mode but ``full-access`` asks before a write
    of a protected path (``protected``; by default ``PROTECTED`` below the roots). ``trusted_servers``: the
    MCP servers whose ``readOnlyHint`` lets their tools run as reads.
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
    guard = None if mode == "full-access" else protected or ProtectedPaths.of(paths)
    return Policy(
        [*kept, *m.rules],
        m.default,
        cwd=paths[0],
        name=mode,
        protected=guard,
        trusted_servers=trusted_servers,
    )
