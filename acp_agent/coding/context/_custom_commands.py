"""Custom slash commands from Markdown files, and ``/init``.

A command is ``<folder>/<name>.md``; sub-folders give namespaced names (``frontend/lint.md`` is
``/frontend:lint``). Folders, first wins on a name clash: the project's ``.acp-agent/commands/`` and
``.claude/commands/`` (in each folder from the repository root down to the cwd, the deepest first), then the
user's ``$XDG_CONFIG_HOME/acp-agent/commands/`` and ``~/.claude/commands/``, and Codex's custom prompts
(``$CODEX_HOME/prompts/<name>.md``, default ``~/.codex/prompts/``) as ``/prompts:<name>``, as in Codex.
Optional YAML front matter gives
``description`` and ``argument-hint`` (Claude Code's other keys are ignored). The body is the prompt:
``$ARGUMENTS`` becomes everything after the command name, ``$1`` … ``$9`` its words (shell-style quoting);
a body with neither gets the arguments appended. Shell execution (``!`cmd` ``) and file inclusion (``@file``)
of Claude Code's commands are not supported: the text goes to the model as written.

``/init`` (built in, replaceable by a custom ``init``) asks the agent to explore the project and write or
improve its ``AGENTS.md`` with the normal tools and permissions.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

import anyio.to_thread

from ...session.plugin import CommandOutcome
from ...small_files import kind_phrase
from .._commands import SlashCommand
from ._textfiles import read_bounded, split_front_matter

__all__ = ["COMMAND_FILE_LIMIT", "Commands", "CustomCommand", "expand_arguments", "prompt_text"]

log = logging.getLogger(__name__)

COMMAND_FILE_LIMIT: Final = 64 * 1024
MAX_COMMANDS: Final = 300
_MAX_DEPTH: Final = 3
PROJECT_DIRS: Final = (".acp-agent/commands", ".claude/commands")
_SEGMENT: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_PLACEHOLDER: Final = re.compile(r"\$(ARGUMENTS|[1-9])(?![0-9])")
_INIT: Final = "init"
_INIT_DESCRIPTION: Final = "Explore the project and write (or improve) its AGENTS.md"


@dataclass(frozen=True, slots=True)
class CustomCommand:
    name: str
    description: str
    hint: str | None
    body: str
    path: Path


def expand_arguments(body: str, args: str) -> str:
    """``body`` with ``$ARGUMENTS`` and ``$1``…``$9`` replaced (absent words become empty)."""
    try:
        words = shlex.split(args)
    except ValueError:  # an unclosed quote: plain words then
        words = args.split()
    used = False

    def sub(m: re.Match[str]) -> str:
        nonlocal used
        used = True
        key = m.group(1)
        if key == "ARGUMENTS":
            return args
        index = int(key) - 1
        return words[index] if index < len(words) else ""

    text = _PLACEHOLDER.sub(sub, body)
    if not used and args:
        text = f"{text.rstrip()}\n\nARGUMENTS: {args}"
    return text


@dataclass(frozen=True, slots=True)
class _Folder:
    path: Path
    scope: str
    inside: Path | None  # a project's files must stay inside its repository
    prefix: tuple[str, ...] = ()  # Codex's prompts are /prompts:<name>


def _listing(folder: _Folder, skipped: list[tuple[Path, str]]) -> list[tuple[str, Path]]:
    """``(name, path)`` of the command files in ``folder`` (bounded walk; hidden entries skipped); a
    command file that is no regular file (a FIFO, device, socket, a link that leads nowhere or loops) is
    added to ``skipped`` with what it is, never opened."""
    out: list[tuple[str, Path]] = []

    def walk(directory: Path, prefix: tuple[str, ...]) -> None:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if len(out) >= MAX_COMMANDS or entry.name.startswith("."):
                continue
            depth = len(prefix) - len(folder.prefix)
            try:  # a symlink loop raises here (ELOOP): such an entry is no command
                is_dir, is_file = entry.is_dir(), entry.is_file()
            except OSError:
                is_dir = is_file = False
            if is_dir and depth < _MAX_DEPTH - 1 and _SEGMENT.fullmatch(entry.name):
                walk(Path(entry.path), (*prefix, entry.name))
            elif entry.name.endswith(".md") and _SEGMENT.fullmatch(stem := entry.name[: -len(".md")]):
                if is_file:
                    out.append((":".join((*prefix, stem)), Path(entry.path)))
                elif not is_dir:
                    skipped.append((Path(entry.path), _what(entry)))

    walk(folder.path, folder.prefix)
    return out


def _describe(meta: dict[str, Any], body: str, scope: str) -> str:
    raw = meta.get("description")
    if isinstance(raw, str) and raw.strip():
        text = " ".join(raw.split())
    else:
        first = next((line.strip().lstrip("#").strip() for line in body.splitlines() if line.strip()), "")
        text = first[:80] + ("…" if len(first) > 80 else "") if first else "Custom command"
    return f"{text} ({scope})"


class Commands:
    """The session's custom commands (a ``CodingControls`` command source). ``scan_sync`` (blocking; in a
    thread) re-reads the folders and says whether the list changed."""

    def __init__(
        self,
        project_folders: Sequence[tuple[Path, Path]],
        user_dirs: Sequence[Path],
        *,
        codex_prompts: Path | None = None,
        reserved: Iterable[str] = (),
    ) -> None:
        folders: list[_Folder] = []
        for folder, repo in reversed(project_folders):  # the deepest folder first
            folders += [_Folder(folder / d, "project", repo) for d in PROJECT_DIRS]
        folders += [_Folder(d, "user", None) for d in user_dirs]
        if codex_prompts is not None:
            folders.append(_Folder(codex_prompts, "user", None, ("prompts",)))
        self._folders = tuple(folders)
        self._reserved = frozenset(reserved)
        self._by_name: dict[str, CustomCommand] = {}
        self._signature: Any = None

    def scan_sync(self) -> bool:
        skipped: list[tuple[Path, str]] = []
        listings = [(f, _listing(f, skipped)) for f in self._folders]
        sig = (
            tuple(
                (str(p), st.st_mtime_ns, st.st_size)
                for _, listing in listings
                for _, p in listing
                if (st := _stat(p)) is not None
            ),
            tuple(skipped),
        )
        if sig == self._signature:
            return False
        for path, what in skipped:  # said once per change, as AGENTS.md and skills are (log only)
            log.warning("command file %s is skipped: it %s", path, what)
        found: dict[str, CustomCommand] = {}
        for folder, listing in listings:
            for name, path in listing:
                if name in found or len(found) >= MAX_COMMANDS:
                    continue
                if name in self._reserved:
                    log.warning("command file %s is ignored: /%s is a built-in command", path, name)
                    continue
                command = _load(name, path, folder)
                if command is not None:
                    found[name] = command
        self._signature, self._by_name = sig, found
        return True

    def names(self) -> list[str]:
        return sorted(self._by_name)

    async def commands(self) -> list[SlashCommand]:
        """The custom commands (and ``/init`` unless a file replaces it) as a ``CommandProvider``."""
        out: list[SlashCommand] = []
        if _INIT not in self._by_name and _INIT not in self._reserved:
            out.append(SlashCommand(_INIT, _INIT_DESCRIPTION, self._init, "what to focus on (optional)"))
        for name in sorted(self._by_name):
            found = self._by_name[name]

            async def run(args: str, found: CustomCommand = found) -> CommandOutcome:
                return CommandOutcome(prompt=expand_arguments(found.body, args))

            out.append(SlashCommand(found.name, found.description, run, found.hint))
        return out

    async def _init(self, args: str) -> CommandOutcome:
        prompt = await anyio.to_thread.run_sync(prompt_text, "init.md")
        if args:
            prompt += f"\n\nThe user asks you to pay particular attention to: {args}"
        return CommandOutcome(prompt=prompt)


@functools.cache  # shipped with the package: read once per process
def prompt_text(name: str) -> str:
    """A prompt shipped in ``acp_agent/coding/prompts/`` (blocking the first time)."""
    return resources.files("acp_agent.coding").joinpath("prompts", name).read_text(encoding="utf-8")


def _what(entry: os.DirEntry[str]) -> str:
    """What a command file's entry is that makes it none (never opened: a FIFO would block)."""
    try:
        return kind_phrase(entry.stat().st_mode)
    except OSError:  # a symlink that leads nowhere, or to itself
        return "is a symbolic link that leads nowhere (or loops)"


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


def _load(name: str, path: Path, folder: _Folder) -> CustomCommand | None:
    read = read_bounded(path, COMMAND_FILE_LIMIT, inside=folder.inside)
    if read is None:
        return None
    meta, body = split_front_matter(read.text)
    if not body.strip():
        log.warning("command file %s is empty; skipped", path)
        return None
    hint = meta.get("argument-hint") or meta.get("argument_hint")
    if isinstance(hint, list):  # ``argument-hint: [message]`` is a YAML list
        hint = " ".join(f"[{h}]" for h in hint)  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(hint, str) or not hint.strip():
        hint = "arguments" if _PLACEHOLDER.search(body) else None
    return CustomCommand(name, _describe(meta, body, folder.scope), hint, body, path)
