"""In memory: an Ollama model that nothing says the window of runs at Ollama's default, assumed; the
assumed window reaches the prompt (so ``Compact`` compacts near it) and ``usage_update``, unless the
agent's own request leaves no room in it (then the user is told, once). The real process against the
fake Ollama server: ``test_model_windows``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from acp_agent.coding.models._model_facts import OLLAMA_DEFAULT_WINDOW, ModelFacts, resolve_facts
from acp_agent.coding.models._model_notes import ModelNotes
from harness import Message, Prompt, Role, Text
from harness.model import Delta, TextChunk, UsageChunk
from harness.model_info import ModelInfo

pytestmark = pytest.mark.anyio

SERVED = ModelInfo(
    "qwen3-coder:30b", None, source="", server="ollama", trained_window=262144, default_window=True
)
CONFIG = Path("/home/u/.config/acp-agent/config.toml")


def test_an_ollama_model_without_num_ctx_or_ps_runs_at_the_assumed_default() -> None:
    facts = resolve_facts("qwen3-coder:30b", None, SERVED)
    assert facts.context_window == OLLAMA_DEFAULT_WINDOW == 4096
    assert facts.default_window and facts.evicts_silently
    assert "assumed" in facts.sources["context_window"]


def test_a_window_the_server_reports_is_not_assumed() -> None:
    running = ModelInfo("qwen3-coder:30b", 32768, source="Ollama /api/ps context_length", server="ollama")
    facts = resolve_facts("qwen3-coder:30b", None, running)
    assert (facts.context_window, facts.default_window) == (32768, False)


async def _run(
    facts: ModelFacts, system: str, later: ModelFacts | None = None, *, fail: bool = False
) -> tuple[list[Prompt], list[tuple[str, str]], list[tuple[int, int]]]:
    """Two model calls through ``ModelNotes``; ``later``: the facts once the server was asked again
    (after the first reply: Ollama reports a model's window once a request loaded it)."""
    current = [facts]
    seen: list[Prompt] = []
    advice: list[tuple[str, str]] = []
    usage: list[tuple[int, int]] = []

    async def advise(title: str, text: str) -> None:
        advice.append((title, text))

    async def said(text: str) -> None:
        raise AssertionError(f"no agent message expected: {text}")

    async def used(n: int, size: int) -> None:
        usage.append((n, size))

    async def model(prompt: Prompt) -> AsyncIterator[Delta]:
        seen.append(prompt)
        yield TextChunk("ok")
        yield UsageChunk(input=1000, output=5)

    async def recheck() -> None:
        if fail:
            raise OSError("the server went away")
        if later is not None:
            current[0] = later

    notes = ModelNotes(lambda: current[0], said, advise, used, CONFIG, recheck=recheck)
    prompt = Prompt(system, [Message(Role.USER, (Text("hi"),))], [])
    with anyio.fail_after(5):
        for _ in range(2):
            async for _delta in notes.stream(prompt, model):
                pass
    return seen, advice, usage


async def test_the_assumed_window_reaches_the_prompt_and_usage_and_the_user_is_told_once() -> None:
    facts = resolve_facts("qwen3-coder:30b", None, SERVED)
    seen, advice, usage = await _run(facts, "Short instructions.")
    assert [p.options.context_window for p in seen] == [4096, 4096]  # Compact compacts near it
    assert usage == [(1005, 4096), (1005, 4096)]
    assert [title for title, _ in advice] == ["Small context window"]
    text = advice[0][1]
    assert "at Ollama's default context window, assumed to be 4,096 tokens" in text
    assert "OLLAMA_CONTEXT_LENGTH=65536 ollama serve" in text
    assert f'{CONFIG}:\n\n[models."qwen3-coder:30b"]\ncontext_window = 65536' in text


async def test_an_assumed_window_the_agents_request_does_not_fit_is_said_and_not_compacted_every_step() -> (
    None
):
    facts = resolve_facts("qwen3-coder:30b", None, SERVED)
    seen, advice, usage = await _run(facts, "x" * 14000)  # about 3,500 tokens: more than 4,096 less a reply
    assert [p.options.context_window for p in seen] == [None, None]  # no compaction on every step
    assert usage == [(1005, 4096), (1005, 4096)]  # the meter still shows the window
    assert [title for title, _ in advice] == ["Context window too small"]
    assert "about 3,500 tokens: they do not fit" in advice[0][1]
    assert "OLLAMA_CONTEXT_LENGTH=65536 ollama serve" in advice[0][1]


async def test_a_declared_window_is_never_second_guessed() -> None:
    declared = ModelFacts(
        "m", 4096, sources={"context_window": "configuration (config.toml)"}, server="ollama"
    )
    seen, advice, _ = await _run(declared, "x" * 14000)
    assert [p.options.context_window for p in seen] == [4096, 4096]
    assert advice == []


async def test_the_window_the_server_reports_once_the_model_is_loaded_replaces_the_assumed_one() -> None:
    facts = resolve_facts("qwen3-coder:30b", None, SERVED)
    loaded = ModelInfo("qwen3-coder:30b", 32768, source="Ollama /api/ps context_length", server="ollama")
    seen, advice, usage = await _run(facts, "x" * 14000, later=resolve_facts("qwen3-coder:30b", None, loaded))
    assert [p.options.context_window for p in seen] == [None, 32768]
    assert usage == [(1005, 4096), (1005, 32768)]
    assert advice == [], "no notice: the assumption is not told before the server could say better"


async def test_a_failed_second_look_at_the_server_keeps_the_assumption_and_tells_it() -> None:
    facts = resolve_facts("qwen3-coder:30b", None, SERVED)
    seen, advice, usage = await _run(facts, "Short instructions.", fail=True)
    assert [p.options.context_window for p in seen] == [4096, 4096]
    assert [title for title, _ in advice] == ["Small context window"]
    assert usage == [(1005, 4096), (1005, 4096)]
