"""``acp-agent doctor`` (the real command) shows the model's facts and where each came from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from acp_conformance.fake_model import FakeServer, Reply
from tests.acp.models._support import chat_text
from tests.providers.model_lists import route_ollama, route_vllm

pytestmark = [pytest.mark.anyio, pytest.mark.process]


def _doctor(tmp: Path, server: FakeServer, model: str, user_config: str = "") -> str:
    user = tmp / "user"
    (user / ".config" / "acp-agent").mkdir(parents=True, exist_ok=True)
    (user / ".config" / "acp-agent" / "config.toml").write_text(user_config)
    (tmp / "project").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_AGENT_", "OPENAI_", "ANTHROPIC_"))}
    env.update(
        HOME=str(user),
        XDG_CONFIG_HOME=str(user / ".config"),
        ACP_AGENT_HOME=str(tmp / "home"),
        ACP_AGENT_LOG="-",
        ACP_AGENT_PROVIDER="openai",
        ACP_AGENT_BASE_URL=server.url + "/v1",
        ACP_AGENT_MODEL=model,
        ACP_AGENT_API_KEY="k-doctor-1234",
    )
    done = subprocess.run(
        [sys.executable, "-m", "acp_agent", "doctor", "--cwd", str(tmp / "project")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.stdout


def _line(out: str) -> str:
    return next(line for line in out.splitlines() if "model facts:" in line)


async def _run(tmp: Path, server: FakeServer, model: str, user_config: str = "") -> str:
    with anyio.fail_after(90):
        return await anyio.to_thread.run_sync(_doctor, tmp, server, model, user_config)


async def test_doctor_shows_the_servers_window_and_its_source(tmp_path: Path) -> None:
    with FakeServer() as server:
        route_vllm(server, "qwen3-coder", 40960)
        server.route("POST", "/v1/chat/completions", Reply.sse(chat_text("OK", 5)))
        line = _line(await _run(tmp_path, server, "qwen3-coder"))
    assert line.startswith("ok  ")
    assert "context window 40,960 tokens (vLLM: vLLM max_model_len)" in line
    assert "output limit unknown" in line


async def test_doctor_shows_the_configured_window_over_the_servers(tmp_path: Path) -> None:
    config = '[models."qwen3-coder"]\ncontext_window = 16384\nimages = false\n'
    with FakeServer() as server:
        route_vllm(server, "qwen3-coder", 40960)
        server.route("POST", "/v1/chat/completions", Reply.sse(chat_text("OK", 5)))
        line = _line(await _run(tmp_path, server, "qwen3-coder", config))
    assert "context window 16,384 tokens (configuration (" in line and "config.toml" in line
    assert "images no (configuration" in line


async def test_doctor_warns_of_ollamas_default_window(tmp_path: Path) -> None:
    with FakeServer() as server:
        route_ollama(server, "qwen3-coder:30b")
        server.route("POST", "/v1/chat/completions", Reply.sse(chat_text("OK", 5)))
        line = _line(await _run(tmp_path, server, "qwen3-coder:30b"))
    assert line.startswith("warn")
    assert "context window 4,096 tokens (Ollama's default, assumed" in line
    assert "the model supports 262,144" in line
    assert "OLLAMA_CONTEXT_LENGTH=65536 ollama serve" in line
