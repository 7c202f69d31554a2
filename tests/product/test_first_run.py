"""The first run without a model, through the real commands: ``doctor`` and ``chat`` point to ``setup``,
``chat`` in a terminal leads into the set-up and then chats, ``setup`` lets a wrong URL be entered again, and
a broken ``config.toml`` is reported the same way by ``doctor`` and by ``setup`` (before any question)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_conformance.fake_model import FakeServer, Reply
from tests.providers.sse_fixtures import fixture

pexpect = pytest.importorskip("pexpect", reason="pexpect (dev extra) drives setup and chat through a pty")

AGENT = Path(sys.executable).parent / "acp-harness-agent"
# The chat's prompt as prompt_toolkit draws it: "> ", or ">" and the cursor moved past the space.
PROMPT = r">(?: |\x08\x1b\[2C)"
TIMEOUT = 30
NOWHERE = "http://127.0.0.1:9/v1"  # nothing listens there


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ACP_AGENT_", "OPENAI_", "ANTHROPIC_")) and k not in ("XDG_CONFIG_HOME",)
    }
    env.update(
        HOME=str(tmp_path / "user"),
        XDG_CONFIG_HOME=str(tmp_path / "xdg"),
        ACP_AGENT_HOME=str(tmp_path / "home"),
        NO_COLOR="1",
        TERM="xterm",
    )
    return env


def _config(tmp_path: Path) -> Path:
    return tmp_path / "xdg" / "acp-agent" / "config.toml"


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return subprocess.run(
        [str(AGENT), *args],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        cwd=project,
        stdin=subprocess.DEVNULL,
        timeout=TIMEOUT,
    )


def _server() -> FakeServer:
    server = FakeServer()
    server.route(
        "GET",
        "/v1/models",
        Reply.json(200, {"object": "list", "data": [{"id": "qwen3-8b", "object": "model"}]}),
    )
    server.route("POST", "/v1/chat/completions", Reply.sse(fixture("chat_openai_text.sse")))
    return server


@pytest.mark.process
def test_doctor_without_a_model_points_to_setup(tmp_path: Path) -> None:
    result = _run(tmp_path, "doctor")
    model = next(line for line in result.stdout.splitlines() if "model" in line and "no model" in line)
    assert "run `acp-harness-agent setup`" in model
    assert result.returncode == 1


@pytest.mark.process
def test_a_broken_config_toml_is_reported_by_doctor_without_claiming_all_defaults(tmp_path: Path) -> None:
    _config(tmp_path).parent.mkdir(parents=True)
    _config(tmp_path).write_text('provider = "openai"\nmodel = \n')
    result = _run(tmp_path, "doctor")
    assert "config.toml" in result.stdout and result.returncode == 1
    assert "all defaults" not in result.stdout
    settings = next(line for line in result.stdout.splitlines() if "settings" in line)
    assert "problems above" in settings


@pytest.mark.process
def test_setup_reports_a_broken_config_toml_before_asking_anything_and_leaves_it(tmp_path: Path) -> None:
    _config(tmp_path).parent.mkdir(parents=True)
    broken = 'provider = "openai"\nmodel = \n'
    _config(tmp_path).write_text(broken)
    child: Any = pexpect.spawn(str(AGENT), ["setup"], env=_env(tmp_path), encoding="utf-8", timeout=TIMEOUT)
    try:
        child.expect_exact("is not valid TOML")
        child.expect(pexpect.EOF)
        seen = child.before or ""
    finally:
        child.close(force=True)
    assert child.exitstatus == 1 and "Provider" not in seen
    assert _config(tmp_path).read_text() == broken


@pytest.mark.process
def test_setup_lets_a_wrong_url_be_entered_again_and_then_writes_the_right_one(tmp_path: Path) -> None:
    with _server() as server:
        child: Any = pexpect.spawn(
            str(AGENT), ["setup"], env=_env(tmp_path), encoding="utf-8", timeout=TIMEOUT
        )
        try:
            child.expect_exact("Provider [1]: ")
            child.sendline("4")  # a local OpenAI-compatible server
            child.expect_exact("Base URL")
            child.sendline(NOWHERE)  # a typo: nothing there
            child.expect_exact("API key")
            child.sendline("")
            child.expect_exact("Model name: ")
            child.sendline("qwen3-8b")
            child.expect_exact("The check failed.")
            child.sendline("r")
            child.expect_exact("Provider [1]: ")
            child.sendline("4")
            child.expect_exact("Base URL")
            child.sendline(server.url + "/v1")
            child.expect_exact("API key")
            child.sendline("")
            child.expect_exact("1) qwen3-8b")
            child.sendline("1")
            child.expect_exact("Wrote")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
    assert child.exitstatus == 0, child.before
    written = _config(tmp_path).read_text()
    assert f'base_url = "{server.url}/v1"' in written and NOWHERE not in written


@pytest.mark.process
def test_setup_quit_after_a_failed_check_writes_nothing(tmp_path: Path) -> None:
    child: Any = pexpect.spawn(str(AGENT), ["setup"], env=_env(tmp_path), encoding="utf-8", timeout=TIMEOUT)
    try:
        child.expect_exact("Provider [1]: ")
        child.sendline("4")
        child.expect_exact("Base URL")
        child.sendline(NOWHERE)
        child.expect_exact("API key")
        child.sendline("")
        child.expect_exact("Model name: ")
        child.sendline("m")
        child.expect_exact("The check failed.")
        child.sendline("q")
        child.expect_exact("Nothing was written.")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 1 and not _config(tmp_path).exists()


@pytest.mark.process
def test_chat_without_a_model_and_without_a_terminal_says_to_run_setup(tmp_path: Path) -> None:
    result = _run(tmp_path, "chat")
    assert result.returncode == 2
    assert "no model is configured; run `acp-harness-agent setup` first" in result.stderr


@pytest.mark.process
def test_chat_without_a_model_in_a_terminal_runs_the_setup_and_then_chats(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    with _server() as server:
        child: Any = pexpect.spawn(
            str(AGENT), ["chat", "--cwd", str(project)], env=_env(tmp_path), encoding="utf-8", timeout=TIMEOUT
        )
        try:
            child.expect_exact("No model is configured yet")
            child.expect_exact("Provider [1]: ")
            child.sendline("4")
            child.expect_exact("Base URL")
            child.sendline(server.url + "/v1")
            child.expect_exact("API key")
            child.sendline("")
            child.expect_exact("1) qwen3-8b")
            child.sendline("1")
            child.expect_exact("Wrote")
            child.expect(PROMPT)
            child.sendline("hello")
            child.expect(PROMPT)
            child.sendeof()
            child.expect(pexpect.EOF)
            seen = child.before or ""
        finally:
            child.close(force=True)
    assert child.exitstatus == 0, seen
    assert "no model is configured" not in seen.lower()
    assert any(r.method == "POST" for r in server.requests)
