"""Secrets: the API key given in the environment must not reach the home folder, the log or stdout,
also when the provider fails and the failure is logged and reported."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.reliability._reliability_support import agent_env, agent_process, initialized

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(180), pytest.mark.process]

SECRET = "sk-test-SECRET-1234567890"


def _files_holding(root: Path, needle: bytes) -> list[str]:
    found: list[str] = []
    for path in root.rglob("*"):
        if path.is_file() and needle in path.read_bytes():
            found.append(str(path))
    return found


async def test_the_api_key_appears_in_no_file_log_or_stdout_when_the_provider_fails(
    home: Path, tmp_path: Path, refused_port: int
) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    env = agent_env(
        home,
        ACP_AGENT_PROVIDER="openai",
        ACP_AGENT_MODEL="gpt-test",
        ACP_AGENT_BASE_URL=f"http://127.0.0.1:{refused_port}/v1",
        ACP_AGENT_API_KEY=SECRET,
        ACP_AGENT_LOG_LEVEL="debug",  # the most talkative logs are the likeliest to leak
    )
    async with agent_process(home, env, keep_stdout=True) as agent:
        with anyio.fail_after(120):
            await initialized(agent)
            session = (await agent.call("session/new", {"cwd": str(cwd), "mcpServers": []}))["sessionId"]
            answer = await agent.response(
                await agent.request(
                    "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]}
                )
            )
            # The prompt must really have gone to the provider and failed on the transport.
            assert answer.get("error", {}).get("data", {}).get("errorKind") == "transport_error", answer
            await agent.call("session/list", {})
            await agent.call("session/load", {"sessionId": session, "cwd": str(cwd), "mcpServers": []})
            assert not agent.violations, agent.violations
    needle = SECRET.encode()
    assert _files_holding(home, needle) == []
    log_file = home / "logs" / "acp-agent.log"
    assert log_file.exists(), "the agent wrote no log file: the check would prove nothing"
    assert SECRET not in agent.stderr_text(), "the key reached stderr (the log stream)"
    stdout = b"".join(agent.stdout_log)
    assert needle not in stdout, "the key reached stdout"
    assert b"transport_error" in stdout  # stdout was captured
