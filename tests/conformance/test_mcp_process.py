"""MCP through the real ``acp-agent`` process: a scripted turn calls tools of server-everything (stdio and
Streamable HTTP) and of mcp-server-time; a failing server is reported; the user's config adds servers.

The script provider plays the model (``ACP_AGENT_PROVIDER=script``); permission requests are answered
``allow_once`` (the default mode asks before tools that are not read-only; root cannot use full-access).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.abc
import pytest
from anyio.streams.text import TextReceiveStream

from tests._ports import child_port
from tests.conftest import REPO
from tests.mcp.conftest import FAULT_SERVER, PYTHON, require_everything, require_time_server

pytestmark = [pytest.mark.anyio, pytest.mark.process]

AGENT = [sys.executable, "-m", "acp_agent"]


def _mcp_servers(update: dict[str, Any]) -> dict[str, Any] | None:
    """The update's ``_meta.mcpServers`` (None when it has none, or it is no object)."""
    meta: dict[str, Any] = update.get("_meta") or {}
    servers = meta.get("mcpServers")
    return cast(dict[str, Any], servers) if isinstance(servers, dict) else None


def _state(servers: dict[str, Any], name: str) -> Any:
    """The state of server ``name`` in a ``_meta.mcpServers`` object (None when it is not there)."""
    server: dict[str, Any] = servers.get(name) or {}
    return server.get("state")


def _texts(value: Any) -> list[str]:
    """Every string under ``text`` keys (the content of tool-call updates and message chunks)."""
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in cast(dict[str, Any], value).items():
            if k == "text" and isinstance(v, str):
                out.append(v)
            else:
                out.extend(_texts(v))
    elif isinstance(value, list):
        for v in cast(list[Any], value):
            out.extend(_texts(v))
    return out


class AgentProcess:
    """A minimal ACP client over the agent's stdio: requests, collected updates, auto-answered permission
    requests (``allow_once``); other agent requests are refused with method-not-found."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        self.updates: list[dict[str, Any]] = []
        self.permission_requests: list[dict[str, Any]] = []
        self.stderr = ""
        self._responses: dict[int, dict[str, Any]] = {}
        self._changed = anyio.Event()
        self._next_id = 0

    async def _write(self, message: Mapping[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps(message).encode() + b"\n")

    async def read_stdout(self) -> None:
        assert self.process.stdout is not None
        buffer = ""
        async for chunk in TextReceiveStream(self.process.stdout):
            buffer += chunk
            while "\n" in buffer:
                line, buffer = buffer.split("\n", 1)
                if line.strip():
                    await self._on_message(json.loads(line))
        self._wake()

    async def read_stderr(self) -> None:
        assert self.process.stderr is not None
        async for chunk in TextReceiveStream(self.process.stderr):
            self.stderr = (self.stderr + chunk)[-20_000:]

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def _on_message(self, msg: dict[str, Any]) -> None:
        if "method" in msg and "id" in msg:  # the agent asks us
            if msg["method"] == "session/request_permission":
                self.permission_requests.append(msg["params"])
                options = msg["params"]["options"]
                chosen = next(o for o in options if o["kind"] == "allow_once")
                result = {"outcome": {"outcome": "selected", "optionId": chosen["optionId"]}}
                await self._write({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            else:
                error = {"code": -32601, "message": f"method not found: {msg['method']}"}
                await self._write({"jsonrpc": "2.0", "id": msg["id"], "error": error})
        elif "method" in msg:
            if msg["method"] == "session/update":
                self.updates.append(msg["params"]["update"])
        else:
            self._responses[msg["id"]] = msg
        self._wake()

    async def request(self, method: str, params: Any) -> Any:
        self._next_id += 1
        request_id = self._next_id
        await self._write({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while request_id not in self._responses:
            await self._changed.wait()
        response = self._responses.pop(request_id)
        assert "error" not in response, f"{method} failed: {response['error']}\n{self.stderr[-3000:]}"
        return response["result"]

    async def wait_for(self, check: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
        """The first update (from the start) that satisfies ``check``."""
        try:
            with anyio.fail_after(60):
                while True:
                    changed = self._changed
                    for update in self.updates:
                        if check(update):
                            return update
                    await changed.wait()
        except TimeoutError:
            raise AssertionError(f"no update {what}; got {self.updates}\n{self.stderr[-3000:]}") from None

    def mcp_states(self) -> dict[str, str]:
        """The last ``_meta.mcpServers`` states seen in a ``session_info_update``."""
        states: dict[str, str] = {}
        for u in self.updates:
            servers = _mcp_servers(u)
            if u.get("sessionUpdate") == "session_info_update" and servers is not None:
                states = {name: s.get("state") for name, s in servers.items()}
        return states


@asynccontextmanager
async def agent_process(
    tmp_path: Path, script: Sequence[Mapping[str, Any]], extra_env: Mapping[str, str] | None = None
) -> AsyncGenerator[tuple[AgentProcess, Path]]:
    """The agent with a temp home, an empty user config dir and the script; yields it and its project."""
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps(list(script)), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_AGENT_", "OPENAI_", "ANTHROPIC_"))}
    env.update(
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
        ACP_AGENT_HOME=str(tmp_path / "home"),
        ACP_AGENT_PROVIDER="script",
        ACP_AGENT_SCRIPT=str(script_file),
        ACP_AGENT_LOG_LEVEL="info",
        XDG_CONFIG_HOME=str(tmp_path / "xdg"),
    )
    env.update(extra_env or {})
    process = await anyio.open_process(AGENT, cwd=project, env=env)
    agent = AgentProcess(process)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.read_stdout)
            tg.start_soon(agent.read_stderr)
            with anyio.fail_after(120):
                yield agent, project
            assert process.stdin is not None
            await process.stdin.aclose()  # end of input: the agent closes its sessions and exits
            with anyio.fail_after(15):
                await process.wait()
            tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            if process.returncode is None:
                process.kill()
                await process.wait()
            # wait() returns at the exit, before the pipes' end: close them here, not in the GC
            await process.aclose()


async def open_session(agent: AgentProcess, project: Path, servers: Sequence[Mapping[str, Any]]) -> str:
    init = await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    assert init["agentCapabilities"]["mcpCapabilities"] == {"http": True, "sse": True, "acp": True}
    result = await agent.request("session/new", {"cwd": str(project), "mcpServers": list(servers)})
    return str(result["sessionId"])


def stdio(
    name: str, command: str, args: Sequence[str], env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    return {
        "name": name,
        "command": command,
        "args": list(args),
        "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
    }


def all_in(states: Mapping[str, str], names: Sequence[str], state: str) -> bool:
    return all(states.get(n) == state for n in names)


async def wait_states(agent: AgentProcess, names: Sequence[str], state: str) -> None:
    def check(update: dict[str, Any]) -> bool:
        servers = _mcp_servers(update)
        return (
            update.get("sessionUpdate") == "session_info_update"
            and servers is not None
            and all(_state(servers, n) == state for n in names)
        )

    await agent.wait_for(check, f"with mcpServers {list(names)} {state}")


def completed_results(updates: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """Texts of the tool calls that completed, by tool call id."""
    done = {
        u["toolCallId"]
        for u in updates
        if u.get("sessionUpdate") in ("tool_call", "tool_call_update") and u.get("status") == "completed"
    }
    out: dict[str, list[str]] = {i: [] for i in done}
    for u in updates:
        if u.get("toolCallId") in done:
            out[u["toolCallId"]].extend(_texts(u.get("content")))
    return out


@asynccontextmanager
async def everything_over_http(everything: Path) -> AsyncGenerator[str]:
    port = child_port()
    proc = await anyio.open_process(
        ["node", str(everything), "streamableHttp"], env={**os.environ, "PORT": str(port)}
    )
    try:
        assert proc.stderr is not None
        seen = b""
        with anyio.fail_after(30):
            async for chunk in proc.stderr:
                seen += chunk
                if b"listening on port" in seen:
                    break
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await proc.aclose()  # (wait() alone leaves the pipes to the garbage collector)


async def test_a_scripted_turn_calls_everything_over_stdio_and_http_and_the_time_server(
    tmp_path: Path,
) -> None:
    everything = require_everything()
    require_time_server()
    script = [
        {
            "tool_calls": [
                {"name": "mcp__ev__echo", "input": {"message": "hello over stdio"}},
                {"name": "mcp__evhttp__get-sum", "input": {"a": 20, "b": 22}},
                {"name": "mcp__time__get_current_time", "input": {"timezone": "Asia/Tokyo"}},
            ]
        },
        {"text": "all three answered"},
    ]
    async with everything_over_http(everything) as url, agent_process(tmp_path, script) as (agent, project):
        servers: list[dict[str, Any]] = [
            stdio("ev", "node", [str(everything), "stdio"]),
            {"type": "http", "name": "evhttp", "url": url, "headers": []},
            stdio("time", PYTHON, ["-m", "mcp_server_time"]),
        ]
        session = await open_session(agent, project, servers)
        await wait_states(agent, ["ev", "evhttp", "time"], "ready")
        prompt = [{"type": "text", "text": "use the MCP tools"}]
        result = await agent.request("session/prompt", {"sessionId": session, "prompt": prompt})
        assert result["stopReason"] == "end_turn"
        texts = "\n---\n".join("\n".join(t) for t in completed_results(agent.updates).values())
        assert len(completed_results(agent.updates)) == 3, agent.updates
        assert "hello over stdio" in texts
        assert "42" in texts
        assert "Asia/Tokyo" in texts
        states = agent.mcp_states()
        assert all_in(states, ["ev", "evhttp", "time"], "ready"), states


async def test_a_server_that_fails_to_start_is_reported_once_in_the_next_turn_and_in_the_states(
    tmp_path: Path,
) -> None:
    script = [{"text": "first answer"}, {"text": "second answer"}]
    async with agent_process(tmp_path, script) as (agent, project):
        servers = [
            stdio("broken", PYTHON, [str(FAULT_SERVER)], {"FAULT_FAIL_START": "1"}),
            stdio("fine", PYTHON, [str(FAULT_SERVER)], {"FAULT_MARKS": str(tmp_path)}),
        ]
        session = await open_session(agent, project, servers)
        await wait_states(agent, ["broken"], "failed")
        await wait_states(agent, ["fine"], "ready")
        info = next(u for u in agent.updates if _state(_mcp_servers(u) or {}, "broken") == "failed")
        assert "exited with code 3" in info["_meta"]["mcpServers"]["broken"]["error"]

        before = len(agent.updates)
        prompt = [{"type": "text", "text": "hello"}]
        await agent.request("session/prompt", {"sessionId": session, "prompt": prompt})
        chunks = [u for u in agent.updates[before:] if u.get("sessionUpdate") == "agent_message_chunk"]
        first = "".join(_texts(chunks[0]))
        assert first.startswith("MCP server `broken` failed to start: the server process exited with code 3")
        assert "(log: " in first

        before = len(agent.updates)
        await agent.request("session/prompt", {"sessionId": session, "prompt": prompt})
        later = "".join(_texts(agent.updates[before:]))
        assert "failed to start" not in later and "second answer" in later


async def test_servers_of_the_user_config_file_and_mcp_json_are_used(tmp_path: Path) -> None:
    everything = require_everything()
    require_time_server()
    config_dir = tmp_path / "xdg" / "acp-agent"
    config_dir.mkdir(parents=True)
    (config_dir / "config.toml").write_text(
        f'[mcp_servers.time]\ncommand = {json.dumps(PYTHON)}\nargs = ["-m", "mcp_server_time"]\n',
        encoding="utf-8",
    )
    (config_dir / "mcp.json").write_text(
        json.dumps({"mcpServers": {"ev": {"command": "node", "args": [str(everything), "stdio"]}}}),
        encoding="utf-8",
    )
    script = [
        {
            "tool_calls": [
                {
                    "name": "mcp__time__convert_time",
                    "input": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Europe/Paris"},
                },
                {"name": "mcp__ev__echo", "input": {"message": "configured in mcp.json"}},
            ]
        },
        {"text": "done"},
    ]
    async with agent_process(tmp_path, script) as (agent, project):
        session = await open_session(agent, project, [])
        await wait_states(agent, ["time", "ev"], "ready")
        prompt = [{"type": "text", "text": "use the configured servers"}]
        await agent.request("session/prompt", {"sessionId": session, "prompt": prompt})
        results = completed_results(agent.updates)
        texts = "\n".join(t for ts in results.values() for t in ts)
        assert len(results) == 2, agent.updates
        assert "Europe/Paris" in texts and "configured in mcp.json" in texts


async def test_mcp_prompts_are_offered_as_slash_commands(tmp_path: Path) -> None:
    everything = require_everything()
    async with agent_process(tmp_path, [{"text": "ok"}]) as (agent, project):
        await open_session(agent, project, [stdio("ev", "node", [str(everything), "stdio"])])
        await wait_states(agent, ["ev"], "ready")

        def offers_prompt(update: dict[str, Any]) -> bool:
            if update.get("sessionUpdate") != "available_commands_update":
                return False
            return any(c.get("name") == "ev.args-prompt" for c in update.get("availableCommands", []))

        update = await agent.wait_for(offers_prompt, "offering ev.args-prompt")
        command = next(c for c in update["availableCommands"] if c["name"] == "ev.args-prompt")
        assert command["input"] == {"hint": "<city> [state]"}
