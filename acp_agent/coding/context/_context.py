"""What the model knows of the project and the user, assembled per turn: the system prompt and the hooks.

The system prompt is the base prompt (``prompts/system.md``, or the user's ``system_prompt_file``; a
``{{default}}`` line in it stands for the default), then the instructions (``AGENTS.md`` and the like),
the skills list and the session-start hooks' notes, as they were at the session's first turn: it is frozen
then, so every request of the session extends the one before (the providers' prompt caches). At the start
of every turn (``ProjectContext.before_prompt``, which the session calls with each prompt) instruction
files, commands and skills are re-read when they changed and the environment block is made anew; what
differs from what the model was last told goes in front of the prompt (``_context_updates``). A model
middleware (``SystemPrompt``) gives each model call the frozen text (the ``stop`` hooks run at the turn's
end: ``_hook_calls.StopHooks``). The command folders are also watched between turns (a stat every
``WATCH_S``), so a new command file shows in the editor's list without a prompt.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.to_thread

from harness import Message, Role, Text
from harness.middleware import Prelude

from ...protocol.models import ContentToolCallContent, TextContent, ToolCallStart
from ...session.plugin import PromptStopped, with_client_prompt
from .._commands import SlashCommand
from .._later import Later
from ..permissions._plan_mode import PLAN_NOTE as _PLAN_NOTE
from ._context_updates import changed_sections, known_sections, with_context
from ._custom_commands import Commands, prompt_text
from ._environment import Repository, environment_section, find_repository
from ._hook_calls import prompt_hooks, session_start_hooks
from ._hooks import Hooks
from ._instructions import Instructions
from ._skills import Skills
from ._textfiles import TextFile, read_bounded, signature

if TYPE_CHECKING:
    from harness import Tool
    from harness.middleware import NextModel
    from harness.model import Delta, Prompt
    from harness.sandbox import SandboxPolicy, Support
    from harness.secrets import Secrets

    from ...config import Config
    from ...session.plugin import SessionEnvironment
    from ..permissions._gate import SessionLink

__all__ = ["DEFAULT_PLACEHOLDER", "PromptFileError", "ProjectContext", "SystemPrompt", "base_prompt"]

log = logging.getLogger(__name__)

DEFAULT_PLACEHOLDER: Final = "{{default}}"
PROMPT_FILE_LIMIT: Final = 128 * 1024
WATCH_S: Final = 3.0
RESERVED_COMMANDS: Final = ("mode", "model", "undo", "compact", "rename")
FROZEN: Final = ("instructions", "skills", "notes")
"""The sections the system prompt holds as they were at the session's first turn."""


class PromptFileError(Exception):
    """The user's ``system_prompt_file`` cannot be read."""


def base_prompt(path: Path | None) -> str:
    """The base system prompt: the default, or the user's file (``{{default}}`` in it is the default).
    Blocking; raises ``PromptFileError`` when the user's file cannot be read."""
    default = prompt_text("system.md").strip()
    if path is None:
        return default
    read = read_bounded(path, PROMPT_FILE_LIMIT)
    if read is None:
        raise PromptFileError(f"system_prompt_file {path} cannot be read: make it a readable text file")
    return read.text.replace(DEFAULT_PLACEHOLDER, default).strip()


@dataclass(frozen=True, slots=True)
class _Parts:
    """What ``ProjectContext.load_sync`` found: the instruction files' folders, the commands, the skills."""

    instructions: Instructions
    commands: Commands
    skills: Skills


class ProjectContext:
    """The session's instructions, environment, commands, skills and hooks (see the module docstring).

    Made in the session's set-up thread (blocking: it reads the base prompt, raising ``PromptFileError``
    for a broken prompt file, and finds the shell for the hooks); the folders, commands and skills are
    found after the ``session/new`` answer (``later``: the session's first prompt waits for it)."""

    def __init__(
        self,
        env: SessionEnvironment,
        config: Config,
        environ: Mapping[str, str],
        link: SessionLink,
        *,
        user_dir: Path,
        secrets: Secrets,
        mode: Callable[[], str] | None = None,
        sandbox: Callable[[], SandboxPolicy | None] | None = None,
        support: Support | None = None,
        later: Later | None = None,
    ) -> None:
        self._env = env
        self._environ = environ
        self._link = link
        self._secrets = secrets
        self._support = support
        self._user_dir = user_dir
        self._prompt_file = config.system_prompt_file
        self._base = base_prompt(self._prompt_file)
        self._base_signature: Any = signature([self._prompt_file]) if self._prompt_file else None
        self.hooks = Hooks(
            config.hooks,
            session_id=env.session_id,
            cwd=env.cwd,
            environ=environ,
            secrets=secrets,
            show=self._show,
            mode=mode or (lambda: "default"),
            sandbox=sandbox,
            support=support,
        )
        self._mode = mode or (lambda: "default")
        self._sections: dict[str, str] = {}
        self._frozen: dict[str, str] = {}
        self._parts: _Parts | None = None
        self.later = later or Later(self._load, env.session_id)
        """Finding the instructions' folders, the commands and the skills, after the opening answer (a
        ``later`` given does that, ``load_sync``, and more of the session's set-up in the same hop)."""
        self._system: str | None = None
        self._notes: list[str] = []
        self._started = False
        self._shown = 0
        self._watching: anyio.CancelScope | None = None
        self._closed = False

    def load_sync(self) -> None:
        """Blocking: find the instruction files' folders, the commands (read now) and the skills."""
        environ, user_dir, env = self._environ, self._user_dir, self._env
        home = Path(environ.get("HOME") or Path.home())
        instructions = Instructions(env.roots, user_dir / "AGENTS.md")
        cwd = env.cwd.resolve()
        cwd_chain = [(folder, repo) for folder, repo in instructions.folders if cwd.is_relative_to(folder)]
        codex = Path(environ.get("CODEX_HOME") or home / ".codex")
        commands = Commands(
            cwd_chain,
            [user_dir / "commands", home / ".claude" / "commands"],
            codex_prompts=codex / "prompts",
            reserved=RESERVED_COMMANDS,
        )
        commands.scan_sync()
        skills = Skills(
            cwd_chain, [user_dir / "skills", home / ".agents" / "skills", home / ".claude" / "skills"]
        )
        self._parts = _Parts(instructions, commands, skills)

    async def _load(self) -> None:
        await anyio.to_thread.run_sync(self.load_sync)

    async def load(self) -> None:
        """The folders, commands and skills now (``later``'s work, unless it ran); raises its failure."""
        await self.later.wait()

    def use_config(self, config: Config) -> None:
        """The configuration as it is once the user trusted the project mid-session: its hooks join."""
        self.hooks.use(config.hooks)

    # --- the parts, as the session's other parts use them ------------------------------------------

    async def commands(self) -> list[SlashCommand]:
        """The custom commands and ``/init`` (a ``CommandProvider``), once they were found."""
        await self.later.attempt()
        parts = self._parts
        return await parts.commands.commands() if parts is not None else []

    async def tools(self) -> Sequence[Tool]:
        """The ``skill`` tool when there are skills (a ``ToolSource``)."""
        await self.later.attempt()
        parts = self._parts
        return await parts.skills.tools() if parts is not None else []

    def deeper_sync(self, touched: Sequence[Path]) -> list[TextFile]:
        """``Instructions.deeper_sync`` (blocking), once the folders were found."""
        parts = self._parts
        return parts.instructions.deeper_sync(touched) if parts is not None else []

    # --- the system prompt -------------------------------------------------------------------------

    @property
    def refreshed(self) -> bool:
        return self._system is not None

    @property
    def system(self) -> str:
        """The system prompt as of the last refresh (the base prompt before the first)."""
        if self._system is not None:
            return self._system
        base, extra = with_client_prompt(self._base, self._env)
        return "\n\n".join([base, *extra])

    def _rescan(self) -> bool:
        """Blocking: re-read what changed; returns whether the command list changed."""
        if self._prompt_file is not None:
            sig = signature([self._prompt_file])
            if sig != self._base_signature:
                try:
                    self._base = base_prompt(self._prompt_file)
                except PromptFileError as exc:
                    log.warning("%s; keeping the prompt read before", exc)
                self._base_signature = sig
        parts = self._parts
        if parts is None:  # not found (the set-up after the answer failed): the prompt was told
            return False
        parts.instructions.refresh_sync()
        parts.skills.scan_sync()
        return parts.commands.scan_sync()

    async def refresh(self) -> None:
        """Once per turn: re-read the files that changed, make the environment block anew (one worker-
        thread hop for the files and the roots' repositories, then ``git status`` where there is one)."""
        roots = self._env.roots

        def rescan() -> tuple[bool, list[Repository | None]]:
            repos = [find_repository(r) for r in roots]
            try:
                return self._rescan(), repos
            except OSError:  # a folder that vanished mid-walk, say: keep what was read before
                log.exception("re-reading the instructions, commands and skills failed")
                return False, repos

        commands_changed, repos = await anyio.to_thread.run_sync(rescan)
        environment = await environment_section(
            roots, self._environ, secrets=self._secrets, repos=repos, support=self._support
        )
        found = self._parts
        sections = {"environment": environment, "mode": _PLAN_NOTE.strip() if self._mode() == "plan" else ""}
        if found is not None:
            sections |= {"instructions": found.instructions.section(), "skills": found.skills.section()}
        if self._notes:
            sections["notes"] = "# Notes from the session-start hooks\n\n" + "\n\n".join(self._notes)
        self._sections = sections
        if self._system is None:  # frozen for the session's life in this process (see _context_updates)
            self._frozen = {k: sections[k] for k in FROZEN if sections.get(k)}
            base, client = with_client_prompt(self._base, self._env)  # the client's systemPrompt
            parts = [base, *(self._frozen.get(k, "") for k in FROZEN), *client]
            self._system = "\n\n".join(p for p in parts if p)
        if commands_changed:
            await self._commands_changed()

    async def _commands_changed(self) -> None:
        controls = self._link.controls
        if controls is not None and self._link.handle is not None:
            await controls.send_commands()

    # --- the session's seams -----------------------------------------------------------------------

    async def before_prompt(self, message: Message) -> Message:
        """Each prompt, before the model sees it: the session-start hooks (the first time), the refresh,
        then the user-prompt hooks (a blocked prompt is replaced by the reason; notes are added to it)."""
        if not self._started:
            self._started = True
            self._notes = await session_start_hooks(
                self.hooks, "startup" if not self._env_history() else "resume"
            )
        await self.refresh()
        return self._with_changes(await self._prompt_hooks(message))

    async def _prompt_hooks(self, message: Message) -> Message:
        if not self.hooks.has("user_prompt_submit"):
            return message
        verdict = await prompt_hooks(self.hooks, message.text)
        if verdict.stopped:
            raise PromptStopped
        if verdict.blocked is not None:
            note = (
                "(The user's prompt was blocked before it reached you and is not shown. "
                f"{verdict.blocked}. Tell the user briefly that their prompt was blocked and why.)"
            )
            return Message(Role.USER, (Text(note),), meta=message.meta)
        if not verdict.notes:
            return message
        return Message(
            message.role, (*message.parts, *(Text("\n\n" + n) for n in verdict.notes)), meta=message.meta
        )

    def _with_changes(self, message: Message) -> Message:
        """The prompt with what changed since the model was last told (``_context_updates``) in front."""
        handle = self._link.handle
        history = handle.messages() if handle is not None else []
        known = known_sections(history, self._frozen)
        return with_context(message, changed_sections(self._sections, known))

    def _env_history(self) -> bool:
        handle = self._link.handle
        return handle is not None and bool(handle.messages())

    async def _show(self, title: str, text: str, failed: bool) -> None:
        self._shown += 1
        update = ToolCallStart(
            tool_call_id=f"hook_{self._shown}_{self._env.session_id[:8]}",
            title=title,
            kind="execute",
            status="failed" if failed else "completed",
            content=[ContentToolCallContent(content=TextContent(text=text))],
        )
        await self._link.send(update)

    # --- watching the command folders between turns -----------------------------------------------

    async def watch(self) -> None:
        """Runs until ``aclose``: re-reads the command folders every ``WATCH_S`` seconds."""
        with anyio.CancelScope() as scope:
            self._watching = scope
            if self._closed:
                return
            await self.later.attempt()
            while True:
                await anyio.sleep(WATCH_S)
                parts = self._parts
                if parts is None:
                    continue
                try:
                    changed = await anyio.to_thread.run_sync(parts.commands.scan_sync)
                    if changed:
                        await self._commands_changed()
                except anyio.get_cancelled_exc_class():
                    raise
                except Exception:
                    log.exception("watching the command folders failed")

    def aclose(self) -> None:
        self._closed = True
        self.later.cancel()
        if self._watching is not None:
            self._watching.cancel()


class SystemPrompt:
    """Model middleware (outermost): each model call gets the turn's system prompt."""

    def __init__(self, context: ProjectContext) -> None:
        self._context = context

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        context = self._context

        async def opening() -> AsyncIterator[Delta]:
            if not context.refreshed:  # a model call before any prompt (a resumed compaction, say)
                await context.refresh()
            return next(prompt.replace(system=context.system))

        return Prelude(opening)  # the deltas handed on with no frame each
