"""``CodingFactory``: equips an ACP session as a coding agent.

File tools and ``shell`` under the session's roots (cwd + additionalDirectories), routed through the
editor when it offers ``fs``/``terminal``; the plan tools; the read-only ``explore`` sub-agent; ``web_fetch``
(and ``web_search`` with SearXNG configured); a Journal for ``/undo``; the mode's policy with the editor
answering its questions; compaction (automatic near a known context window, ``/compact``); modes, config
options and slash commands; MCP servers from the session and the configuration, their elicitations asked
through the editor; the project context (``_context``): the system prompt with the environment, AGENTS.md
instructions and skills, custom commands and ``/init``, and the hooks around tools and prompts.

Set-up in three parts, so that ``session/new`` costs one worker-thread hop: ``prepare`` (``_prepare``:
every file the answer needs, run by the session layer in its hop), ``finish`` (the composition, on the
event loop, no file work), and what only a prompt needs, after the answer (``ProjectContext.later``, which
every prompt waits for: ``SessionSetup.ready``).

Trust: a project configuration's settings that need trust apply only when the project is trusted; when it
asks for some the user has not trusted, the session starts without them and asks at the first prompt
(``_trust.ProjectTrustPrompt``). Secrets: one ``harness.secrets.Secrets`` for the process keeps the API keys
out of every command's environment and redacts them from every tool result (outermost middleware, also in
the ``explore`` sub-agent).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from harness import Options, Tools
from harness.loops import LoopGuard
from harness.overflow import CompactOnOverflow
from harness.providers.retry import RetryModel
from harness.secrets import Secrets
from harness.spill import Spill
from harness.text_calls import SERVER_PARSER_HINT, TextToolCalls
from harness.tools import Journal, Shell, file_tools
from harness.tools.plan import Plan

from ..config import user_config_dir, without_key
from ..protocol.models import (
    AgentMessageChunk,
    AgentPlanUpdate,
    Cost,
    SessionInfoUpdate,
    TextContent,
    UsageUpdate,
)
from ..session.plugin import SessionMcp, SessionSetup, ToolDisplay, merge_servers
from ..trust import TrustStore
from ._controls import CodingControls, ThoughtLevel
from ._editor import EditorFileSystem
from ._elicit import McpElicitor
from ._later import LateTools
from ._prepare import Prepared, RuleFiles, load_config_sync, prepare_session
from ._rename import RENAME_DESCRIPTION, RenameCommand, title_model_of
from ._terminal import EditorTerminalRunner, EditorTerminals
from ._toggles import AutoCompactSwitch, Switched, session_switches
from ._tools import explore_tool, web_tools
from ._undo import DESCRIPTION as UNDO_DESCRIPTION
from ._undo import UndoCommand
from .context._compact import Compaction
from .context._context import SystemPrompt
from .context._context_updates import ContextAfterCompaction, TurnReminder
from .context._hook_calls import PostToolHooks, PreToolHooks, StopHooks
from .context._instructions import DeeperInstructions
from .models._cache_options import CacheOptions
from .models._catalog import ModelCatalog, is_http
from .models._model_facts import builtin_window
from .models._model_notes import ModelNotes
from .models._side_model import ExploreModel, SideModel, SideSummary
from .models._usage_meter import USAGE_FILE, UsageMeter
from .permissions._confine import Confinement
from .permissions._gate import PermissionGate, RunningMarker, SessionLink
from .permissions._modes import ModeState, PolicyMiddleware
from .permissions._plan_mode import PlanExit
from .permissions._protected import AGENT_PROTECTED
from .permissions._sandboxing import SandboxGate, SessionSandbox, probe_soon, sandbox_support
from .permissions._trust import ProjectTrustPrompt
from .views._shell_view import ShellView, terminal_output_key
from .views._views import ProjectPaths, coding_views

if TYPE_CHECKING:
    from harness import Message, Model
    from harness.sandbox import Support

    from ..config import Config
    from ..session.plugin import SessionEnvironment
    from .context._context import ProjectContext

__all__ = ["CodingFactory"]

log = logging.getLogger(__name__)


class CodingFactory:
    """A ``SessionFactory``. ``flags`` are the command-line settings (``load_config``'s names); the
    configuration is loaded per session (its project file depends on the cwd). ``secrets``: the process's
    (keys learnt by any session are kept from every session's commands and output)."""

    def __init__(
        self,
        flags: Mapping[str, Any] | None = None,
        environ: Mapping[str, str] | None = None,
        secrets: Secrets | None = None,
    ) -> None:
        self.flags = dict(flags or {})
        self.environ = dict(os.environ if environ is None else environ)
        self.secrets = secrets or Secrets()
        self._catalog: ModelCatalog | None = None
        self._support: Support | None = None
        self._lock = threading.Lock()  # sessions are prepared in worker threads, maybe two at once
        probe_soon(self.environ)

    async def load_config(self, cwd: Path, trust: bool | None = None) -> Config:
        config = await anyio.to_thread.run_sync(
            partial(load_config_sync, cwd, self.flags, self.environ, trust)
        )
        self._learn_secrets(config)
        return config

    def forget_key(self) -> None:
        """``logout``: the next sessions' configuration has no API key (``without_key``)."""
        without_key(self.flags, self.environ)

    def _learn_secrets(self, config: Config) -> None:
        names = config.secret_names()
        self.secrets.add(names, [config.api_key, *(self.environ.get(n) for n in names)])

    async def reload_config(self, cwd: Path, trusted: bool | None) -> Config:
        """The configuration again, once the user decided about the project's (``trusted``)."""
        return await self.load_config(cwd, trust=trusted)

    async def __call__(self, env: SessionEnvironment) -> SessionSetup:
        # Abandoned when cancelled (the input ended while the first session was being set up): ``prepare``
        # only reads, so its thread may finish unwaited for and its result be dropped.
        prepared = await anyio.to_thread.run_sync(self.prepare, env, abandon_on_cancel=True)
        return await self.finish(env, prepared)

    def prepare(self, env: SessionEnvironment) -> Prepared:
        """The blocking half of the set-up (``_prepare``; the session layer runs it in a worker thread)."""
        with self._lock:
            if self._catalog is None:
                self._catalog = ModelCatalog(env.home)
            if self._support is None:
                self._support = sandbox_support(self.environ)  # what the machine enforces: once
            catalog, support = self._catalog, self._support
        return prepare_session(
            env,
            self.flags,
            self.environ,
            secrets=self.secrets,
            support=lambda: support,
            catalog=catalog,
            trusted_servers=_trusted_servers,
        )

    async def finish(self, env: SessionEnvironment, prepared: Prepared) -> SessionSetup:
        # The composition of one session, in dependency order: every part is built and wired here, so
        # the order (and what each part is handed) reads top to bottom. It is long on purpose. No file
        # work here: ``prepare`` did it (one worker-thread hop), or the session's ``later`` will.
        p = prepared
        config, root, link, modes, sandbox = p.config, p.root, p.link, p.modes, p.sandbox
        context, trust_store, secrets = p.context, p.trust_store, self.secrets
        self._learn_secrets(config)
        paths = ProjectPaths(tuple(dict.fromkeys([*env.roots, *root.paths])))
        terminals = EditorTerminals() if env.client_can("terminal") else None
        fs = EditorFileSystem(env, root=root)
        journal = Journal(fs, root=root)
        runner = EditorTerminalRunner(env, terminals, link, secrets) if terminals is not None else None
        # A long output goes whole into the session's folder, for the model to read back (harness.spill).
        spill = Spill(p.checkpoints_path.parent / "outputs", window=partial(_window, link, config.model))
        shell = Shell(
            root,
            runner=runner,
            spill=spill.keep,
            default_timeout_s=config.shell_timeout_s,
            sandbox=sandbox.for_call,
            secrets=secrets,
            protected=AGENT_PROTECTED,
        )
        files = file_tools(root, journal, fs)
        confined = Confinement(root, [*(t.spec().name for t in files), shell.spec().name])
        views = coding_views(files, paths)
        views[shell.spec().name] = ShellView(paths, terminals=terminals, output_key=terminal_output_key(env))
        tell = _Tell(link)
        plan = Plan()
        plan.subscribe(tell.plan)
        thought = ThoughtLevel(config.provider)

        meter = UsageMeter(lambda: controls.price(), p.checkpoints_path.parent / USAGE_FILE)
        # Read only once the session runs, after ``bind_controls`` below (None before: no side model yet).
        side = SideModel(lambda: controls if link.controls is not None else None, meter)
        window = partial(_window, link, config.model)
        current_model = partial(_current_model, link)
        compaction = Compaction(
            link,
            context_window=window,
            model=current_model,
            path=p.checkpoints_path,
            updates=env.client_can("session", "compaction"),
            summariser=side,
        )
        compaction.keep(p.checkpoints)
        pending = config.project is not None and bool(config.project.ignored)
        mcp = await self._mcp(env, config, link, defer=pending)
        gate = PermissionGate(env, modes, link, views, root=root, fs=fs)
        trust: ProjectTrustPrompt | None = None
        if pending and config.project is not None:

            async def apply(trusted: Config) -> None:
                await self._apply_trusted(trusted, env, modes, mcp, controls, trust_store, sandbox)
                context.use_config(trusted)  # the project's hooks, now that it is trusted

            trust = ProjectTrustPrompt(
                config.project, trust_store, gate, link, partial(self.reload_config, env.cwd), apply
            )

        web, auto_compact = session_switches()
        toggles = [web, auto_compact]  # any model's window may become known (the server's list)
        controls = CodingControls(
            env,
            config,
            modes,
            link,
            thought,
            mcp=mcp,
            extra_commands={
                "undo": (UNDO_DESCRIPTION, None, UndoCommand(journal, gate, modes)),
                "rename": (RENAME_DESCRIPTION, "new title", RenameCommand(link)),
                "compact": (
                    "Summarise the conversation so far to free the model's context",
                    None,
                    compaction.command,
                ),
            },
            trust=trust,
            catalog=self._catalog,
            toggles=toggles,
            command_sources=[context],
            served=p.served,
            after_open=partial(_after_open, context, config, tell),  # started once answered
        )
        link.bind_controls(controls)
        if mcp is not None:
            mcp.elicitation_handler = McpElicitor(gate, link)  # (before the servers start, after the answer)
        if env.spawn is not None:
            env.spawn(context.watch)

        async def aclose() -> None:
            await anyio.to_thread.run_sync(sandbox.aclose)  # an rmtree (milliseconds): off the loop
            context.aclose()
            if mcp is not None:
                await mcp.aclose()

        loops = LoopGuard(on_stop=tell.message)
        tools = LateTools()
        setup = SessionSetup(
            tools=tools,
            system=context.system,
            before_prompt=context.before_prompt,
            ready=context.later.wait,
            # The window reaches each prompt through ``notes`` (it follows the model); the loop guard stops.
            options=Options(stop=(*Options().stop, loops.stop)),
            context=env,
            aclose=aclose,
            display=ToolDisplay(marks_running=True),
            controls=controls,
            views=views,
            usage=meter,
            side_model=side,
            title_model=title_model_of(side.off_turn, config.titles),
        )

        def compose() -> None:
            # What only a prompt needs (the tools, the middleware stack): nothing in the answer does, so it
            # is composed after it, first in the session's ``later`` (which every prompt waits for).
            explore_model = ExploreModel(lambda: controls, small=config.explore_model == "small")
            explore = explore_tool(
                root,
                fs,
                explore_model,
                context_window=window(),
                system_suffix=_roots_note(env),
                # The session's rules judge the sub-agent's calls too; what they ask about pauses the
                # sub-agent and is asked through the session's gate (the explore call's approval).
                middleware=[secrets, confined, PolicyMiddleware(modes), meter.at(explore_model.price)],
            )
            sources: list[Any] = [
                *files,
                shell,
                *plan.tools(),
                PlanExit(modes, controls),
                explore,
                Switched(web_tools(config), web),
                context,  # the skill tool, when there are skills
            ]
            if mcp is not None:
                sources.append(mcp.tools)
            notes = ModelNotes(
                controls.facts,
                tell.message,
                tell.advise,
                partial(tell.usage, meter=meter),
                _user_config_file(self.environ),
                tell_unknown=is_http(config.provider),
                recheck=controls.recheck_window,
            )
            setup.middleware = [
                spill,  # outside the secrets: what it writes to the session's folder is redacted
                secrets,  # every result leaves the tools redacted (see harness.secrets)
                loops,  # a repeat too many is not asked about, nor run: the turn stops for the user
                gate,
                PreToolHooks(context.hooks),
                confined,  # a path the tool would refuse anyway: refused here, before the policy asks
                SandboxGate(PolicyMiddleware(modes), sandbox, tell.unsandboxed),
                DeeperInstructions(context, root.first),
                PostToolHooks(context.hooks),
                RunningMarker(link),
                SystemPrompt(context),
                StopHooks(context.hooks),  # a reply that would end the turn: the stop hooks may go on
                thought,
                TurnReminder(plan),
                notes,  # the model's window on each prompt; usage, empty replies, window notices
                CacheOptions(env.session_id, config.prompt_cache),
                # Inside: its summary call goes to the model without the reminder.
                AutoCompactSwitch(auto_compact),
                CompactOnOverflow(compaction.compact),  # the server's "context exceeded": compact, retry once
                compaction.middleware,
                ContextAfterCompaction(partial(_history, link), compaction.covered),
                SideSummary(side.small),  # the summary on the small model, when one is configured
                TextToolCalls(tell.text_calls),  # a server with no tool-call parser: calls written as text
                meter,  # every request of the session, counted and priced
                *_retry(config.provider),
            ]
            tools.use(Tools(*sources))

        context.later.first(compose)
        return setup

    async def _apply_trusted(
        self,
        config: Config,
        env: SessionEnvironment,
        modes: ModeState,
        mcp: Any,
        controls: CodingControls,
        trust: TrustStore,
        sandbox: SessionSandbox,
    ) -> None:
        """The user trusted the project mid-session (at the first prompt): its settings apply now."""
        environ = self.environ

        def reread() -> RuleFiles:  # one worker-thread hop: the sandbox's paths, the rule files
            sandbox.configure(config, environ)
            return RuleFiles.read_sync(config, env, environ, trust)  # the trusted ones are protected too

        initial = modes.mode
        (await anyio.to_thread.run_sync(reread)).apply(modes)
        if mcp is not None and not mcp.started:
            mcp.entries = merge_servers([s.to_acp() for s in config.mcp_servers], env.mcp_servers)
        controls.apply_config(config)
        if config.default_mode != initial and config.default_mode in modes.offered:
            await controls.set_mode(config.default_mode)

    async def _mcp(
        self, env: SessionEnvironment, config: Config, link: SessionLink, *, defer: bool = False
    ) -> Any:
        """The session's MCP servers (``defer``: trust is pending, so there may be project servers to add
        before they start)."""
        servers = [s.to_acp() for s in config.mcp_servers]
        if not env.mcp_servers and not servers and not defer:
            return None

        async def on_change() -> None:
            update = SessionInfoUpdate()
            update.field_meta = {"mcpServers": mcp.status_meta()}
            await link.send(update)
            if link.controls is not None:  # a server that became ready may bring prompt commands
                await link.controls.send_commands()

        # Started by the controls once the session/new answer is written (or at the first prompt): the
        # servers' processes then cost session/new nothing.
        mcp = SessionMcp(env, servers, on_change=on_change)
        return mcp


def _trusted_servers(config: Config, env: SessionEnvironment) -> list[str]:
    """The servers marked ``trusted`` in the user's configuration, unless the editor sent one of the same
    name (the editor's entry replaces the configured one, and the editor's servers are not trusted)."""
    from_editor = {str(s.get("name")) for s in env.mcp_servers}
    return [s.name for s in config.mcp_servers if s.trusted and s.name not in from_editor]


def _user_config_file(environ: Mapping[str, str]) -> Path:
    return user_config_dir(environ) / "config.toml"


def _roots_note(env: SessionEnvironment) -> str:
    roots = "\n".join(f"- {r}" for r in env.roots)
    return f"\n\nThe project directories are:\n{roots}"


def _retry(provider: str | None) -> list[RetryModel]:
    """Innermost for HTTP providers: a rate-limited call is retried (before its first delta only),
    honouring retry-after up to 30 s, so a busy provider costs a pause, not the turn. The ``script``
    provider's errors are the test's script and stay exactly as written."""
    if is_http(provider):
        return [RetryModel(max_tries=3, max_delay=30.0)]
    return []


async def _after_open(context: ProjectContext, config: Config, tell: _Tell) -> None:
    """The set-up after the opening answer; and the problems of the project's files, shown (a cloned
    project's malformed files leave the session working, with its bad values skipped)."""
    if config.problems:
        listed = "\n".join(f"- {p}" for p in config.problems[:20])
        more = f"\n- … and {len(config.problems) - 20} more" if len(config.problems) > 20 else ""
        await tell.advise(
            "The project's configuration has problems",
            f"These were skipped; the session works without them:\n{listed}{more}",
        )
    await context.later.attempt()


class _Tell:
    """What the session's parts tell the editor, through its link."""

    def __init__(self, link: SessionLink) -> None:
        self._link = link

    async def plan(self, plan: Plan) -> None:
        await self._link.send(AgentPlanUpdate.model_validate({"entries": plan.to_dicts()}))

    async def message(self, text: str) -> None:
        await self._link.send(AgentMessageChunk(content=TextContent(text=text + "\n\n")))

    async def advise(self, title: str, text: str) -> None:
        """A notice where the client takes them, else the agent's message."""
        await self._link.advise(title, text, text + "\n\n")

    async def text_calls(self, dialect: str) -> None:
        await self.advise("Tool calls written as text", SERVER_PARSER_HINT.format(dialect=dialect))

    async def unsandboxed(self, text: str) -> None:
        await self.advise("Shell commands are not sandboxed", text)

    async def usage(self, used: int, size: int, *, meter: UsageMeter | None = None) -> None:
        cost = meter.session_cost() if meter is not None else None
        priced = Cost.model_validate(cost) if cost is not None else None
        await self._link.send(UsageUpdate(used=used, size=size, cost=priced))


def _window(link: SessionLink, configured: str | None) -> int | None:
    """The session's model's context window now (it follows ``/model``)."""
    if link.controls is None:
        return builtin_window(configured)
    facts = link.controls.facts()
    return facts.context_window if facts is not None else None


def _history(link: SessionLink) -> list[Message]:
    return link.handle.messages() if link.handle is not None else []


def _current_model(link: SessionLink) -> Model | None:
    return link.controls.current_model() if link.controls is not None else None
