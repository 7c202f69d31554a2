"""What a session costs: prompt caching, billed cost and the base request's size.

One scripted multi-turn coding session (reads, a grep, a listing, edits that dirty the git tree, plain
answers: two model requests a turn with a tool, one without) through the real process, against the
loopback server of ``bench/_cache_sim`` that bills like each provider's cache:

- Anthropic Messages, caching on (``prompt_cache = "5m"``), then the same session with caching off
  (``prompt_cache = "off"``: no breakpoints) as the same-run baseline: the share of input tokens served
  from the cache, and the billed cost at Sonnet's prices ($3/Mtok input, $3.75 cache write, $0.30 cache
  read, $15 output), against the baseline's;
- OpenAI Chat Completions (automatic prefix caching, read in the order system, tools, history): the share
  served from the cache;
- ``usage_update.cost`` (from the built-in price of ``claude-sonnet-4-5``) against the cost computed from
  the usage the server reported: the difference in percent;
- the base request (tools + system prompt of the first request) in tokens, estimated at 4 characters a
  token (no tokenizer is installable offline here);
- the model-written title (on by default): one more billed request after the first exchange, on the
  session's model here (no ``small_model``): its cost and its share of the session's.

Targets: >= 90 % cached (Anthropic over 20 turns, OpenAI), billed <= 0.2x the uncached baseline, cost
within 1 %, base request <= ``BASE_CEILING`` tokens. ``--quick``: 6 turns.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from bench._cache_sim import Billed, CacheServer, Step, strip_cache_control, tokens
from bench._rpc import INIT, Agent, figure, git, our_agent, prompt_turn

BENCH = "cost"
BASE_CEILING = 4000
"""Tokens of tools + system the base request may not grow past (measured 3,037, 2026-12-04; the suite
fails past it: ``tests/acp/coding/test_prompt_cache_process.py``)."""
SONNET = (3.0, 15.0, 0.30, 3.75)


def _project(root: Path) -> Path:
    repo = root / "repo"
    (repo / "src").mkdir(parents=True)
    for i in range(8):
        body = "".join(f"def f{i}_{j}(x):\n    return x * {j}\n\n" for j in range(30))
        (repo / "src" / f"m{i}.py").write_text(body)
    (repo / "AGENTS.md").write_text("# Rules\n\nRun `make check` before you finish. Keep functions short.\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "init")
    return repo


def script(turns: int) -> tuple[list[str], list[Step]]:
    """The prompts and the model's replies, two steps a turn with a tool call, one without."""
    prompts: list[str] = []
    steps: list[Step] = []
    for i in range(turns):
        m = f"src/m{i % 8}.py"
        match i % 5:
            case 0:
                prompts.append(f"What does {m} define?")
                steps += [Step(calls=(("read_file", {"path": m}),)), Step(text=f"{m} defines 30 functions.")]
            case 1:
                prompts.append("Where is f1_3 used?")
                steps += [
                    Step(calls=(("grep", {"pattern": "f1_3"}),)),
                    Step(text="Only where it is defined."),
                ]
            case 2:
                prompts.append(f"Add a docstring to {m}.")
                edit = {"path": m, "content": f'"""Module {i}."""\n' + "x = 1\n" * 20}
                steps += [Step(calls=(("write_file", edit),)), Step(text="Done: the docstring is in.")]
            case 3:
                prompts.append("List the source folder.")
                steps += [Step(calls=(("list_dir", {"path": "src"}),)), Step(text="Eight modules.")]
            case _:
                prompts.append("Thanks. Anything else worth doing?")
                steps.append(Step(text="Run make check to be sure the changes hold."))
    return prompts, steps


async def _session(provider: str, cache: str, turns: int) -> tuple[list[Billed], list[dict[str, Any]], Any]:
    """Run the scripted session; the server's billing, its request bodies and the last ``usage_update``'s cost."""
    prompts, steps = script(turns)
    with (
        tempfile.TemporaryDirectory(prefix="bench-cost-") as tmp,
        CacheServer(steps, bill_titles=True) as server,
    ):
        root = Path(tmp)
        repo = _project(root)
        cmd, env = our_agent(root / "home")
        env.update(
            ACP_AGENT_PROVIDER=provider,
            ACP_AGENT_BASE_URL=server.url + ("" if provider == "anthropic" else "/v1"),
            ACP_AGENT_MODEL="claude-sonnet-4-5" if provider == "anthropic" else "gpt-5",
            ACP_AGENT_API_KEY="sk-bench-cost-0123456789",
            ACP_AGENT_PROMPT_CACHE=cache,
            ACP_AGENT_DEFAULT_MODE="accept-edits",
            XDG_CONFIG_HOME=str(root / "xdg"),
            HOME=str(root),
        )
        agent = await Agent.spawn(cmd, env)
        cost: Any = None
        try:
            await agent.call("initialize", INIT)
            sid = (await agent.call("session/new", {"cwd": str(repo), "mcpServers": []}))["sessionId"]
            costs: list[Any] = []

            def seen(update: dict[str, Any]) -> None:
                if update.get("sessionUpdate") == "usage_update":
                    costs.append(update.get("cost"))

            for text in prompts:
                await prompt_turn(agent, sid, text, seen)
            cost = costs[-1] if costs else None
        finally:
            await agent.close()
        return list(server.billed), list(server.bodies), cost


def _billed_cost(billed: list[Billed]) -> float:
    p = SONNET
    return sum(
        (b.input * p[0] + b.output * p[1] + b.cache_read * p[2] + b.cache_write * p[3]) / 1e6 for b in billed
    )


def _share(billed: list[Billed]) -> float:
    prompt = sum(b.prompt for b in billed)
    return sum(b.cache_read for b in billed) / prompt if prompt else 0.0


def base_tokens(body: dict[str, Any]) -> int:
    """Tools + system of a request, in estimated tokens."""
    system = body.get("system") or [m for m in body["messages"] if m["role"] == "system"]
    return tokens(json.dumps(strip_cache_control([body.get("tools"), system]), ensure_ascii=False))


async def run(quick: bool) -> list[dict[str, Any]]:
    turns = 6 if quick else 20
    cached, bodies, cost = await _session("anthropic", "5m", turns)
    uncached, _, _ = await _session("anthropic", "off", turns)
    openai, _, _ = await _session("openai", "5m", turns)
    billed, baseline = _billed_cost(cached), _billed_cost(uncached)
    error = abs(cost["amount"] - billed) / billed * 100 if cost else float("nan")
    extra: dict[str, Any] = {"turns": turns, "requests": len(cached)}
    titles = [b for b in cached if b.title]  # the model-written title: one request after the first exchange
    return [
        figure(BENCH, "anthropic_cached_share_pct", _share(cached) * 100, 90, lower_is_better=False, **extra),
        figure(BENCH, "anthropic_billed_usd", billed, round(baseline * 0.2, 4), baseline=baseline, **extra),
        figure(BENCH, "anthropic_billed_ratio", billed / baseline, 0.2, **extra),
        figure(BENCH, "openai_cached_share_pct", _share(openai) * 100, 90, lower_is_better=False, **extra),
        figure(BENCH, "usage_update_cost_error_pct", error, 1.0, **extra),
        figure(BENCH, "base_request_tokens", base_tokens(bodies[0]), BASE_CEILING, **extra),
        figure(BENCH, "title_requests", len(titles), 1, **extra),
        figure(BENCH, "title_tokens", sum(b.prompt + b.output for b in titles), None, **extra),
        figure(
            BENCH, "title_billed_microusd", _billed_cost(titles) * 1e6, None, baseline=billed * 1e6, **extra
        ),
        figure(BENCH, "title_share_of_billed_pct", _billed_cost(titles) / billed * 100, None, **extra),
        figure(
            BENCH,
            "input_tokens_session",
            sum(b.prompt for b in cached),
            None,
            baseline=sum(b.prompt for b in uncached),
            **extra,
        ),
    ]
