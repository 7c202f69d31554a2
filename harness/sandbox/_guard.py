"""Protected names a sandboxed command made, removed once it has ended.

A sandboxed command may create plain files in the project (``touch notes.txt``, ``go mod init``): Landlock
grants rights by folder, never by name, so the same right would let it create ``.envrc`` or a ``.git``
file (``gitdir: …``) where none exists. The protected paths that *exist* are read-only mounts in the
command's namespace (no write, no removal, no rename over them); the *absent* ones are noted before the
command starts (``Absent.note``) and whatever the command made there is removed after
it ended, when the PID namespace guarantees nothing of it is left to write again (``Absent.refuse``):
renamed in place to ``<name>.refused`` (``.refused-2``…), inert and visible, so that a file the user
made there meanwhile (the editor saving an ``.envrc`` during a long build) is never lost.
Only plain files (and hard links) can appear there: the sandbox grants no folder, symlink nor special
file outside the folders that already exist.

Both look the same way (``_existing``): one listing of each root's top, then an ``lstat`` only for the
protected paths whose first part is there (a nested path under a top entry that does not exist does not
exist either). Of the some 230 protected paths a root has, a project holds a handful of first parts, so a
command's start and end cost two listings instead of 460 ``lstat`` calls (about 3 ms of a short command).

What remains: between the command creating such a file and its end, a tool that reads it by itself (the
editor's git reading a new ``.git`` file, in a project that has no repository yet) may act on it. Said in
the README's security model.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from ..protected import PROTECTED
from ._policy import SandboxPolicy

__all__ = ["Absent"]

_TOP_GLOBS = tuple(p.parts[0] for p in PROTECTED if len(p.parts) == 1 and "*" in p.parts[0])
"""Protected names given as patterns (``*.code-workspace``): checked by listing each root's top."""


@dataclass(frozen=True, slots=True)
class Absent:
    """The protected paths a command's policy writes around that did not exist before it ran."""

    absent: tuple[tuple[Path, tuple[str, ...]], ...]
    """Each root, and its protected paths (relative) that did not exist."""
    top: frozenset[str]
    """What each root held before (for the pattern-named protected files)."""

    @classmethod
    def note(cls, policy: SandboxPolicy) -> Absent:
        """Blocking (a listing per root, an ``lstat`` per protected path that may exist)."""
        if not policy.enabled or policy.mode != "workspace-write":
            return cls((), frozenset())
        absent: list[tuple[Path, tuple[str, ...]]] = []
        top: list[str] = []
        for root in policy.roots:
            names = _top(root)
            there = set(_existing(root, policy.protected, names))
            absent.append((root, tuple(rel for rel in policy.protected if rel not in there)))
            top.extend(_globbed(root, names))
        return cls(tuple(absent), frozenset(top))

    def refuse(self) -> list[tuple[Path, Path]]:
        """Move what appeared at those paths aside (the entry itself, never a link's target): the pairs
        (protected path, where it went). Blocking; call once the command and all it started have ended."""
        made: list[Path] = []
        for root, rels in self.absent:
            names = _top(root)
            made.extend(root / rel for rel in _existing(root, rels, names))
            made.extend(Path(p) for p in _globbed(root, names) if p not in self.top)
        moved: list[tuple[Path, Path]] = []
        for path in made:
            for n in range(1, 100):
                aside = path.with_name(f"{path.name}.refused" + (f"-{n}" if n > 1 else ""))
                if os.path.lexists(aside):
                    continue
                try:
                    os.rename(path, aside)
                except OSError:
                    break
                moved.append((path, aside))
                break
        return moved


def _top(root: Path) -> tuple[str, ...] | None:
    """The names at the top of ``root``; None when it cannot be listed (every path is then looked up)."""
    try:
        with os.scandir(root) as entries:
            return tuple(e.name for e in entries)
    except OSError:
        return None


def _existing(root: Path, protected: Iterable[str], top: tuple[str, ...] | None) -> list[str]:
    """Those of ``protected`` (paths relative to ``root``) that exist there, a link as itself. A path whose
    first part is not at the top (``top``) does not exist; compared without case, so that a
    case-insensitive file system's ``.Config`` still has its ``.config/...`` looked up."""
    there = None if top is None else {n.lower() for n in top}
    out: list[str] = []
    for rel in protected:
        if there is not None and not os.path.isabs(rel) and rel.split("/", 1)[0].lower() not in there:
            continue
        if os.path.lexists(root / rel):
            out.append(rel)
    return out


def _globbed(root: Path, top: tuple[str, ...] | None) -> list[str]:
    """The pattern-named protected files among ``top``, the names at the top of ``root``."""
    if not _TOP_GLOBS or top is None:
        return []
    return [str(root / n) for n in top if any(fnmatchcase(n.lower(), g) for g in _TOP_GLOBS)]
