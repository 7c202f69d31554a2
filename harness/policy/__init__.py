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

``PermissionStore`` (``_rule_store``, re-exported here) keeps "always" answers as rules in a JSON-lines file
(one rule a line, human-readable and editable); ``mode_policy`` builds the policy of a session mode.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._errors import HarnessUsageError
from ..protected import PROTECTED, ProtectedPaths
from ._policy import SHELL_TOOLS, Judgement, Policy
from ._rule_store import PermissionFileError, PermissionStore
from ._rules import Rule, Verdict, strictest

__all__ = [
    "MODES",
    "PROTECTED",
    "SHELL_TOOLS",
    "Judgement",
    "PermissionFileError",
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
