"""The environment block of the system prompt: today's date, the OS, the shell, the project directories
and, for each, whether it is a git repository, its branch and whether the tree has uncommitted changes.

Cheap and bounded: no network; the repository and its branch are read from the files (``_git``), then one
``git status`` per repository, all at once, each killed after ``GIT_TIMEOUT_S`` (the state is then said to be
unknown). That git cannot run anything the repository configures, and runs sandboxed where it can
(``_git``'s docstring says how).
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

from ._git import Repository, find_repository, head_branch, run_git

if TYPE_CHECKING:
    from harness.sandbox import Support
    from harness.secrets import Secrets

__all__ = ["GIT_TIMEOUT_S", "GitState", "Repository", "environment_section", "find_repository", "git_state"]

GIT_TIMEOUT_S: Final = 2.0
SHELL_TOOL: Final = "bash"
_STATUS_ARGS: Final = (
    "status",
    "--porcelain=v1",
    "--branch",
    "--untracked-files=normal",
    "--ignore-submodules=all",
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


async def git_state(
    repo: Repository,
    environ: Mapping[str, str],
    secrets: Secrets | None = None,
    support: Support | None = None,
    fenced: Sequence[Path] = (),
) -> GitState:
    """``repo``'s state (``find_repository(directory)``): the branch from ``HEAD``, a bounded ``git status``
    for the rest. ``fenced``: the session's folders (see ``run_git``)."""
    done = await run_git(
        repo,
        _STATUS_ARGS,
        environ,
        secrets=secrets,
        support=support,
        timeout_s=GIT_TIMEOUT_S,
        fenced=fenced,
    )
    if done.code == 0 or (done.cut and done.stdout.startswith("## ")):
        branch, dirty = _parse_status(done.stdout)
        if branch is not None:
            return GitState(repo.work_tree, branch, dirty)
    return GitState(repo.work_tree, await anyio.to_thread.run_sync(head_branch, repo.git_dir), None)


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
    repos: Sequence[Repository | None],
    support: Support | None = None,
) -> str:
    """The ``# Environment`` part of the system prompt. ``repos``: ``find_repository`` of each root (the
    caller looks them up in a worker-thread hop it makes anyway)."""
    states: list[GitState] = [GitState(None)] * len(roots)

    async def one(i: int, root: Path) -> None:
        repo = repos[i]
        if repo is not None:  # outside a repository there is nothing to run
            states[i] = await git_state(repo, environ, secrets, support, fenced=roots)

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
