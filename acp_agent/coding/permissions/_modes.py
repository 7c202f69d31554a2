"""Session modes: each a ``harness.policy`` Policy over the session's roots, with the remembered
"always" answers of the project and the user first."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio.to_thread

from harness.policy import PermissionStore, Policy, ProtectedPaths, Rule, Verdict, mode_policy
from harness.protected import home_paths

from ...config import home_dir, user_config_dir
from ..opening import MODE_INFO, offered_modes
from ._protected import AGENT_PROTECTED, own_link_targets

if TYPE_CHECKING:
    from harness import Call, Result, ToolCall
    from harness.middleware import NextTool

__all__ = [
    "MODE_INFO",
    "WEB_TOOLS",
    "ModeState",
    "PolicyMiddleware",
    "coding_policy",
    "offered_modes",
    "protected_paths",
    "read_rules",
]

log = logging.getLogger(__name__)

WEB_TOOLS: Final = ("web_fetch", "web_search")


class ModeState:
    """The session's current mode, its policy, and the stores of remembered answers.

    ``stores[0]`` (the project's) receives new "always" answers; every store's rules apply, in order.
    ``protected``: the paths every mode but ``full-access`` asks before writing (default: the standard
    list below the roots); ``trusted_servers``: the MCP servers whose read-only hints are believed."""

    def __init__(
        self,
        mode: str,
        roots: Sequence[Path],
        stores: Sequence[PermissionStore],
        *,
        protected: ProtectedPaths | None = None,
        trusted_servers: Sequence[str] = (),
    ) -> None:
        self.offered = offered_modes()
        self.mode = mode if mode in self.offered else "default"
        if mode != self.mode:
            log.warning("mode %r is not offered here; starting in %r", mode, self.mode)
        self.roots = tuple(roots)
        self.stores = tuple(stores)
        self.protected = protected or ProtectedPaths.of(self.roots, patterns=AGENT_PROTECTED)
        self.trusted_servers = tuple(trusted_servers)
        self.remembered: list[Rule] = []
        self.policy: Policy = self._build()

    async def load(self) -> None:
        """(Re)read the remembered rules (one worker-thread hop for every store); the policy uses them
        from the next call on."""
        self.use(await anyio.to_thread.run_sync(read_rules, self.stores))

    def use(
        self,
        rules: Sequence[Rule],
        stores: Sequence[PermissionStore] | None = None,
        protected: ProtectedPaths | None = None,
    ) -> None:
        """The remembered rules read (``read_rules``, in a worker thread), and the stores and protected
        list they were read with when those changed; on the event loop."""
        if stores is not None:
            self.stores = tuple(stores)
        if protected is not None:
            self.protected = protected
        self.remembered = list(rules)
        self._rebuild()

    def set(self, mode: str) -> None:
        self.mode = mode
        self._rebuild()

    async def remember(self, rules: Sequence[Rule]) -> None:
        if not self.stores:
            return
        for rule in rules:
            try:
                await self.stores[0].add(rule)
            except OSError as exc:  # not a rule file (PermissionFileError) or not writable: not remembered
                log.warning("the answer is not remembered: %s", exc)
        await self.load()

    def _rebuild(self) -> None:
        self.policy = self._build()

    def _build(self) -> Policy:
        return coding_policy(
            self.mode,
            self.roots,
            self.remembered,
            protected=self.protected,
            trusted_servers=self.trusted_servers,
        )


def read_rules(stores: Sequence[PermissionStore]) -> list[Rule]:
    """Every store's rules, in order (blocking)."""
    return [rule for store in stores for rule in store.rules_sync()]


def coding_policy(
    mode: str,
    roots: Sequence[Path],
    remembered: Sequence[Rule] = (),
    *,
    protected: ProtectedPaths | None = None,
    trusted_servers: Sequence[str] = (),
) -> Policy:
    """``mode_policy`` with one change: the web tools ask in every mode but ``full-access``.

    They are read-only (so the modes would run them) but reach the network, which a user expects to see
    and approve. The rule comes after the remembered ones, so "always allow web_fetch" holds (in the
    modes that keep remembered allows)."""
    full = mode_policy(mode, roots, remembered, protected=protected, trusted_servers=trusted_servers)
    if mode == "full-access":
        return full
    bare = mode_policy(mode, roots, protected=protected)
    kept = full.rules[: len(full.rules) - len(bare.rules)]
    web = tuple(Rule.tool(name, Verdict.ASK) for name in WEB_TOOLS)
    return Policy(
        [*kept, *web, *bare.rules],
        bare.default,
        cwd=bare.cwd,
        name=bare.name,
        protected=full.protected,
        trusted_servers=full.trusted_servers,
    )


class PolicyMiddleware:
    """The current mode's policy as a tool middleware: a mode switch applies from the next call."""

    def __init__(self, state: ModeState) -> None:
        self.state = state

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        return await self.state.policy.call(call, context, next)


def protected_paths(
    roots: Sequence[Path], home: Path, stores: Sequence[Path], environ: Mapping[str, str]
) -> ProtectedPaths:
    """The standard protected list below ``roots``, plus the agent's own files wherever they are: the
    user's configuration folder, the permission files, the agent's data folder (sessions). Blocking."""
    own = "one of acp-agent's own files (configuration, remembered permissions, sessions): a change can run commands or widen what the agent may do"
    folder = user_config_dir(environ)
    extra = [(folder, own), (home, own), *((p, own) for p in stores)]
    extra.extend((p, own) for p in own_link_targets(folder))  # (the stores' own links: both spellings)
    extra.extend(home_paths(home_dir(environ)))  # ``~/bin``: only in the user's home folder
    return ProtectedPaths.of(roots, extra, AGENT_PROTECTED)


def store_paths(config: Any, cwd: Path, environ: Mapping[str, str]) -> tuple[Path, Path]:
    """The project's and the user's permission files (the configuration's; by default
    ``<project>/.acp-agent/permissions.jsonl`` and ``<user config>/acp-agent/permissions.jsonl``)."""
    base = Path(getattr(config, "project_root", None) or cwd)
    project: Path | None = getattr(config, "permissions_project_file", None)
    user: Path | None = getattr(config, "permissions_user_file", None)
    return (
        project or base / ".acp-agent" / "permissions.jsonl",
        user or user_config_dir(environ) / "permissions.jsonl",
    )
