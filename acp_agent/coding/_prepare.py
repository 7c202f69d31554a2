"""The blocking half of a coding session's set-up: every file it reads before the ``session/new`` answer, in
one function that the session layer runs in its one worker-thread hop (``PreparingFactory.prepare``).

Before the answer: the configuration (its files depend on the cwd; the answer's modes and options come
from it), the session's roots resolved, the base system prompt (a broken prompt file fails ``session/new``)
and the hooks' shell (``ProjectContext``), the endpoint's cached model list, the compaction checkpoints of
an earlier process (an open that fails, for a new session). What only a prompt needs is done after the
answer, in a second hop (``ProjectContext.later``, which every prompt waits for): the instruction folders,
the commands, the skills, the sandbox's settings and private folder, the rule files (the project's only
when trusted) and the protected paths.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from harness.policy import PermissionStore, ProtectedPaths, Rule
from harness.tools import Root

from ..config import ConfigError, load_config, user_config_dir
from ..protocol.errors import INTERNAL_ERROR, RpcError
from ..session.plugin import SessionStore
from ..trust import TrustStore, rule_key
from ._later import Later
from .context._compact import CHECKPOINTS_FILE, read_checkpoints
from .context._context import ProjectContext, PromptFileError
from .models._catalog import ModelCatalog, import_http_sync, is_http
from .permissions._gate import SessionLink
from .permissions._modes import ModeState, protected_paths, read_rules, store_paths
from .permissions._protected import AGENT_PROTECTED
from .permissions._sandboxing import SessionSandbox
from .permissions._trust import ProjectRuleStore, RuleFileStore

if TYPE_CHECKING:
    from harness.compact import Checkpoint
    from harness.sandbox import Support
    from harness.secrets import Secrets

    from ..config import Config
    from ..session.plugin import SessionEnvironment

__all__ = ["Prepared", "RuleFiles", "load_config_sync", "prepare_session", "rule_stores", "trusted_rule_keys"]


@dataclass(slots=True)
class Prepared:
    """What ``prepare_session`` read and made, for the factory's ``finish``."""

    config: Config
    root: Root
    link: SessionLink
    trust_store: TrustStore
    modes: ModeState
    sandbox: SessionSandbox
    context: ProjectContext
    served: list[str]
    checkpoints: list[Checkpoint]
    checkpoints_path: Path


def load_config_sync(
    cwd: Path, flags: Mapping[str, Any], environ: Mapping[str, str], trust: bool | None = None
) -> Config:
    """The configuration for ``cwd`` (blocking); its problems as an ``RpcError`` (``configuration_error``)."""
    try:
        return load_config(cwd, flags, environ, trust=trust)
    except ConfigError as exc:
        problems = [str(p) for p in exc.problems]
        raise RpcError(
            INTERNAL_ERROR,
            "the configuration has problems:\n" + "\n".join(problems),
            {"errorKind": "configuration_error", "problems": problems},
        ) from exc


def trusted_rule_keys(config: Config) -> frozenset[str]:
    """The project's allow rules the user's trust covers: exactly those the trust decision listed (not
    "every allow rule, once trusted": a rule written to the file after the decision needs trust again)."""
    project = config.project
    decided = project.items if project is not None and project.trusted else ()
    return frozenset(rule_key(item.value) for item in decided if item.key == "rules")


def rule_stores(
    config: Config, env: SessionEnvironment, environ: Mapping[str, str], trust: TrustStore
) -> list[PermissionStore]:
    """The project's rule file (its own allow rules only when trusted) and the user's (blocking: the
    project's path is resolved)."""
    project_file, user_file = store_paths(config, env.cwd, environ)
    root = config.project_root or env.cwd
    return [
        ProjectRuleStore(project_file, trust, trusted_rules=trusted_rule_keys(config), root=root),
        # The same reader as the project's (``acp_agent.rule_lines``); the user's own link is followed.
        RuleFileStore(user_file, follow=True),
    ]


@dataclass(frozen=True, slots=True)
class RuleFiles:
    """The rule stores of a configuration, the protected list that names them, their rules."""

    stores: list[PermissionStore]
    protected: ProtectedPaths
    rules: list[Rule]

    @classmethod
    def read_sync(
        cls, config: Config, env: SessionEnvironment, environ: Mapping[str, str], trust: TrustStore
    ) -> RuleFiles:
        """Blocking: the stores, the protected list (the standard one below the roots, the agent's own
        files, the rule files), the rules."""
        stores = rule_stores(config, env, environ, trust)
        paths = store_paths(config, env.cwd, environ)
        return cls(stores, protected_paths(env.roots, env.home, paths, environ), read_rules(stores))

    def apply(self, modes: ModeState) -> None:
        """On the event loop: the mode's policy uses them from the next call on."""
        modes.use(self.rules, self.stores, self.protected)


def prepare_session(
    env: SessionEnvironment,
    flags: Mapping[str, Any],
    environ: Mapping[str, str],
    *,
    secrets: Secrets,
    support: Callable[[], Support],
    catalog: ModelCatalog,
    trusted_servers: Callable[[Config, SessionEnvironment], list[str]],
) -> Prepared:
    """Blocking (see the module docstring): run it in a worker thread."""
    config = load_config_sync(env.cwd, flags, environ)
    root = Root(list(env.roots))
    link = SessionLink()
    trust_store = TrustStore(config.home)
    # No rules and no protected list yet (``later`` reads them): nothing is judged before every prompt
    # waited for it.
    modes = ModeState(
        config.default_mode,
        env.roots,
        (),
        protected=ProtectedPaths(tuple(env.roots), patterns=AGENT_PROTECTED),
        trusted_servers=trusted_servers(config, env),
    )
    sandbox = SessionSandbox(modes, env.roots, support=support())

    def after_answer() -> RuleFiles:  # the set-up's second worker-thread hop, once the answer is written
        if is_http(config.provider):
            import_http_sync()  # (the first session's: the model listing and the first prompt need it)
        context.load_sync()
        sandbox.configure(config, environ)
        sandbox.make_folder_sync()
        return RuleFiles.read_sync(config, env, environ, trust_store)

    async def later_work() -> None:
        (await anyio.to_thread.run_sync(after_answer)).apply(modes)

    later = Later(later_work, env.session_id)
    try:
        context = ProjectContext(
            env,
            config,
            environ,
            link,
            user_dir=user_config_dir(environ),
            secrets=secrets,
            mode=lambda: modes.mode,
            sandbox=lambda: sandbox.for_call({}),  # hooks run as a shell command would now
            support=sandbox.support,
            later=later,
        )
    except PromptFileError as exc:
        raise RpcError(INTERNAL_ERROR, str(exc), {"errorKind": "configuration_error"}) from exc
    served: list[str] = []
    if is_http(config.provider):
        served = catalog.cached_sync(config.provider, config.base_url)
    path = SessionStore(env.home / "sessions").directory(env.session_id) / CHECKPOINTS_FILE
    return Prepared(
        config, root, link, trust_store, modes, sandbox, context, served, read_checkpoints(path), path
    )
