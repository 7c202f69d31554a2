"""``python -m bench`` prints one JSON object per figure, each with its baseline (null when none); the fake
provider streams are what the real providers parse. Behaviour only: no figure is judged here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from acp_conformance.fake_model import FakeServer, Reply
from bench._wire import API_PATHS, PROVIDERS, stream_for
from harness import Message
from harness.model import Prompt, TextChunk
from harness.providers import build_model

REPO = Path(__file__).resolve().parents[1]
KEYS = {"bench", "figure", "value", "target", "baseline", "ok"}


@pytest.mark.process
def test_every_figure_line_of_a_quick_run_names_its_baseline() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "providers"],
        cwd=REPO,
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    rows = [json.loads(line) for line in done.stdout.decode().splitlines() if line.startswith("{")]
    assert rows
    for row in rows:
        assert row.keys() >= KEYS, row


@pytest.mark.process
def test_an_unknown_benchmark_is_refused_with_the_list() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "nosuch"], cwd=REPO, capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 2
    assert b"cold_start" in done.stderr


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_bench_streams_parse_into_as_many_text_deltas(provider: str) -> None:
    with FakeServer() as server:
        server.route("POST", API_PATHS[provider], Reply.sse(stream_for(provider, 50), every=100))
        base = server.url + "/v1" if provider == "openai" else server.url
        model = build_model(provider, model="m", base_url=base)
        with anyio.fail_after(10):  # a local HTTP stream of 50 events: 0.35 s on a loaded machine
            texts = [
                d async for d in model.stream(Prompt("s", [Message.user("go")], [])) if type(d) is TextChunk
            ]
            await model.aclose()
    assert len(texts) == 50
