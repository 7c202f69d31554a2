"""The credentials the agent holds reach no child and no record: through the real ``acp-agent`` process, with a
scripted HTTP model running the tool calls an attacker would choose, and a client that allows each one
(``full-access`` is not offered to root, so the tests cannot count on it)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from tests.security._trust_support import (
    KEY,
    Client,
    ScriptedModel,
    agent_env,
    choose,
    client,
    files_holding,
    open_session,
    prompt,
    text,
    tool,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240), pytest.mark.process]

TOKEN = "ghp_marked-secret-by-the-user-123"
FILE_KEY = "sk-from-the-key-file-9876543210"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _env(tmp_path: Path, model: ScriptedModel, **extra: str) -> dict[str, str]:
    user = tmp_path / "user"
    (user / ".config" / "acp-agent").mkdir(parents=True, exist_ok=True)
    env = agent_env(tmp_path / "home")
    env.update(
        HOME=str(user),
        XDG_CONFIG_HOME=str(user / ".config"),
        ACP_AGENT_PROVIDER="openai",
        ACP_AGENT_MODEL="m",
        ACP_AGENT_BASE_URL=model.url,
        ACP_AGENT_LOG_LEVEL="debug",  # the most talkative logs are the likeliest to leak
        GITHUB_TOKEN=TOKEN,
        ACP_AGENT_SECRET_ENV="GITHUB_TOKEN",
    )
    env.update(extra)
    return env


def _tool_outputs(model: ScriptedModel) -> list[str]:
    """The tool results the model was sent, in order."""
    out: list[str] = []
    last = model.completions()[-1].json
    for message in last["messages"]:
        if message.get("role") == "tool":
            content = message.get("content")
            out.append(content if isinstance(content, str) else json.dumps(content))
    return out


def _no_trace_of(secret: str, tmp_path: Path, agent: Client, model: ScriptedModel) -> None:
    home = tmp_path / "home"
    assert (home / "logs" / "acp-agent.log").exists(), "no log file: the check would prove nothing"
    assert files_holding(home, secret.encode()) == [], "the secret is in a file under the home"
    assert secret.encode() not in b"".join(agent.stdout_log), "the secret reached stdout"
    assert secret not in agent.stderr_text(), "the secret reached stderr"
    for request in model.completions():
        assert secret.encode() not in request.body, "the secret reached the model"


async def test_the_shell_sees_no_key_and_a_key_in_output_is_redacted_everywhere(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "leak.txt").write_text(f"OPENAI_API_KEY={KEY}\ntoken {TOKEN}\n")
    steps = [
        tool("shell", {"command": "env"}, "call_env"),
        tool("shell", {"command": "cat leak.txt"}, "call_cat"),
        tool("read_file", {"path": "leak.txt"}, "call_read"),
        text("done"),
    ]
    with ScriptedModel(*steps) as model:
        async with client(tmp_path / "home", _env(tmp_path, model, OPENAI_API_KEY=KEY)) as agent:
            agent.permission = choose("allow_once")
            session = await open_session(agent, project)
            assert (await prompt(agent, session))["result"]["stopReason"] == "end_turn"
            with anyio.fail_after(30):
                await agent.call(
                    "session/load", {"sessionId": session, "cwd": str(project), "mcpServers": []}
                )
            assert agent.violations == []
        env_output, cat_output, read_output = _tool_outputs(model)
        assert "PATH=" in env_output  # the command really ran
        for name in ("OPENAI_API_KEY=", "GITHUB_TOKEN="):
            assert name not in env_output, f"{name} reached the shell's environment"
        assert "OPENAI_API_KEY=[redacted]" in cat_output and "token [redacted]" in cat_output
        assert "[redacted]" in read_output
        # The key is authorised to reach its own endpoint, and nowhere else.
        assert all(r.headers.get("authorization") == f"Bearer {KEY}" for r in model.completions())
        _no_trace_of(KEY, tmp_path, agent, model)
        _no_trace_of(TOKEN, tmp_path, agent, model)


async def test_a_key_from_the_key_file_is_kept_out_like_one_from_the_environment(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    key_file = tmp_path / "key.txt"
    key_file.write_text(FILE_KEY + "\n")
    steps = [
        tool("shell", {"command": f"env; cat {key_file}"}, "call_env"),
        text("done"),
    ]
    with ScriptedModel(*steps) as model:
        env = _env(tmp_path, model, ACP_AGENT_API_KEY_FILE=str(key_file))
        async with client(tmp_path / "home", env) as agent:
            agent.permission = choose("allow_once")
            session = await open_session(agent, project)
            assert (await prompt(agent, session))["result"]["stopReason"] == "end_turn"
        (output,) = _tool_outputs(model)
        assert "ACP_AGENT_API_KEY_FILE=" not in output and "[redacted]" in output
        assert model.completions()[0].headers.get("authorization") == f"Bearer {FILE_KEY}"
        _no_trace_of(FILE_KEY, tmp_path, agent, model)


async def test_an_mcp_stdio_server_gets_no_credential_in_its_environment(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    dump = tmp_path / "server-env.json"
    code = f"import json, os; open({str(dump)!r}, 'w').write(json.dumps(dict(os.environ)))"
    with ScriptedModel(text("done")) as model:
        env = _env(tmp_path, model, OPENAI_API_KEY=KEY, ANTHROPIC_API_KEY=KEY + "-a", ACP_AGENT_API_KEY=KEY)
        config = Path(env["XDG_CONFIG_HOME"]) / "acp-agent" / "config.toml"
        config.write_text(
            f'[mcp_servers.dump]\ncommand = {json.dumps(sys.executable)}\nargs = ["-c", {json.dumps(code)}]\n'
            'env = { GIVEN = "on purpose" }\n'
        )
        async with client(tmp_path / "home", env) as agent:
            await prompt(agent, await open_session(agent, project))  # the turn waits for the servers
    seen = json.loads(dump.read_text())
    assert seen.get("GIVEN") == "on purpose" and "PATH" in seen
    assert not [k for k, v in seen.items() if KEY in v or TOKEN in v], "a credential reached the MCP server"
