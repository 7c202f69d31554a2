"""The environment block of the system prompt: today's date, the OS, the shell, the project directories
and, for each, whether it is a git repository, its branch and whether the tree has uncommitted changes.

Cheap and bounded: no network; one ``git status`` per directory, all at once, each killed after
``GIT_TIMEOUT_S`` (then the branch is read from ``.git/HEAD`` and the state said to be unknown). git runs
without the agent's credentials or any ``GIT_*`` variable, with ``core.fsmonitor`` off (a repository's own
setting cannot start a program) and without taking the index lock (``--no-optional-locks``).
"""

from __future__ import annotations

import datetime
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Final

import anyio
import anyio.to_thread

from ._instructions import repository_root

if TYPE_CHECKING:
    from harness.secrets import Secrets
from ._process import run_bounded

__all__ = ["GIT_TIMEOUT_S", "GitState", "environment_section", "find_repository", "git_state"]

GIT_TIMEOUT_S: Final = 2.0
SHELL_TOOL: Final = "bash"
_GIT_ARGV: Final = (
    "git",
    "--no-optional-locks",
    "-c",
    "core.fsmonitor=false",
    "status",
    "--porcelain=v1",
    "--branch",
    "--untracked-files=normal",
)


@dataclass(frozen=True, slots=True)
class GitState:
    """``repo`` is None outside a git repository; ``dirty`` None when it could not be told in time."""

    repo: Path | None
    branch: str | None = None
    dirty: bool | None = None

    def describe(self) -> str:
        if self.repo is None:
            return "not a git repository"
        parts = [f"a git repository (root {self.repo})"]
        if self.branch:
            parts.append(self.branch)
        if self.dirty is True:
            parts.append("uncommitted changes")
        elif self.dirty is False:
            parts.append("no uncommitted changes")
        else:
            parts.append("uncommitted changes unknown (git status failed or timed out)")
        return ", ".join(parts)


def _head_branch(repo: Path) -> str | None:
    """The branch from ``.git/HEAD`` (following a worktree's ``gitdir:`` file). Blocking."""
    git = repo / ".git"
    try:
        if git.is_file():
            line = git.read_text(encoding="utf-8", errors="replace").strip()
            if not line.startswith("gitdir:"):
                return None
            target = Path(line.removeprefix("gitdir:").strip())
            git = target if target.is_absolute() else repo / target
        head = (git / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if head.startswith("ref: refs/heads/"):
        return "branch " + head.removeprefix("ref: refs/heads/")
    return f"detached HEAD at {head[:12]}" if head else None


def _parse_status(out: str) -> tuple[str | None, bool]:
    lines = [line for line in out.split("\n") if line]
    branch: str | None = None
    if lines and lines[0].startswith("## "):
        head = lines.pop(0)[3:]
        if head.startswith("No commits yet on "):
            branch = f"branch {head.removeprefix('No commits yet on ')} (no commits yet)"
        elif head.startswith("HEAD (no branch)"):
            branch = "detached HEAD"
        else:
            branch = "branch " + head.split("...", 1)[0].strip()
    return branch, bool(lines)


def find_repository(directory: Path) -> Path | None:
    """The git repository ``directory`` is in (blocking: a stat per parent), None outside one."""
    repo = repository_root(directory)
    return repo if (repo / ".git").exists() else None


async def git_state(
    directory: Path, repo: Path, environ: Mapping[str, str], secrets: Secrets | None = None
) -> GitState:
    """``directory``'s state in ``repo`` (``find_repository(directory)``): a bounded ``git status``."""
    base = secrets.child_env(environ) if secrets is not None else dict(environ)
    env = {k: v for k, v in base.items() if not k.startswith("GIT_")}
    env |= {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    done = await run_bounded(
        _GIT_ARGV, cwd=directory, env=env, timeout_s=GIT_TIMEOUT_S, limit=16 * 1024, stop_at_limit=True
    )
    if done.code == 0 or (done.cut and done.stdout.startswith("## ")):
        branch, dirty = _parse_status(done.stdout)
        if branch is not None:
            return GitState(repo, branch, dirty)
    return GitState(repo, await anyio.to_thread.run_sync(_head_branch, repo), None)


@cache
def _os_name() -> str:
    system, release, machine = platform.system(), platform.release(), platform.machine()
    detail = ""
    if system == "Linux":
        try:
            detail = platform.freedesktop_os_release().get("PRETTY_NAME", "")
        except OSError:
            detail = ""
    elif system == "Darwin":
        detail = "macOS " + platform.mac_ver()[0]
    return f"{system} {release}" + (f" ({detail})" if detail else "") + (f", {machine}" if machine else "")


async def environment_section(
    roots: Sequence[Path],
    environ: Mapping[str, str],
    *,
    secrets: Secrets | None = None,
    today: datetime.date | None = None,
    repos: Sequence[Path | None],
) -> str:
    """The ``# Environment`` part of the system prompt. ``repos``: ``find_repository`` of each root (the
    caller looks them up in a worker-thread hop it makes anyway)."""
    states: list[GitState] = [GitState(None)] * len(roots)

    async def one(i: int, root: Path) -> None:
        repo = repos[i]
        if repo is not None:  # outside a repository there is nothing to run
            states[i] = await git_state(root, repo, environ, secrets)

    async with anyio.create_task_group() as tg:
        for i, root in enumerate(roots):
            tg.start_soon(one, i, root)
    day = today or datetime.date.today()
    # Read from a file once per process (cached): later turns take it without a thread hop.
    os_name = _os_name() if _os_name.cache_info().currsize else await anyio.to_thread.run_sync(_os_name)
    login = environ.get("SHELL")
    lines = [
        "# Environment",
        "",
        f"- Today's date: {day.isoformat()} ({day.strftime('%A')})",
        f"- Operating system: {os_name}",
        f"- Shell: the shell tool runs commands with {SHELL_TOOL}"
        + (f"; the user's login shell is {login}" if login else ""),
        "- Project directories (relative paths in the tools resolve against the first):",
    ]
    lines += [f"  - {root}: {state.describe()}" for root, state in zip(roots, states, strict=True)]
    return "\n".join(lines)
