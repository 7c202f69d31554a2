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
from bench.cost import BASE_CEILING, base_tokens
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


@pytest.mark.process
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
    assert base_tokens(bodies[0]) <= BASE_CEILING, "the base request (tools + system) grew past its budget"
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


SONNET = (3.0, 15.0, 0.30, 3.75)  # the built-in table's price of claude-sonnet-4*, USD per Mtok


def _cost(billed: list[Any], price: tuple[float, float, float, float]) -> float:
    return sum(
        (b.input * price[0] + b.output * price[1] + b.cache_read * price[2] + b.cache_write * price[3]) / 1e6
        for b in billed
    )


def _updates(agent: AgentProcess, kind: str) -> list[dict[str, Any]]:
    return [
        n["params"]["update"]
        for n in agent.notifications
        if n.get("method") == "session/update" and n["params"]["update"]["sessionUpdate"] == kind
    ]


@pytest.mark.process
async def test_each_turn_answers_its_usage_and_usage_update_carries_the_sessions_cost_across_a_load(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    script = [Step(calls=(("read_file", {"path": "a.txt"}),)), Step(text="Alpha."), Step(text="Again.")]
    home = tmp_path / "home"
    with CacheServer(script) as server:
        env = agent_env(
            home,
            ACP_AGENT_PROVIDER="anthropic",
            ACP_AGENT_BASE_URL=server.url,
            ACP_AGENT_MODEL="claude-sonnet-4-5",
            ACP_AGENT_API_KEY=KEY,
        )
        async with agent_process(home, env) as agent:
            with anyio.fail_after(LIMIT_S):
                await initialized(agent)
                session = (await agent.call("session/new", {"cwd": str(repo), "mcpServers": []}))["sessionId"]
                first = await _prompt(agent, session, "What is in a.txt?")
            costs = [u.get("cost") for u in _updates(agent, "usage_update")]
        turn1 = list(server.billed)
        usage = first["usage"]
        assert usage["inputTokens"] == sum(b.prompt for b in turn1), "both requests of the turn, summed"
        assert usage["outputTokens"] == sum(b.output for b in turn1)
        assert usage["cachedReadTokens"] == sum(b.cache_read for b in turn1) > 0
        assert usage["cachedWriteTokens"] == sum(b.cache_write for b in turn1) > 0
        assert usage["totalTokens"] == usage["inputTokens"] + usage["outputTokens"]
        assert costs[-1] is not None and costs[-1]["currency"] == "USD"
        assert abs(costs[-1]["amount"] - _cost(turn1, SONNET)) <= 0.01 * _cost(turn1, SONNET)
        kept = json.loads((home / "sessions" / session / "usage.json").read_text())
        assert kept["requests"] == 2 and kept["usage"]["cacheRead"] == usage["cachedReadTokens"]
        async with agent_process(home, env) as agent:
            with anyio.fail_after(LIMIT_S):
                await initialized(agent)
                await agent.call("session/load", {"sessionId": session, "cwd": str(repo), "mcpServers": []})
                second = await _prompt(agent, session, "Again?")
            cost = _updates(agent, "usage_update")[-1]["cost"]
        assert second["usage"]["inputTokens"] == server.billed[-1].prompt, "this turn's request only"
        whole = _cost(server.billed, SONNET)
        assert abs(cost["amount"] - whole) <= 0.01 * whole, "the loaded session goes on from its total"


@pytest.mark.process
async def test_a_model_with_no_known_price_gets_usage_but_no_cost(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    home = tmp_path / "home"
    config = tmp_path / "xdg" / "acp-agent"
    config.mkdir(parents=True)
    (config / "config.toml").write_text('[models."local-coder"]\ncontext_window = 32768\n')
    with CacheServer([Step(text="Hi.")]) as server:
        env = agent_env(
            home,
            ACP_AGENT_PROVIDER="openai",
            ACP_AGENT_BASE_URL=server.url + "/v1",
            ACP_AGENT_MODEL="local-coder",
            XDG_CONFIG_HOME=str(tmp_path / "xdg"),
        )
        async with agent_process(home, env) as agent:
            with anyio.fail_after(LIMIT_S):
                await initialized(agent)
                session = (await agent.call("session/new", {"cwd": str(repo), "mcpServers": []}))["sessionId"]
                answer = await _prompt(agent, session, "Hello")
            updates = _updates(agent, "usage_update")
    assert answer["usage"]["inputTokens"] == server.billed[0].prompt
    assert updates and all(u.get("cost") is None for u in updates), "no guess, no zero"
    assert json.loads((home / "sessions" / session / "usage.json").read_text())["costUsd"] is None


@pytest.mark.process
async def test_a_declared_price_prices_the_session(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    home = tmp_path / "home"
    config = tmp_path / "xdg" / "acp-agent"
    config.mkdir(parents=True)
    (config / "config.toml").write_text(
        '[models."local-coder"]\ncontext_window = 32768\ninput_price = 1.0\noutput_price = 2.0\n'
        "cache_read_price = 0.1\n"
    )
    with CacheServer([Step(text="Hi.")]) as server:
        env = agent_env(
            home,
            ACP_AGENT_PROVIDER="openai",
            ACP_AGENT_BASE_URL=server.url + "/v1",
            ACP_AGENT_MODEL="local-coder",
            XDG_CONFIG_HOME=str(tmp_path / "xdg"),
        )
        async with agent_process(home, env) as agent:
            with anyio.fail_after(LIMIT_S):
                await initialized(agent)
                session = (await agent.call("session/new", {"cwd": str(repo), "mcpServers": []}))["sessionId"]
                await _prompt(agent, session, "Hello")
            cost = _updates(agent, "usage_update")[-1]["cost"]
    expected = _cost(server.billed, (1.0, 2.0, 0.1, 1.0))
    assert abs(cost["amount"] - expected) <= 0.01 * expected


HAIKU = (1.0, 5.0, 0.10, 1.25)


@pytest.mark.process
async def test_side_work_runs_on_the_small_model_and_is_counted_at_its_price(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    script = [
        Step(text="One."),
        Step(text="Two."),
        Step(text="SUMMARY of one and two"),  # /compact, on the small model
        Step(calls=(("explore", {"prompt": "Find where alpha is used."}),)),
        Step(text="alpha is in a.txt"),  # the explore sub-agent, on the small model by choice
        Step(text="Found it."),
    ]
    home = tmp_path / "home"
    with CacheServer(script) as server:
        env = agent_env(
            home,
            ACP_AGENT_PROVIDER="anthropic",
            ACP_AGENT_BASE_URL=server.url,
            ACP_AGENT_MODEL="claude-sonnet-4-5",
            ACP_AGENT_SMALL_MODEL="claude-haiku-4-5",
            ACP_AGENT_EXPLORE_MODEL="small",
            ACP_AGENT_API_KEY=KEY,
        )
        async with agent_process(home, env) as agent:
            with anyio.fail_after(LIMIT_S):
                await initialized(agent)
                session = (await agent.call("session/new", {"cwd": str(repo), "mcpServers": []}))["sessionId"]
                await _prompt(agent, session, "one")
                await _prompt(agent, session, "two")
                compacted = await _prompt(agent, session, "/compact")
                await _prompt(agent, session, "Where is alpha used?")
            cost = _updates(agent, "usage_update")[-1]["cost"]
        models = [b["model"] for b in server.bodies]
        billed = server.billed
    assert models == [
        "claude-sonnet-4-5",
        "claude-sonnet-4-5",
        "claude-haiku-4-5",
        "claude-sonnet-4-5",
        "claude-haiku-4-5",
        "claude-sonnet-4-5",
    ]
    assert compacted["usage"]["inputTokens"] == billed[2].prompt, "the summary request is the turn's usage"
    on_small = {2, 4}
    expected = _cost([b for i, b in enumerate(billed) if i not in on_small], SONNET) + _cost(
        [billed[i] for i in sorted(on_small)], HAIKU
    )
    assert abs(cost["amount"] - expected) <= 0.01 * expected, "each request at its model's price"
