"""Prompt caching through the real process: every request of a session extends the one before it (before
and after an edit that dirties the git tree, and after ``session/load``), and a server with Anthropic's or
OpenAI's cache semantics (``bench/_cache_sim``) serves the history from its cache."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from bench._cache_sim import CacheServer, Step, strip_cache_control
from tests.reliability._reliability_support import AgentProcess, agent_env, agent_process, initialized

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]

LIMIT_S = 60
KEY = "sk-test-cache-0123456789"


def _repo(tmp: Path) -> Path:
    repo = tmp / "project"
    repo.mkdir()
    (repo / "a.txt").write_text("alpha\n" * 50)
    for args in (("init", "-q", "-b", "main"), ("add", "a.txt"), ("commit", "-q", "-m", "first")):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=repo,
            check=True,
            capture_output=True,
        )
    return repo


async def _prompt(agent: AgentProcess, session: str, text: str) -> dict[str, Any]:
    answer = await agent.response(
        await agent.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
        )
    )
    assert "result" in answer, answer
    return answer["result"]


def _history(body: dict[str, Any]) -> list[Any]:
    """The conversation a request sends, cache markers left out (OpenAI's: without the system message)."""
    return [m for m in strip_cache_control(body["messages"]) if m["role"] != "system"]


def _head(body: dict[str, Any]) -> str:
    """What must never change in a session: the tools and the system prompt."""
    system = body.get("system") or [m for m in body["messages"] if m["role"] == "system"]
    return json.dumps(strip_cache_control([body.get("tools"), system]), sort_keys=True)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
async def test_every_request_extends_the_one_before_across_a_dirtied_tree_and_a_load(
    tmp_path: Path, provider: str
) -> None:
    repo = _repo(tmp_path)
    script = [
        Step(calls=(("read_file", {"path": "a.txt"}),)),
        Step(text="It holds alpha."),
        Step(text="Noted."),
        Step(text="Still here."),
    ]
    home = tmp_path / "home"
    base = "" if provider == "anthropic" else "/v1"
    with CacheServer(script) as server:
        env = agent_env(
            home,
            ACP_AGENT_PROVIDER=provider,
            ACP_AGENT_BASE_URL=server.url + base,
            ACP_AGENT_MODEL="claude-sonnet-4-5" if provider == "anthropic" else "gpt-5",
            ACP_AGENT_API_KEY=KEY,
        )
        async with agent_process(home, env) as agent:
            with anyio.fail_after(LIMIT_S):
                await initialized(agent)
                session = (await agent.call("session/new", {"cwd": str(repo), "mcpServers": []}))["sessionId"]
                await _prompt(agent, session, "What is in a.txt?")
                (repo / "a.txt").write_text("changed\n")  # the tree is dirty now
                await _prompt(agent, session, "I changed it.")
        async with agent_process(home, env) as agent:
            with anyio.fail_after(LIMIT_S):
                await initialized(agent)
                await agent.call("session/load", {"sessionId": session, "cwd": str(repo), "mcpServers": []})
                await _prompt(agent, session, "And now?")
        bodies, billed = server.bodies, server.billed
    assert len(bodies) == 4
    assert len({_head(b) for b in bodies}) == 1, "tools and system identical in every request"
    for before, after in itertools.pairwise(bodies):
        old, new = _history(before), _history(after)
        assert new[: len(old)] == old, "a request only appends to the one before it"
    dirty = json.dumps(bodies[2]["messages"][-1])
    assert "uncommitted changes" in dirty and "no uncommitted changes" not in dirty, "told as a new message"
    if provider == "anthropic":
        marks = [json.dumps(b).count('"cache_control"') for b in bodies]
        assert all(1 < n <= 4 for n in marks), marks
    # From the second request on, everything up to the new turn's messages is served from the cache.
    for b in billed[1:]:
        assert b.cache_read > 0.8 * (b.prompt - 400), billed
