"""Protected names a sandboxed command made, removed once it has ended.

A sandboxed command may create plain files in the project (``touch notes.txt``, ``go mod init``): Landlock
grants rights by folder, never by name, so the same right would let it create ``.envrc`` or a ``.git``
file (``gitdir: …``) where none exists. The protected paths that *exist* are read-only mounts in the
command's namespace (no write, no removal, no rename over them); the *absent* ones are noted before the
command starts (``Absent.note``, one ``lstat`` each) and whatever the command made there is removed after
it ended, when the PID namespace guarantees nothing of it is left to write again (``Absent.refuse``):
renamed in place to ``<name>.refused`` (``.refused-2``…), inert and visible, so that a file the user
made there meanwhile (the editor saving an ``.envrc`` during a long build) is never lost.
Only plain files (and hard links) can appear there: the sandbox grants no folder, symlink nor special
file outside the folders that already exist.

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

    paths: tuple[Path, ...]
    roots: tuple[Path, ...]
    top: frozenset[str]
    """What each root held before (for the pattern-named protected files)."""

    @classmethod
    def note(cls, policy: SandboxPolicy) -> Absent:
        """Blocking (an ``lstat`` per protected path, a listing per root)."""
        if not policy.enabled or policy.mode != "workspace-write":
            return cls((), (), frozenset())
        paths = tuple(p for p in policy.protected_paths() if not os.path.lexists(p))
        return cls(paths, policy.roots, frozenset(_globbed(policy.roots)))

    def refuse(self) -> list[tuple[Path, Path]]:
        """Move what appeared at those paths aside (the entry itself, never a link's target): the pairs
        (protected path, where it went). Blocking; call once the command and all it started have ended."""
        made = [p for p in self.paths if os.path.lexists(p)]
        made.extend(Path(p) for p in _globbed(self.roots) if p not in self.top)
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


def _globbed(roots: Iterable[Path]) -> list[str]:
    found: list[str] = []
    if not _TOP_GLOBS:
        return found
    for root in roots:
        try:
            entries = list(os.scandir(root))
        except OSError:
            continue
        found.extend(e.path for e in entries if any(fnmatchcase(e.name.lower(), g) for g in _TOP_GLOBS))
    return found
