"""Project instructions: ``AGENTS.md`` files (and the names other agents use) for the system prompt.

For each session root (the cwd, then each ``additionalDirectories`` entry), the folders from its repository
root (the nearest ancestor holding ``.git``, else the root itself) down to it are searched, root first; in
each folder the first of ``INSTRUCTION_NAMES`` that exists is taken. The user's own file
(``$XDG_CONFIG_HOME/acp-agent/AGENTS.md``) comes first. Each file is shown under a heading naming its path,
cut at ``FILE_LIMIT`` bytes; once ``TOTAL_LIMIT`` is reached the rest are named but not included; the model
is told what was cut. A project's file is read only if it is a regular file whose real path stays inside
its repository (a link to ``~/.ssh/id_rsa`` is skipped).

A file may import others as Claude Code's memory files do: ``@path`` (relative to the file's folder, or
``~/…``) outside code, up to three levels deep, within the importing file's limit and, for a project's file,
inside its repository.

``Instructions.refresh_sync`` (once per turn, in a worker thread) re-reads them when any candidate path
changed. Deeper folders: ``DeeperInstructions`` (a tool middleware) attaches a folder's own file to the
result of the first file tool call below it, once (again if the file changed since), within
``DEEPER_LIMIT`` per session.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio.to_thread

from harness import Text
from harness.tools import real_path

from ._textfiles import TextFile, read_bounded, signature

if TYPE_CHECKING:
    from harness import Call, Result, ToolCall
    from harness.middleware import NextTool

__all__ = [
    "DEEPER_LIMIT",
    "FILE_LIMIT",
    "INSTRUCTION_NAMES",
    "TOTAL_LIMIT",
    "DeeperInstructions",
    "Instructions",
    "repository_root",
]

INSTRUCTION_NAMES: Final = ("AGENTS.md", "CLAUDE.md", "GEMINI.md")
"""Per folder, the first that exists: the open ``AGENTS.md``, then Claude Code's and Gemini CLI's names."""
FILE_LIMIT: Final = 32 * 1024
TOTAL_LIMIT: Final = 64 * 1024
DEEPER_LIMIT: Final = 128 * 1024
_FILE_TOOLS: Final = frozenset(
    {"read_file", "write_file", "edit_file", "apply_patch", "list_dir", "glob", "grep"}
)
_DIR_TOOLS: Final = frozenset({"list_dir", "glob", "grep"})
_PREAMBLE: Final = (
    "# Instructions\n\n"
    "The files below hold the user's and the project's instructions (the user's own file first, then the "
    "project's from its repository root down to the working directory). Follow them. A file in a deeper "
    "folder takes precedence over one above it for the files under its folder; the user's requests in this "
    "conversation take precedence over all of them. Folders deeper down may hold instructions of their "
    "own: they arrive with the result of the first file tool call there."
)


def repository_root(directory: Path) -> Path:
    """The nearest ancestor of ``directory`` (itself included) holding ``.git``, else ``directory``. The home
    folder and those above it count only when opened themselves: a dotfiles repository at ``~`` would make a
    downloaded project's ``@~/.config/gh/hosts.yml`` import "inside the repository"."""
    home = Path(os.path.realpath(os.path.expanduser("~")))
    for d in (directory, *directory.parents):
        if d != directory and home.is_relative_to(d):
            break
        if (d / ".git").exists():
            return d
    return directory


def _real(path: Path) -> Path:
    return real_path(path)  # (an OSError: a link on the way was swapped while it was read)


def _find(directory: Path, inside: Path | None, imported: set[Path] | None = None) -> TextFile | None:
    for name in INSTRUCTION_NAMES:
        found = read_bounded(directory / name, FILE_LIMIT, inside=inside)
        if found is not None:
            return with_imports(found, inside, imported)
    return None


_IMPORT: Final = re.compile(r"(?<![\w`@])@((?:~/|\.{1,2}/|/)?[\w.-][\w./-]*)")
_MAX_IMPORT_DEPTH: Final = 3


def _import_targets(text: str, base: Path) -> list[Path]:
    """The ``@path`` imports of ``text`` (Claude Code's memory imports), outside code blocks and spans."""
    out: list[Path] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        for m in _IMPORT.finditer(re.sub(r"`[^`]*`", "", line)):
            raw = m.group(1).rstrip(".,;:)")
            path = Path(os.path.expanduser(raw)) if raw.startswith("~/") else base / raw
            if path.suffix and path not in out:  # a file name, not a mention such as @alice
                out.append(path)
    return out


def with_imports(
    f: TextFile, inside: Path | None, imported: set[Path] | None = None, depth: int = 0
) -> TextFile:
    """``f`` with the files it imports (``@path``, relative to its folder) appended, each under a heading,
    within the file's own limit; a project's imports must stay inside ``inside``. Blocking."""
    if depth >= _MAX_IMPORT_DEPTH or "@" not in f.text:
        return f
    parts = [f.text.rstrip("\n")]
    size, room = f.size, FILE_LIMIT - len(f.text)
    for target in _import_targets(f.text, f.path.parent):
        if imported is not None:
            imported.add(target)
        if room <= 0:
            break
        read = read_bounded(target, room, inside=inside)
        if read is None or read.path == f.path:
            continue
        read = with_imports(read, inside, imported, depth + 1)
        parts.append(f"### Imported from {target}\n\n{read.text.strip()}")
        room -= len(read.text)
        size += read.size
    return TextFile(f.path, "\n\n".join(parts) + "\n", size) if len(parts) > 1 else f


def _cut_note(f: TextFile) -> str:
    return (
        f"\n\n[Cut: {f.path} holds {f.size:,} bytes; only the first {FILE_LIMIT // 1024} KiB are shown. "
        "Read the rest with read_file where it matters.]"
    )


@dataclass(slots=True)
class _Loaded:
    files: list[tuple[TextFile, str]] = field(default_factory=list[tuple[TextFile, str]])
    """Each file and its heading's note (the user's file says so)."""
    left_out: list[Path] = field(default_factory=list[Path])


class Instructions:
    """The session's instruction files; ``refresh_sync`` (blocking: call it in a thread) re-reads them
    when something changed and says whether it did; ``section`` is the system prompt's part."""

    def __init__(self, roots: Sequence[Path], user_file: Path | None) -> None:
        self.user_file = user_file
        chains: list[tuple[Path, Path]] = []  # (folder, its repository root), root first, no repeats
        seen: set[Path] = set()
        for root in roots:
            real_root = _real(root)
            repo = repository_root(real_root)
            folders = [real_root, *[p for p in real_root.parents if p.is_relative_to(repo)]]
            for folder in reversed(folders):
                if folder not in seen:
                    seen.add(folder)
                    chains.append((folder, repo))
        self.folders: tuple[tuple[Path, Path], ...] = tuple(chains)
        self.roots: tuple[Path, ...] = tuple(_real(r) for r in roots)
        self._signature: Any = None
        self._loaded = _Loaded()
        self._lock = threading.Lock()
        self._deeper: dict[Path, Any] = {}  # deeper file -> its signature when last attached
        self._deeper_used = 0
        self._imported: set[Path] = set()  # the files the last read imported (their changes count too)

    def _candidates(self) -> list[Path]:
        paths = [self.user_file] if self.user_file is not None else []
        paths += [folder / name for folder, _ in self.folders for name in INSTRUCTION_NAMES]
        return paths + sorted(self._imported)

    def refresh_sync(self) -> bool:
        sig = signature(self._candidates())
        if sig == self._signature:
            return False
        loaded = _Loaded()
        used = 0
        imported: set[Path] = set()
        found: list[tuple[TextFile | None, str]] = []
        if self.user_file is not None:
            user = read_bounded(self.user_file, FILE_LIMIT)
            user = with_imports(user, None, imported) if user is not None else None
            found.append((user, " (the user's instructions, for every project)"))
        found += [(_find(folder, repo, imported), "") for folder, repo in self.folders]
        for f, note in found:
            if f is None:
                continue
            if used + len(f.text) > TOTAL_LIMIT:
                loaded.left_out.append(f.path)
                continue
            used += len(f.text)
            loaded.files.append((f, note))
        with self._lock:
            # Taken before the read: a change during it is seen next turn (new imports are, too).
            self._signature, self._loaded, self._imported = sig, loaded, imported
        return True

    @property
    def paths(self) -> list[Path]:
        """The files included now, in order."""
        return [f.path for f, _ in self._loaded.files]

    def section(self) -> str:
        loaded = self._loaded
        if not loaded.files and not loaded.left_out:
            return ""
        parts = [_PREAMBLE]
        for f, note in loaded.files:
            parts.append(f"## {f.path}{note}\n\n{f.text.strip()}" + (_cut_note(f) if f.cut else ""))
        if loaded.left_out:
            names = ", ".join(str(p) for p in loaded.left_out)
            parts.append(
                f"[Not included, over the {TOTAL_LIMIT // 1024} KiB total for instructions: {names}. "
                "Read them with read_file when they matter.]"
            )
        return "\n\n".join(parts)

    # --- deeper folders --------------------------------------------------------------------------------

    def deeper_sync(self, touched: Iterable[Path]) -> list[TextFile]:
        """The instruction files of folders below a session root, down to each of ``touched`` (folders),
        not attached yet (or changed since). Blocking."""
        initial = {folder for folder, _ in self.folders}
        out: list[TextFile] = []
        with self._lock:
            for target in touched:
                root = next((r for r in self.roots if target == r or target.is_relative_to(r)), None)
                if root is None:
                    continue
                below = [p for p in (target, *target.parents) if p.is_relative_to(root) and p not in initial]
                for folder in reversed(below):
                    found = _find(folder, root)
                    if found is None or any(f.path == found.path for f in out):
                        continue
                    sig = signature([found.path])
                    if self._deeper.get(found.path) == sig:
                        continue
                    if self._deeper_used + len(found.text) > DEEPER_LIMIT:
                        continue
                    self._deeper[found.path] = sig
                    self._deeper_used += len(found.text)
                    out.append(found)
        return out


def deeper_note(f: TextFile) -> str:
    scope = f.path.parent
    body = f.text.strip() + (_cut_note(f) if f.cut else "")
    return (
        f"Instructions from {f.path} (they apply to the files under {scope}/ and take precedence there over "
        f"the instructions above that folder):\n\n{body}"
    )


class FindsDeeper(Protocol):
    """``Instructions``, or what holds them once found (``ProjectContext``)."""

    def deeper_sync(self, touched: Sequence[Path]) -> list[TextFile]: ...


class DeeperInstructions:
    """Tool middleware (inside the permission checks): a file tool call's result carries the
    instructions of the folders below a session root down to where it worked, the first time."""

    def __init__(self, instructions: FindsDeeper, first_root: Path) -> None:
        self._instructions = instructions
        self._first = first_root

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        result = await next(call, context)
        if call.name not in _FILE_TOOLS or context.pending() is not None:
            return result

        def find() -> list[TextFile]:
            touched = _touched(call.name, call.input, result.value, self._first)
            return self._instructions.deeper_sync(touched) if touched else []

        found = await anyio.to_thread.run_sync(find)
        if not found:
            return result
        notes = tuple(Text("\n\n" + deeper_note(f)) for f in found)
        return replace(result, content=(*result.content, *notes))


def _touched(tool: str, tool_input: dict[str, Any], value: Any, first: Path) -> list[Path]:
    """The folders a file tool call worked in: its input path, and the paths in its result's value.
    Blocking (it resolves the paths)."""
    raw: list[str] = []
    if isinstance(tool_input.get("path"), str):
        raw.append(str(tool_input["path"]))
    if isinstance(value, dict):
        v: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
        if isinstance(v.get("path"), str):
            raw.append(str(v["path"]))
        diffs: Any = v.get("diffs")
        if isinstance(diffs, list):
            for d in diffs:  # pyright: ignore[reportUnknownVariableType]
                if isinstance(d, dict) and isinstance(d.get("path"), str):  # pyright: ignore[reportUnknownMemberType]
                    raw.append(str(d["path"]))  # pyright: ignore[reportUnknownArgumentType]
    out: list[Path] = []
    for text in raw:
        if "\x00" in text:
            continue
        try:
            path = _real(first / text)  # an absolute path stays itself
        except OSError:
            continue  # changing under us (a link swapped meanwhile): no instructions from there
        folder = path if tool in _DIR_TOOLS or path.is_dir() else path.parent
        if folder not in out:
            out.append(folder)
    return out
