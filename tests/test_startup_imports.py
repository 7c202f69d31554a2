"""The start-up import budget: the agent answers ``initialize`` before it imports anyio, pydantic, the
harness (all but its provider registry, which the configuration is checked against), the protocol models,
httpx2 or the ``mcp`` SDK (``acp_agent._early``); those load while the client reads the answer. Measured in the real process, configured for an HTTP provider as a user configures it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.process

REPO = Path(__file__).resolve().parents[1]

# Runs the agent's entry point; when the early answer to request argv[2] (``initialize``, or the
# ``session/new`` after it) is written, the names of the modules loaded so far go to the file named by argv[1].
_SNAPSHOT = r"""
import json, sys
import acp_agent._early as early

out, request_id = sys.argv[1], int(sys.argv[2])
write_all = early._write_all

def snapshot(fd, data):
    if json.loads(data)["id"] == request_id:
        with open(out, "w", encoding="utf-8") as f:
            json.dump(sorted(n for n, m in sys.modules.items() if m is not None), f)  # None: blocked
    write_all(fd, data)

early._write_all = snapshot
sys.argv = ["acp-agent"]
from acp_agent.__main__ import main
main()
"""

# Runs the agent's entry point; when the first ``session/new`` answer is written, the names of the modules
# loaded so far go to the file named by argv[1]. (The serve module is patched as it is imported: importing
# it here would change what start-up imports.)
_SNAPSHOT_NEW = r"""
import importlib.abc, importlib.machinery, json, sys

out = sys.argv[1]

def patch(module):
    send = module.ResponseWatch.send
    async def watched(self, item):
        if b'"sessionId"' in item and b'"result"' in item:
            with open(out, "w", encoding="utf-8") as f:
                json.dump(sorted(n for n, m in sys.modules.items() if m is not None), f)  # None: blocked
        await send(self, item)
    module.ResponseWatch.send = watched

class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "acp_agent.session.serve":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            patch(module)
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, Finder())
sys.argv = ["acp-agent"]
from acp_agent.__main__ import main
main()
"""

# Top-level packages that must not be loaded when ``initialize`` is answered.
_NOT_YET = ("anyio", "pydantic", "pydantic_core", "harness", "httpx2", "httpcore2", "mcp", "trio", "asyncio")
# The part of the harness that may be: the providers' registry (standard library data, no class loaded).
_REGISTRY = ["harness", "harness.lazy", "harness.providers", "harness.providers.registry"]


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_AGENT_", "OPENAI_", "ANTHROPIC_"))}
    env.update(
        {
            "ACP_AGENT_HOME": str(tmp_path / "home"),
            "ACP_AGENT_PROVIDER": "openai",
            "ACP_AGENT_MODEL": "some-model",
            "ACP_AGENT_BASE_URL": "http://127.0.0.1:9/v1",
            "ACP_AGENT_LOG_LEVEL": "warning",
        }
    )
    return env


def _run(
    tmp_path: Path, wrapper: str, lines: list[dict[str, Any]], *args: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """Run ``wrapper`` with ``lines`` as its whole input; (the messages it wrote, the modules snapshot)."""
    snapshot = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", wrapper, str(snapshot), *args],
        input="".join(json.dumps(line) + "\n" for line in lines).encode(),
        capture_output=True,
        env=_env(tmp_path),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    messages = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return messages, json.loads(snapshot.read_text(encoding="utf-8"))


INIT: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}


def _session_new(cwd: Path, **extra: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"cwd": str(cwd), "mcpServers": [], **extra}
    return {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": params}


def test_initialize_is_answered_before_the_runtime_the_models_and_http_are_imported(tmp_path: Path) -> None:
    messages, loaded = _run(tmp_path, _SNAPSHOT, [INIT], "1")
    assert messages[0]["result"]["agentInfo"]["name"] == "acp-harness-agent"
    too_early = sorted({name.split(".")[0] for name in loaded} & (set(_NOT_YET) - {"harness"}))
    assert too_early == []
    assert sorted(n for n in loaded if n.startswith("harness")) == _REGISTRY
    # The agent's own modules at that point: the command line, the configuration, the early answer.
    late = ("acp_agent.session", "acp_agent.protocol", "acp_agent.coding")
    assert [name for name in loaded if name.startswith(late)] == []


def test_an_editors_first_session_new_is_answered_before_the_runtime_and_the_models_are_imported(
    tmp_path: Path,
) -> None:
    messages, loaded = _run(tmp_path, _SNAPSHOT, [INIT, _session_new(tmp_path)], "2")
    answer = next(m for m in messages if m.get("id") == 2)
    assert answer["result"]["sessionId"].startswith("sess_")
    assert answer["result"]["modes"]["currentModeId"] == "default"
    # The light part of the harness (the registry, the cached model facts) but not its runtime.
    too_early = sorted({name.split(".")[0] for name in loaded} & (set(_NOT_YET) - {"harness"}))
    assert too_early == []
    assert sorted(n for n in loaded if n.startswith("harness")) == sorted([*_REGISTRY, "harness.model_info"])
    assert [name for name in loaded if name.startswith(("acp_agent.session", "acp_agent.protocol"))] == []


def test_a_session_new_the_early_answer_leaves_is_answered_before_http_mcp_and_the_web_tools_load(
    tmp_path: Path,
) -> None:
    # An unexpected field: the connection answers it (acp_agent._early answers only the plain shape).
    messages, loaded = _run(tmp_path, _SNAPSHOT_NEW, [INIT, _session_new(tmp_path, _meta={"x": 1})])
    answer = next(m for m in messages if m.get("id") == 2)
    assert "sessionId" in answer["result"]
    # A provider is configured, but no request has been made yet; no MCP server; no page fetched.
    packages = {name.split(".")[0] for name in loaded}
    assert sorted(packages & {"httpx2", "httpcore2", "h11", "trio", "mcp"}) == []
    assert [n for n in ("html.parser", "harness.tools._html") if n in loaded] == []
