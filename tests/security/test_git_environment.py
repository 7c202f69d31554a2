"""The agent's own ``git status`` (the environment block, every turn, every mode) never runs code a
repository configures: each hostile repository is first shown to fire its payload under a plain ``git
status`` (the attack is real), then the agent's git runs in it and the payload's marker must stay absent
while the environment block still says something sensible. Then through the real process, read-only mode
included."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from acp_agent.coding.context import _git
from acp_agent.coding.context._environment import GitState, find_repository, git_state
from harness.sandbox import Support, probe, unavailable
from tests.acp.instructions._support import project_agent, text

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]

NO_SANDBOX = unavailable("the test looks at git's own hardening")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
    )


def plain_git_status(cwd: Path, env: dict[str, str] | None = None) -> None:
    """What a user's ``git status`` does there (the control: it fires the payload)."""
    subprocess.run(
        ["git", "status"], cwd=cwd, capture_output=True, check=False, env=env or dict(os.environ), timeout=30
    )


def payload(marker: Path) -> str:
    return f"touch {marker}; cat"


def committed_repo(path: Path) -> Path:
    """A repository with one committed file whose stat no longer matches the index (same size, new
    mtime), so that ``git status`` must read it again, through any filter."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("one\n")
    (path / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    git(path, "add", "a.txt", ".gitattributes")
    git(path, "commit", "-q", "-m", "first")
    os.utime(path / "a.txt", (1_000_000_000, 1_000_000_000))
    return path


def set_config(repo: Path, *pairs: tuple[str, str]) -> None:
    for key, value in pairs:
        git(repo, "config", key, value)


@dataclass(frozen=True)
class Hostile:
    """A hostile set-up: ``make(tmp, marker)`` returns the folder the session opens."""

    make: Callable[[Path, Path], Path]
    control: bool = True
    """Whether a plain ``git status`` in that folder fires the payload (some need another git command)."""


def _clean_filter(tmp: Path, marker: Path) -> Path:
    repo = committed_repo(tmp / "repo")
    set_config(repo, ("filter.evil.clean", payload(marker)))
    return repo


def _process_filter(tmp: Path, marker: Path) -> Path:
    repo = committed_repo(tmp / "repo")
    set_config(repo, ("filter.evil.process", payload(marker)), ("filter.evil.required", "true"))
    return repo


def _odd_filter_name(tmp: Path, marker: Path) -> Path:
    """A driver name holding a dot and ``=`` (``-c`` could not override it)."""
    repo = committed_repo(tmp / "repo")
    (repo / ".gitattributes").write_text("* filter=a.b=c\n")
    set_config(repo, ("filter.a.b=c.clean", payload(marker)))
    return repo


def _included_filter(tmp: Path, marker: Path) -> Path:
    repo = committed_repo(tmp / "repo")
    (repo / "tools.inc").write_text(f'[filter "evil"]\n\tclean = {payload(marker)}\n')
    set_config(repo, ("include.path", "../tools.inc"))
    return repo


def _conditional_include(tmp: Path, marker: Path) -> Path:
    repo = committed_repo(tmp / "repo")
    (repo / "cond.inc").write_text(f"[core]\n\tfsmonitor = {payload(marker)}\n")
    set_config(repo, (f"includeIf.gitdir:{repo}/.git.path", "../cond.inc"))
    return repo


def _fsmonitor(tmp: Path, marker: Path) -> Path:
    repo = committed_repo(tmp / "repo")
    set_config(repo, ("core.fsmonitor", payload(marker)))
    return repo


def _hooks(tmp: Path, marker: Path) -> Path:
    repo = committed_repo(tmp / "repo")
    hooks = repo / "hooks"
    hooks.mkdir()
    for name in (
        "post-index-change",
        "pre-commit",
        "post-checkout",
        "fsmonitor-watchman",
        "reference-transaction",
    ):
        for where in (hooks, repo / ".git" / "hooks"):
            script = where / name
            script.write_text(f"#!/bin/sh\ntouch {marker}\n")
            script.chmod(0o755)
    set_config(repo, ("core.hooksPath", str(hooks)), ("core.fsmonitor", str(hooks / "fsmonitor-watchman")))
    return repo


def _external_diff(tmp: Path, marker: Path) -> Path:
    repo = committed_repo(tmp / "repo")
    set_config(
        repo,
        ("diff.external", payload(marker)),
        ("diff.evil.textconv", payload(marker)),
        ("status.submoduleSummary", "true"),
        ("core.pager", payload(marker)),
    )
    return repo


def _embedded_bare(tmp: Path, marker: Path) -> Path:
    """A fresh clone's subfolder that is a bare repository configured to take the folder as its work tree."""
    bare = tmp / "clone" / "vendor" / "evil.git"
    bare.mkdir(parents=True)
    git(bare, "init", "-q", "--bare")
    set_config(
        bare,
        ("core.bare", "false"),
        ("core.worktree", str(bare)),
        ("core.fsmonitor", payload(marker)),
        ("filter.evil.clean", payload(marker)),
    )
    (bare / "x.txt").write_text("x\n")
    return bare


def _embedded_bare_in_a_repo(tmp: Path, marker: Path) -> Path:
    outer = committed_repo(tmp / "outer")
    bare = outer / "vendor" / "evil.git"
    bare.mkdir(parents=True)
    git(bare, "init", "-q", "--bare")
    set_config(
        bare, ("core.bare", "false"), ("core.worktree", str(bare)), ("core.fsmonitor", payload(marker))
    )
    return bare


def _gitdir_elsewhere(tmp: Path, marker: Path) -> Path:
    """A ``.git`` file pointing at a git folder outside the project, with a hostile configuration."""
    source = committed_repo(tmp / "source")
    project = tmp / "project"
    shutil.copytree(source, project, ignore=shutil.ignore_patterns(".git"))
    shutil.move(source / ".git", tmp / "elsewhere.git")
    (project / ".git").write_text(f"gitdir: {tmp / 'elsewhere.git'}\n")
    set_config(project, ("core.fsmonitor", payload(marker)), ("filter.evil.clean", payload(marker)))
    os.utime(project / "a.txt", (1_000_000_000, 1_000_000_000))
    return project


def _hostile_submodule(tmp: Path, marker: Path) -> Path:
    sub_source = committed_repo(tmp / "sub-source")
    repo = committed_repo(tmp / "repo")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub_source), "sub")
    git(repo, "commit", "-q", "-m", "sub")
    sub_git = repo / ".git" / "modules" / "sub"
    git(sub_git, "config", "core.fsmonitor", payload(marker))
    git(sub_git, "config", "filter.evil.clean", payload(marker))
    os.utime(repo / "sub" / "a.txt", (1_000_000_000, 1_000_000_000))
    return repo


def _global_config(tmp: Path, marker: Path) -> Path:
    """The user's own ``~/.gitconfig`` names a filter (git-lfs style): repository files still never go
    through it (the repository's ``.gitattributes`` chooses which files would)."""
    repo = committed_repo(tmp / "repo")
    (tmp / "home").mkdir()
    (tmp / "home" / ".gitconfig").write_text(f'[filter "evil"]\n\tclean = {payload(marker)}\n')
    return repo


def _git_symlink(tmp: Path, marker: Path) -> Path:
    """``.git`` is a symbolic link to a hostile git folder elsewhere."""
    elsewhere = committed_repo(tmp / "elsewhere")
    set_config(elsewhere, ("core.fsmonitor", payload(marker)), ("filter.evil.clean", payload(marker)))
    repo = tmp / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("one\n")
    (repo / ".gitattributes").write_text("* filter=evil diff=evil merge=evil\n")
    (repo / ".git").symlink_to(elsewhere / ".git")
    return repo


def _worktree_config(tmp: Path, marker: Path) -> Path:
    """``extensions.worktreeConfig``: the fsmonitor sits in ``config.worktree``."""
    repo = committed_repo(tmp / "repo")
    set_config(repo, ("extensions.worktreeConfig", "true"))
    git(repo, "config", "--worktree", "core.fsmonitor", payload(marker))
    return repo


def _onbranch_include(tmp: Path, marker: Path) -> Path:
    """``includeIf "onbranch:main"`` brings a filter in."""
    repo = committed_repo(tmp / "repo")
    (repo / "branch.inc").write_text(f'[filter "evil"]\n\tclean = {payload(marker)}\n')
    set_config(repo, ("includeIf.onbranch:main.path", "../branch.inc"))
    return repo


HOSTILE = {
    "clean filter": Hostile(_clean_filter),
    "process filter": Hostile(_process_filter),
    "filter name with a dot and =": Hostile(_odd_filter_name),
    "filter from include.path": Hostile(_included_filter),
    "fsmonitor from includeIf": Hostile(_conditional_include),
    "core.fsmonitor": Hostile(_fsmonitor),
    "core.hooksPath and .git/hooks": Hostile(_hooks),
    "external diff, textconv, pager": Hostile(_external_diff, control=False),
    "embedded bare repository opened as cwd": Hostile(_embedded_bare),
    "embedded bare repository inside a repository": Hostile(_embedded_bare_in_a_repo),
    ".git file pointing elsewhere": Hostile(_gitdir_elsewhere),
    "submodule with hostile config": Hostile(_hostile_submodule),
    "user's global filter": Hostile(_global_config),
    ".git is a symbolic link elsewhere": Hostile(_git_symlink),
    "fsmonitor in config.worktree": Hostile(_worktree_config),
    "filter from includeIf onbranch": Hostile(_onbranch_include),
}


def _environ(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    if (tmp / "home").is_dir():
        env["HOME"] = str(tmp / "home")
    return env


async def _state(cwd: Path, env: dict[str, str], support: Support) -> GitState:
    repo = await anyio.to_thread.run_sync(find_repository, cwd)
    if repo is None:
        return GitState(None)
    with anyio.fail_after(30):
        return await git_state(repo, env, support=support)


def _supports() -> list[Support]:
    found = probe()
    return [NO_SANDBOX, found] if found.available else [NO_SANDBOX]


@pytest.mark.process
@pytest.mark.parametrize("support", _supports(), ids=lambda s: s.mechanism)
@pytest.mark.parametrize("name", list(HOSTILE))
async def test_the_agents_git_status_runs_nothing_a_hostile_repository_configures(
    tmp_path: Path, name: str, support: Support
) -> None:
    hostile = HOSTILE[name]
    marker = tmp_path / "marker"
    cwd = hostile.make(tmp_path, marker)
    env = _environ(tmp_path)
    if hostile.control:  # the attack is real: the user's own git fires it
        plain_git_status(cwd, env)
        assert marker.exists(), f"the control did not fire: {name}"
        marker.unlink()
        if name in (
            "clean filter",
            "filter from include.path",
            "filter name with a dot and =",
            "user's global filter",
            ".git is a symbolic link elsewhere",
            "filter from includeIf onbranch",
        ):
            os.utime(cwd / "a.txt", (1_000_000_000, 1_000_000_000))  # git refreshed nothing: stat again
    state = await _state(cwd, env, support)
    assert not marker.exists()
    described = state.describe()
    if name == "embedded bare repository opened as cwd":
        assert described == "not a git repository"
    elif name == "embedded bare repository inside a repository":
        assert state.repo == tmp_path / "outer"
        assert described.startswith(f"a git repository (root {tmp_path / 'outer'}), branch main")
    else:
        assert described.startswith(f"a git repository (root {cwd}), branch main"), described


def test_the_overrides_empty_every_driver_the_configuration_names() -> None:
    listing = (
        "filter.lfs.clean\ngit-lfs clean\0filter.a.b=c.process\nx\0diff.Tool.textconv\ny\0core.bare\nfalse\0"
    )
    overrides = dict(_git.git_overrides(listing))
    assert overrides["filter.lfs.clean"] == "" and overrides["filter.lfs.process"] == ""
    assert overrides["filter.lfs.required"] == "false"
    assert overrides["filter.a.b=c.smudge"] == ""
    assert overrides["diff.Tool.textconv"] == "" and overrides["diff.Tool.command"] == ""
    assert overrides["core.fsmonitor"] == "false" and overrides["safe.bareRepository"] == "explicit"


@pytest.mark.process
async def test_the_users_git_variables_do_not_redirect_the_agents_git(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    repo = committed_repo(tmp_path / "repo")
    evil = committed_repo(tmp_path / "evil")
    set_config(evil, ("core.fsmonitor", payload(marker)))
    env = {
        **_environ(tmp_path),
        "GIT_DIR": str(evil / ".git"),
        "GIT_WORK_TREE": str(evil),
        "GIT_CONFIG_PARAMETERS": f"'core.fsmonitor'='{payload(marker)}'",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.fsmonitor",
        "GIT_CONFIG_VALUE_0": payload(marker),
        "GIT_EXTERNAL_DIFF": payload(marker),
    }
    state = await _state(repo, env, NO_SANDBOX)
    assert not marker.exists()
    assert state.repo == repo and state.dirty is False


@pytest.mark.process
@pytest.mark.skipif(not probe().available, reason="no sandbox on this machine")
async def test_a_setting_the_overrides_missed_still_cannot_write_in_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Belt and braces: were ``core.fsmonitor`` not overridden, the sandboxed git still writes nothing."""
    monkeypatch.setattr(_git, "_FIXED", tuple(kv for kv in _git._FIXED if kv[0] != "core.fsmonitor"))  # pyright: ignore[reportPrivateUsage]
    marker = tmp_path / "marker"
    repo = _fsmonitor(tmp_path, marker)
    await _state(repo, _environ(tmp_path), NO_SANDBOX)
    assert marker.exists()  # the weakened hardening alone lets it run: the test can fail
    marker.unlink()
    state = await _state(repo, _environ(tmp_path), probe())
    assert not marker.exists()
    assert state.describe().startswith(f"a git repository (root {repo}), branch main")


def _planted(folder: Path, name: str, marker: Path) -> None:
    """A program named ``name`` in ``folder`` that leaves ``marker`` and then acts as the real one."""
    folder.mkdir(parents=True, exist_ok=True)
    real = shutil.which(name)
    path = folder / name
    path.write_text(f'#!/bin/sh\ntouch {marker}\nexec {real} "$@"\n')
    path.chmod(0o755)


_SYSTEM_PATH = os.pathsep.join(
    dict.fromkeys([str(Path(shutil.which("git") or "/usr/bin/git").parent), "/usr/bin", "/bin"])
)
_PLANTED_PATHS = {  # how the user's PATH reaches the repository's ``git`` (cwd: the repository's root)
    "an empty entry first": f"{os.pathsep}{_SYSTEM_PATH}",
    "a dot": f".{os.pathsep}{_SYSTEM_PATH}",
    "a relative folder": f"bin{os.pathsep}{_SYSTEM_PATH}",
    "the repository's own folder by its absolute path (direnv's PATH_add)": f"{{repo}}/bin{os.pathsep}{_SYSTEM_PATH}",
}


@pytest.mark.process
@pytest.mark.parametrize("support", _supports(), ids=lambda s: s.mechanism)
@pytest.mark.parametrize("how", list(_PLANTED_PATHS))
async def test_a_git_program_inside_the_repository_never_runs_whatever_the_path_says(
    tmp_path: Path, how: str, support: Support
) -> None:
    """A clone may ship a ``git`` file (and a sandboxed command may write one in the project): the agent's
    own git, which runs its configuration listing outside the sandbox, must never be that file."""
    marker = tmp_path / "marker"
    repo = committed_repo(tmp_path / "repo")
    _planted(repo, "git", marker)
    _planted(repo / "bin", "git", marker)
    env = {**_environ(tmp_path), "PATH": _PLANTED_PATHS[how].format(repo=repo)}
    plain_git_status(repo, env)  # the control: a plain lookup with that PATH runs the planted git
    assert marker.exists(), f"the control did not fire: {how}"
    marker.unlink()
    state = await _state(repo, env, support)
    assert not marker.exists()
    assert state.describe().startswith(f"a git repository (root {repo}), branch main"), state.describe()


@pytest.mark.process
async def test_a_git_found_only_inside_the_session_folders_is_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    repo = committed_repo(tmp_path / "repo")
    tools = tmp_path / "session-folder" / "bin"
    _planted(tools, "git", marker)
    env = {**_environ(tmp_path), "PATH": f"{tools}{os.pathsep}/nowhere"}
    found = await anyio.to_thread.run_sync(find_repository, repo)
    assert found is not None
    with anyio.fail_after(30):
        state = await git_state(found, env, support=NO_SANDBOX, fenced=[tmp_path / "session-folder"])
    assert not marker.exists()
    assert state.dirty is None and state.describe().startswith(f"a git repository (root {repo}), branch main")


@pytest.mark.process
async def test_a_clean_repository_still_reads_clean_and_a_change_reads_dirty(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "feature")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "x")
    (repo / "sub").mkdir()
    for support in _supports():
        assert (await _state(repo / "sub", _environ(tmp_path), support)).describe() == (
            f"a git repository (root {repo}), branch feature, no uncommitted changes"
        )
    (repo / "a.txt").write_text("b\n")
    assert (await _state(repo, _environ(tmp_path), probe())).dirty is True


@pytest.mark.process
@pytest.mark.parametrize("mode", ["default", "read-only"])
async def test_through_the_real_process_a_hostile_repository_runs_nothing_at_any_turn(
    tmp_path: Path, mode: str
) -> None:
    marker = tmp_path / "marker"
    repo = _clean_filter(tmp_path, marker)
    set_config(repo, ("core.fsmonitor", payload(marker)), ("diff.external", payload(marker)))
    async with project_agent(tmp_path, [text("one"), text("two")], cwd=repo, mode=mode) as p:
        await p.prompt("first")
        os.utime(repo / "a.txt", (1_100_000_000, 1_100_000_000))
        await p.prompt("second")
        bodies = [json.dumps(b) for b in p.bodies()]
    assert not marker.exists()
    assert len(bodies) == 2
    for body in bodies:  # the environment block travels in front of the first prompt (kept in the history)
        assert f"- {repo}: a git repository (root {repo}), branch main" in body
