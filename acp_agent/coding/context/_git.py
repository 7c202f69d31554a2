"""The git the agent runs on its own account (the environment block's ``git status``), unable to run code a
repository configures.

A cloned repository controls its ``.git/config`` (and what it includes), its ``.gitattributes`` and, opened
from a subfolder, which folder git takes as the repository (an embedded bare repository). git runs
programs from its configuration: filter drivers (``clean``/``smudge``/``process``), ``core.fsmonitor``,
hooks, external diff and textconv drivers, credential helpers, a pager. So:

- the repository is found here, from the files: the nearest folder holding a ``.git`` folder, or a ``.git``
  file whose ``gitdir:`` names a folder with a ``HEAD`` (a worktree, a submodule). A bare repository is never
  taken (git is told ``--git-dir``/``--work-tree`` explicitly and ``safe.bareRepository=explicit``);
- the branch is read from ``HEAD``, never asked of git;
- git runs with every program-starting setting overridden from the command line (which wins over every
  file): the fixed ones (fsmonitor, hooks, pager, external diff, credential helper, untracked cache,
  submodule recursion, automatic maintenance) and, per driver name that the configuration defines (listed
  first with ``git config --list --includes``, which runs nothing), ``filter.<name>.clean/smudge/process``
  emptied and ``required`` false, ``diff.<name>.textconv/command`` and ``merge.<name>.driver`` emptied.
  Overrides go through ``GIT_CONFIG_COUNT`` variables (a driver name may hold ``=``, which ``-c`` cannot);
- in an environment of a few named variables (no credential, no ``GIT_*`` of the user's that could redirect
  git, ``GIT_CONFIG_NOSYSTEM``), without optional locks, submodules ignored;
- and, where this machine has a sandbox, inside it, as a shell command is: read-only (no write anywhere), no
  network at all (its own network namespace), its processes ending with it (see ``run_git``);
- the ``git`` program itself found where the project cannot supply one (``harness.programs``): never through
  an empty or relative ``PATH`` entry (they name folders of the project, where git runs), nor in the
  repository's or the session's folders (a file a clone ships, or a sandboxed command wrote, run outside the
  sandbox at the next turn).

A setting git added after this list (a new program-starting key) is the residual risk the sandbox covers.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import anyio
import anyio.to_thread

from harness.programs import require_program
from harness.sandbox import SandboxPolicy, open_process, probe
from harness.secrets import Secrets

from ._process import Completed, run_bounded

if TYPE_CHECKING:
    from harness.sandbox import SandboxPolicy, Support

__all__ = ["Repository", "find_repository", "git_overrides", "head_branch", "run_git"]

_KEPT_ENV: Final = ("PATH", "HOME", "USER", "LOGNAME", "XDG_CONFIG_HOME", "TMPDIR", "SYSTEMROOT")
"""The user's variables git gets (``HOME``/``XDG_CONFIG_HOME``: the user's own git config, whose
program-starting settings are overridden like the repository's)."""

_FIXED: Final = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("core.untrackedCache", "false"),
    ("core.pager", "cat"),
    ("core.sshCommand", "false"),
    ("core.askPass", ""),
    ("core.alternateRefsCommand", ""),
    ("credential.helper", ""),
    ("diff.external", ""),
    ("protocol.allow", "never"),
    ("safe.bareRepository", "explicit"),
    ("submodule.recurse", "false"),
    ("status.submoduleSummary", "false"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
)

_DRIVERS: Final = {
    "filter": (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")),
    "diff": (("textconv", ""), ("command", "")),
    "merge": (("driver", ""),),
}


@dataclass(frozen=True, slots=True)
class Repository:
    """A repository found from the files: its work tree and its git folder (``.git``, or where a ``.git``
    file's ``gitdir:`` points)."""

    work_tree: Path
    git_dir: Path


def _gitdir_of(candidate: Path) -> Path | None:
    """The git folder ``candidate`` (a ``.git`` entry) stands for; None when it is not one."""
    try:
        if candidate.is_dir():
            return candidate if (candidate / "HEAD").is_file() else None
        if not candidate.is_file():
            return None
        with candidate.open("rb") as f:
            first = f.read(4096).split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    target = Path(first.removeprefix("gitdir:").strip())
    target = target if target.is_absolute() else candidate.parent / target
    try:
        return target if (target / "HEAD").is_file() else None
    except OSError:
        return None


def find_repository(directory: Path) -> Repository | None:
    """The repository ``directory`` is in (blocking: a few stats per parent). The nearest ``.git`` decides:
    one that is neither a git folder nor a valid ``gitdir:`` file means no repository, as for git."""
    for d in (directory, *directory.parents):
        candidate = d / ".git"
        if os.path.lexists(candidate):
            git_dir = _gitdir_of(candidate)
            return Repository(d, git_dir) if git_dir is not None else None
    return None


def head_branch(git_dir: Path) -> str | None:
    """The branch ``HEAD`` names, read from the file (blocking); None when it cannot be read."""
    try:
        with (git_dir / "HEAD").open("rb") as f:
            head = f.read(1024).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if head.startswith("ref: refs/heads/"):
        return "branch " + head.removeprefix("ref: refs/heads/")
    return f"detached HEAD at {head[:12]}" if head else None


def git_overrides(config_list: str) -> list[tuple[str, str]]:
    """The settings that keep git from starting a program: the fixed ones, and one set per driver name in
    ``config_list`` (the output of ``git config -z --list --includes``: ``key\\nvalue`` records, NUL-ended)."""
    names: dict[str, set[str]] = {section: set() for section in _DRIVERS}
    for record in config_list.split("\0"):
        key = record.split("\n", 1)[0]
        section, _, rest = key.partition(".")
        if section.lower() in names and "." in rest:
            names[section.lower()].add(rest.rsplit(".", 1)[0])
    out = list(_FIXED)
    for section, keys in _DRIVERS.items():
        for name in sorted(names[section]):
            out.extend((f"{section}.{name}.{key}", value) for key, value in keys)
    return out


def _env(
    environ: Mapping[str, str], secrets: Secrets | None, overrides: Sequence[tuple[str, str]]
) -> dict[str, str]:
    env = {
        **(secrets or Secrets()).child_env(environ, keep=_KEPT_ENV),
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_CONFIG_COUNT": str(len(overrides)),
    }
    for i, (key, value) in enumerate(overrides):
        env[f"GIT_CONFIG_KEY_{i}"] = key
        env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


def _pinned(git: str, repo: Repository, args: Sequence[str]) -> list[str]:
    return [
        git,
        "--no-pager",
        "--no-optional-locks",
        f"--git-dir={repo.git_dir}",
        f"--work-tree={repo.work_tree}",
        *args,
    ]


def _policy(repo: Repository) -> SandboxPolicy:
    return SandboxPolicy(mode="read-only", network=False, roots=(repo.work_tree,), protected=())


async def _run_sandboxed(
    argv: Sequence[str],
    repo: Repository,
    env: Mapping[str, str],
    support: Support,
    timeout_s: float,
    limit: int,
) -> Completed:
    """``argv`` read-only, with no network, in the sandbox (through its launcher); its stderr is dropped (the sandbox merges it into stdout, which is parsed). The whole group
    is killed at the end, whatever happens."""
    wrapped = ["/bin/sh", "-c", 'exec "$@" 2>/dev/null', "sh", *argv]  # argv stays arguments: no quoting
    try:
        proc = await open_process(wrapped, _policy(repo), cwd=repo.work_tree, env=env, support=support)
    except OSError as exc:  # harness.sandbox.SandboxUnavailable among them
        return Completed(None, error=f"cannot start git sandboxed: {exc}")
    data = bytearray()
    code: int | None = None
    cut = False
    try:
        with anyio.move_on_after(timeout_s) as scope:
            async for chunk in proc.stdout:
                room = limit - len(data)
                data += chunk[: max(room, 0)]
                if len(chunk) > room:
                    cut = True
                    break
            if not cut:
                code = await proc.wait()
    finally:
        with anyio.CancelScope(shield=True):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.aclose()
    return Completed(code, data.decode("utf-8", "replace"), timed_out=scope.cancelled_caught, cut=cut)


async def run_git(
    repo: Repository,
    args: Sequence[str],
    environ: Mapping[str, str],
    *,
    secrets: Secrets | None = None,
    support: Support | None = None,
    timeout_s: float,
    limit: int = 16 * 1024,
    fenced: Sequence[Path] = (),
) -> Completed:
    """``git <args>`` in ``repo`` as described in the module docstring; two processes (the listing of the
    configuration's driver names, then the command), both within ``timeout_s``. Only the command is
    sandboxed: listing the configuration runs nothing. ``fenced``: folders besides the repository's where
    no ``git`` is taken from (the session's)."""
    found = support or await anyio.to_thread.run_sync(probe)
    outside = tuple(str(folder) for folder in (repo.work_tree, repo.git_dir, *fenced))
    try:
        git = await anyio.to_thread.run_sync(require_program, "git", environ.get("PATH"), outside)
    except FileNotFoundError as exc:
        return Completed(None, error=str(exc.strerror))
    with anyio.move_on_after(timeout_s) as scope:
        listing = _pinned(git, repo, ["config", "-z", "--list", "--includes"])
        env = _env(environ, secrets, list(_FIXED))
        listed = await run_bounded(
            listing, cwd=repo.work_tree, env=env, timeout_s=timeout_s, limit=256 * 1024
        )
        if listed.code != 0 or listed.cut:  # a configuration git cannot read, or too big to list whole
            return Completed(listed.code, stderr=listed.stderr, error="git config cannot be listed")
        env = _env(environ, secrets, git_overrides(listed.stdout))
        command = _pinned(git, repo, args)
        if found.available:
            # The launcher's namespaces map the user's own uid (files keep their owner, so git does not
            # re-hash the tree) and give git no network at all, UDP included.
            return await _run_sandboxed(command, repo, env, found, timeout_s, limit)
        return await run_bounded(
            command, cwd=repo.work_tree, env=env, timeout_s=timeout_s, limit=limit, stop_at_limit=True
        )
    assert scope.cancelled_caught
    return Completed(None, timed_out=True)
