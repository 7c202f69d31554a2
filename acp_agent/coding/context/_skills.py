"""Skills in the open Agent Skills format: a folder holding ``SKILL.md`` (YAML front matter ``name`` and
``description``, the body the instructions) and any files beside it.

Folders searched, first wins on a name clash: the project's ``.acp-agent/skills/``, ``.agents/skills/``
(Codex) and ``.claude/skills/`` (Claude Code), in each folder from the cwd up to the repository root; then
the user's ``$XDG_CONFIG_HOME/acp-agent/skills/``, ``~/.agents/skills/`` and ``~/.claude/skills/``. The system
prompt lists each skill's name and description only (within ``LISTING_LIMIT`` characters); the model loads
one with the ``skill`` tool, which returns the body and the list of its files, and reads one of those files
with ``skill {"name", "file"}`` (confined to the skill's folder). A project's skill must stay inside its
repository (a ``SKILL.md`` linking elsewhere is skipped).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio.to_thread

from harness import Hints, Result, ToolSpec
from harness.tools import ToolMeta

from ._textfiles import read_bounded, split_front_matter

if TYPE_CHECKING:
    from harness import Call, Tool

__all__ = ["LISTING_LIMIT", "PROJECT_SKILL_DIRS", "Skill", "SkillTool", "Skills"]

log = logging.getLogger(__name__)

PROJECT_SKILL_DIRS: Final = (".acp-agent/skills", ".agents/skills", ".claude/skills")
SKILL_FILE_LIMIT: Final = 128 * 1024
FILE_LIMIT: Final = 256 * 1024
LISTING_LIMIT: Final = 8000
MAX_SKILLS: Final = 200
MAX_FILES: Final = 200
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
_SHORT_DESCRIPTION: Final = 200
_PREAMBLE: Final = (
    "# Skills\n\n"
    "Skills are folders of instructions for particular kinds of task. When a task matches a skill's "
    'description, load that skill with the skill tool (input {"name": …}) before you start and follow '
    "what it says; it lists the files beside it, which you read with skill "
    '{"name": …, "file": …}. Load only the skills a task needs.'
)


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    directory: Path
    """The skill's folder (its real path)."""
    scope: str

    @property
    def file(self) -> Path:
        return self.directory / "SKILL.md"


@dataclass(frozen=True, slots=True)
class _Folder:
    path: Path
    scope: str
    inside: Path | None


def _load(directory: Path, folder: _Folder) -> Skill | None:
    read = read_bounded(directory / "SKILL.md", SKILL_FILE_LIMIT, inside=folder.inside)
    if read is None:
        return None
    meta, _ = split_front_matter(read.text)
    name: Any = meta.get("name") or directory.name
    description: Any = meta.get("description")
    if not isinstance(name, str) or not _NAME.fullmatch(name.strip()):
        log.warning("skill %s: its name %r is not a valid skill name; skipped", read.path, name)
        return None
    if not isinstance(description, str) or not description.strip():
        log.warning("skill %s has no description in its front matter; skipped", read.path)
        return None
    real = Path(os.path.realpath(directory))
    return Skill(name.strip(), " ".join(description.split())[:1024], real, folder.scope)


class Skills:
    """The session's skills; a ``ToolSource`` offering ``skill`` while there is at least one.
    ``scan_sync`` (blocking; in a thread) re-reads the folders and says whether the list changed."""

    def __init__(self, project_folders: Sequence[tuple[Path, Path]], user_dirs: Sequence[Path]) -> None:
        folders: list[_Folder] = []
        for folder, repo in reversed(project_folders):  # the deepest folder first
            folders += [_Folder(folder / d, "project", repo) for d in PROJECT_SKILL_DIRS]
        folders += [_Folder(d, "user", None) for d in user_dirs]
        self._folders = tuple(folders)
        self.by_name: dict[str, Skill] = {}
        self._signature: Any = None
        self._tool = SkillTool(self)

    def scan_sync(self) -> bool:
        candidates: list[tuple[Path, _Folder]] = []
        for folder in self._folders:
            try:
                entries = sorted(os.scandir(folder.path), key=lambda e: e.name)
            except OSError:
                continue
            candidates += [
                (Path(e.path), folder) for e in entries if not e.name.startswith(".") and _is_dir(e)
            ]
        sig: list[tuple[str, int, int]] = []
        for directory, _ in candidates:
            try:
                st = (directory / "SKILL.md").stat()
            except OSError:
                continue
            sig.append((str(directory), st.st_mtime_ns, st.st_size))
        if tuple(sig) == self._signature:
            return False
        found: dict[str, Skill] = {}
        for directory, folder in candidates:
            if len(found) >= MAX_SKILLS:
                break
            skill = _load(directory, folder)
            if skill is not None and skill.name not in found:
                found[skill.name] = skill
        self._signature, self.by_name = tuple(sig), found
        return True

    def section(self) -> str:
        if not self.by_name:
            return ""
        skills = sorted(self.by_name.values(), key=lambda s: s.name)
        lines = [f"- {s.name}: {s.description}" for s in skills]
        if sum(len(line) + 1 for line in lines) > LISTING_LIMIT:  # shorten the descriptions first
            lines = [f"- {s.name}: {_short(s.description)}" for s in skills]
        kept: list[str] = []
        used = 0
        for line in lines:
            if used + len(line) + 1 > LISTING_LIMIT:
                break
            kept.append(line)
            used += len(line) + 1
        if len(kept) < len(lines):
            kept.append(f"- … and {len(lines) - len(kept)} more skills not listed here (over the limit).")
        return _PREAMBLE + "\n\n" + "\n".join(kept)

    async def tools(self) -> Sequence[Tool]:
        return [self._tool] if self.by_name else []


def _short(text: str) -> str:
    return text if len(text) <= _SHORT_DESCRIPTION else text[: _SHORT_DESCRIPTION - 1] + "…"


def _title(tool_input: Mapping[str, Any]) -> str:
    name, file = tool_input.get("name"), tool_input.get("file")
    if isinstance(file, str) and file:
        return f"Read {file} of skill {name}"
    return f"Load skill {name}" if isinstance(name, str) and name else "Load a skill"


def _files(directory: Path) -> list[tuple[str, int]]:
    """The skill's other files, relative (bounded walk; hidden entries skipped). Blocking."""
    out: list[tuple[str, int]] = []
    for current, dirs, files in os.walk(directory):
        depth = len(Path(current).relative_to(directory).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and depth < 4)
        for f in sorted(files):
            if f.startswith(".") or (depth == 0 and f == "SKILL.md"):
                continue
            path = Path(current) / f
            try:
                size = path.stat().st_size
            except OSError:
                continue
            out.append((path.relative_to(directory).as_posix(), size))
            if len(out) >= MAX_FILES:
                return out
    return out


class SkillTool:
    """``skill {name, file?}``: a skill's instructions and file list, or one of its files."""

    def __init__(self, skills: Skills) -> None:
        self._skills = skills

    def spec(self) -> ToolSpec:
        return ToolSpec(
            "skill",
            "Load a skill listed in the system prompt: returns its instructions and the files beside them. "
            "With file, returns that file of the skill (a path relative to the skill's folder).",
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The skill's name, as listed."},
                    "file": {"type": "string", "description": "A file of the skill, relative to its folder."},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
            Hints(read_only=True, idempotent=True),
            meta=ToolMeta(kind="read", title=_title),
        )

    async def call(self, input: dict[str, Any], call: Call) -> Result:
        name = str(input.get("name") or "")
        skill = self._skills.by_name.get(name)
        if skill is None:
            known = ", ".join(sorted(self._skills.by_name)) or "(none)"
            return Result.failure(f"skill: unknown skill {name!r}; the skills are: {known}")
        file = input.get("file")
        if isinstance(file, str) and file.strip():
            return await anyio.to_thread.run_sync(_read_file, skill, file.strip())
        return await anyio.to_thread.run_sync(_load_skill, skill)


def _load_skill(skill: Skill) -> Result:
    read = read_bounded(skill.file, SKILL_FILE_LIMIT, inside=skill.directory)
    if read is None:
        return Result.failure(f"skill {skill.name}: {skill.file} can no longer be read")
    _, body = split_front_matter(read.text)
    files = _files(skill.directory)
    text = f"Skill {skill.name} ({skill.file})\n\n{body.strip()}"
    if read.cut:
        text += f"\n\n[Cut: SKILL.md holds {read.size:,} bytes; only the first {SKILL_FILE_LIMIT // 1024} KiB are shown.]"
    if files:
        listing = "\n".join(f"- {path} ({size:,} bytes)" for path, size in files)
        text += (
            f"\n\nFiles of this skill, in {skill.directory}/ (read one with skill "
            f'{{"name": "{skill.name}", "file": "<path>"}}):\n{listing}'
        )
    value = {
        "path": str(skill.file),
        "line": 1,
        "skill": skill.name,
        "skill_files": [p for p, _ in files],
    }
    return Result.text(text, value=value)


def _read_file(skill: Skill, file: str) -> Result:
    target = skill.directory / file
    if "\x00" in file or os.path.isabs(file):
        return Result.failure(f"skill {skill.name}: give the file relative to the skill's folder")
    read = read_bounded(target, FILE_LIMIT, inside=skill.directory)
    if read is None:
        return Result.failure(f"skill {skill.name}: {file} is not a readable file inside {skill.directory}/")
    text = read.text
    if read.cut:
        text += f"\n\n[Cut: the file holds {read.size:,} bytes; only the first {FILE_LIMIT // 1024} KiB are shown.]"
    return Result.text(
        text, value={"path": str(Path(os.path.realpath(target))), "line": 1, "skill": skill.name}
    )


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """``entry.is_dir()``, False for what cannot be told (a symlink loop raises ELOOP)."""
    try:
        return entry.is_dir()
    except OSError:
        return False
