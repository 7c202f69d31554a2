"""Project context: what reading the project costs a turn, as a user meets it.

The same agent (scripted model) answers prompts in two folders, alternately, in one run: a git repository set
up the way real ones are (a root and a nested ``AGENTS.md``, a ``CLAUDE.md`` importing a file, 20 custom
commands, 10 skills, a few hundred tracked files with one uncommitted change), and an empty folder that is no
repository (the baseline). Each turn re-checks the instruction files, commands and skills, runs
``git status`` and builds the system prompt. Figure: the median prompt-to-answer time in the repository, the
baseline's beside it, and the difference. On a loaded machine the turn's own cost (an fsync per step) varies
more than the difference, so the refresh is also timed alone, in the process, against a bare ``git status``
run in the same repository in the same run (its unavoidable part); target: a refresh within 25 ms.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._rpc import INIT, Agent, figure, git, median, our_agent

BENCH = "context"


def _project(root: Path) -> Path:
    repo = root / "repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    for i in range(300):
        (repo / "src" / "pkg" / f"m{i}.py").write_text(f"VALUE_{i} = {i}\n")
    (repo / "AGENTS.md").write_text("# Rules\n" + "Run make check before you finish.\n" * 100)
    (repo / "src" / "AGENTS.md").write_text("Source rules.\n" * 50)
    (repo / "src" / "pkg" / "CLAUDE.md").write_text("See @style.md\n")
    (repo / "src" / "pkg" / "style.md").write_text("Short functions.\n" * 20)
    commands = repo / ".claude" / "commands"
    commands.mkdir(parents=True)
    for i in range(20):
        (commands / f"c{i}.md").write_text(
            f"---\ndescription: command {i}\n---\nDo task {i} with $ARGUMENTS\n"
        )
    for i in range(10):
        skill = repo / ".agents" / "skills" / f"skill-{i}"
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(
            f"---\nname: skill-{i}\ndescription: Skill number {i}.\n---\nBody {i}\n"
        )
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    (repo / "src" / "pkg" / "m0.py").write_text("changed\n")
    return repo / "src" / "pkg"


async def _turns(agent: Agent, session: str, n: int) -> list[float]:
    times: list[float] = []
    for i in range(n):
        t = time.perf_counter()
        await agent.call(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": f"p{i}"}]}
        )
        times.append((time.perf_counter() - t) * 1000)
    return times


async def _refresh_alone(cwd: Path, user: Path, n: int) -> tuple[list[float], list[float]]:
    """Median-ready samples: ``ProjectContext.refresh`` in ``cwd``, and a bare ``git status`` there."""
    import os

    import anyio

    from acp_agent.coding.context._context import ProjectContext
    from acp_agent.coding.permissions._gate import SessionLink
    from acp_agent.config import Config
    from harness.secrets import Secrets

    class _Env:
        session_id = "bench-context"
        system_prompt = None  # no client-provided system prompt (ACP's unstable ``systemPrompt``)

        def __init__(self) -> None:
            self.cwd = cwd
            self.roots = (cwd,)

    environ = {**os.environ, "HOME": str(user)}
    session: Any = _Env()  # what ProjectContext reads of a SessionEnvironment
    context = ProjectContext(
        session, Config(), environ, SessionLink(), user_dir=user / ".config" / "acp-agent", secrets=Secrets()
    )
    await context.load()
    refresh: list[float] = []
    git: list[float] = []
    for _ in range(n):
        t = time.perf_counter()
        await context.refresh()
        refresh.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        await anyio.run_process(["git", "status", "--porcelain"], cwd=cwd)
        git.append((time.perf_counter() - t) * 1000)
    return refresh, git


async def run(quick: bool) -> list[dict[str, Any]]:
    n = 15 if quick else 60
    rounds = 4
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cwd = _project(root)
        empty = root / "empty"
        empty.mkdir()
        script = root / "script.json"
        script.write_text(json.dumps([{"text": "ok"}] * (2 * (n + 1) * rounds)))
        user = root / "user"
        cmd, env = our_agent(root / "home", script)
        env |= {"HOME": str(user), "XDG_CONFIG_HOME": str(user / ".config")}
        agent = await Agent.spawn(cmd, env)
        try:
            await agent.call("initialize", INIT)
            in_repo = (await agent.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["sessionId"]
            bare = (await agent.call("session/new", {"cwd": str(empty), "mcpServers": []}))["sessionId"]
            await _turns(agent, in_repo, 1)  # the first turn pays for imports
            await _turns(agent, bare, 1)
            repo_ms: list[float] = []
            bare_ms: list[float] = []
            for _ in range(rounds):  # alternate, so both see the same machine load
                repo_ms += await _turns(agent, in_repo, n)
                bare_ms += await _turns(agent, bare, n)
        finally:
            await agent.close()
        refresh, git = await _refresh_alone(cwd, user, 4 * n)
    ours, base = median(repo_ms), median(bare_ms)
    return [
        figure(
            BENCH, "refresh_median_ms", median(refresh), 25, baseline=median(git), baseline_is="git status"
        ),
        figure(BENCH, "turn_in_repo_median_ms", ours, baseline=base, samples=len(repo_ms)),
        figure(BENCH, "turn_overhead_ms", ours - base, note="repository turn minus empty-folder turn; noisy"),
    ]
