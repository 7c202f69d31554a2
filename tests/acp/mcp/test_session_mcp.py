"""``SessionMcp`` against real servers: the fault server, mcp-server-time and server-everything."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.logs import log_file_path
from acp_agent.session._mcp import SessionMcp, merge_servers
from harness.mcp import Elicitation, ElicitationReply, McpError
from harness.testing import call_tool
from tests._ports import child_port
from tests.acp.mcp._session_mcp_support import make_env, running
from tests.conftest import REPO
from tests.mcp.conftest import (
    FAULT_SERVER,
    MCP_SDK_SSE_LEAK,
    PYTHON,
    require_everything,
    require_time_server,
    wait_until,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """Both backends: the servers run under the session's event loop, whichever it is."""
    return str(request.param)


def stdio(name: str, command: str, args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """An ACP stdio entry, as an editor sends it."""
    return {
        "name": name,
        "command": command,
        "args": args,
        "env": [{"name": k, "value": v} for k, v in (env or {}).items()],
    }


def fault(tmp_path: Path, name: str = "fault", **env: str) -> dict[str, Any]:
    return stdio(name, PYTHON, [str(FAULT_SERVER)], {"FAULT_MARKS": str(tmp_path), **env})


class Changes:
    """Records ``status_meta()`` at every ``on_change`` call; waits for a state without sleeping."""

    def __init__(self) -> None:
        self.mcp: SessionMcp | None = None
        self.seen: list[dict[str, Any]] = []
        self._event = anyio.Event()

    async def __call__(self) -> None:
        assert self.mcp is not None
        self.seen.append(self.mcp.status_meta())
        self._event.set()
        self._event = anyio.Event()

    async def until(self, check: Callable[[dict[str, Any]], bool], timeout: float = 30) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            while True:
                event = self._event
                for meta in self.seen:
                    if check(meta):
                        return meta
                await event.wait()

    def states(self, name: str) -> list[str]:
        out: list[str] = []
        for meta in self.seen:
            state = meta.get(name, {}).get("state")
            if state is not None and (not out or out[-1] != state):
                out.append(state)
        return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


async def tool_named(mcp: SessionMcp, name: str) -> Any:
    tools = {t.spec().name: t for t in await mcp.tools.tools()}
    assert name in tools, sorted(tools)
    return tools[name]


def test_session_entries_win_over_config_entries_of_the_same_name() -> None:
    config = [{"name": "a", "command": "from-config"}, {"name": "b", "command": "b"}]
    session = [{"name": "a", "command": "from-session"}, {"type": "http", "name": "c", "url": "http://x"}]
    merged = merge_servers(config, session)
    assert [(e["name"], e.get("command")) for e in merged] == [
        ("a", "from-session"),
        ("b", "b"),
        ("c", None),
    ]


@pytest.mark.process
def test_importing_the_module_loads_neither_the_sdk_nor_harness_mcp() -> None:
    code = (
        "import sys, acp_agent.session._mcp\n"
        "bad = [m for m in ('mcp', 'harness.mcp', 'mcp_types') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, env=env, timeout=60)


@pytest.mark.process
async def test_a_server_goes_from_starting_to_ready_and_each_change_calls_on_change(tmp_path: Path) -> None:
    require_time_server()
    changes = Changes()
    env = make_env(tmp_path, [stdio("time", PYTHON, ["-m", "mcp_server_time"])])
    async with running(env, on_change=changes) as mcp:
        changes.mcp = mcp
        assert mcp.status_meta()["time"]["state"] == "starting"
        ready = await changes.until(lambda m: m["time"]["state"] == "ready")
        assert ready["time"]["tools"] == 2 and ready["time"]["error"] is None
        assert changes.states("time") == ["starting", "ready"]
        now = await tool_named(mcp, "mcp__time__get_current_time")
        out = await call_tool(now, {"timezone": "UTC"})
        assert not out.result.error, out.result.as_text()
        assert out.result.value["timezone"] == "UTC"
        assert mcp.take_failures() == []


@pytest.mark.process
async def test_start_returns_while_a_slow_server_starts_and_its_tools_appear_once_ready(
    tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"
    env = make_env(tmp_path, [fault(tmp_path, "slow", FAULT_GATE=str(gate)), fault(tmp_path, "quick")])
    changes = Changes()
    async with running(env, on_change=changes) as mcp:
        changes.mcp = mcp
        await changes.until(lambda m: m["quick"]["state"] == "ready")
        await mcp.wait_ready(0.2)  # bounded: returns although `slow` is still starting
        assert mcp.status_meta()["slow"]["state"] == "starting"
        names = [t.spec().name for t in await mcp.tools.tools()]
        assert "mcp__quick__echo" in names and not any(n.startswith("mcp__slow__") for n in names)
        gate.write_text("open")
        with anyio.fail_after(30):
            await mcp.wait_ready(30)
        assert mcp.status_meta()["slow"]["state"] == "ready"
        names = [t.spec().name for t in await mcp.tools.tools()]
        assert "mcp__slow__echo" in names
        assert "ready" in changes.states("slow")


@pytest.mark.process
async def test_a_server_that_fails_to_start_is_reported_once_with_cause_and_log_path(tmp_path: Path) -> None:
    env = make_env(tmp_path, [fault(tmp_path, "broken", FAULT_FAIL_START="1"), fault(tmp_path, "fine")])
    changes = Changes()
    async with running(env, on_change=changes) as mcp:
        changes.mcp = mcp
        meta = await changes.until(lambda m: m["broken"]["state"] == "failed")
        assert "exited with code 3" in meta["broken"]["error"]
        with anyio.fail_after(30):
            await mcp.wait_ready(30)
        failures = mcp.take_failures()
        assert len(failures) == 1, failures
        assert failures[0].startswith(
            "MCP server `broken` failed to start: the server process exited with code 3"
        )
        assert "cannot start" in failures[0]  # its stderr's last line
        assert failures[0].endswith(f"(log: {log_file_path(env.home)})")
        # A later use restarts it (with backoff) and it fails again: still reported only once.
        broken = await mcp.tools.tools()
        assert not any(t.spec().name.startswith("mcp__broken__") for t in broken)
        assert mcp.take_failures() == []
        assert mcp.status_meta()["fine"]["state"] == "ready"


@pytest.mark.process
async def test_an_unusable_entry_is_a_failed_server_and_the_others_still_start(tmp_path: Path) -> None:
    env = make_env(tmp_path, [{"name": "empty", "command": ""}, fault(tmp_path, "fine")])
    changes = Changes()
    async with running(env, on_change=changes) as mcp:
        changes.mcp = mcp
        meta = mcp.status_meta()
        assert meta["empty"] == {"state": "failed", "error": "a stdio server needs a command", "tools": 0}
        assert mcp.take_failures() == [
            f"MCP server `empty` failed to start: a stdio server needs a command (log: {log_file_path(env.home)})"
        ]
        await changes.until(lambda m: m["fine"]["state"] == "ready" and m["empty"]["state"] == "failed")


@pytest.mark.process
async def test_config_servers_are_merged_with_the_sessions_by_name(tmp_path: Path) -> None:
    config = [
        {"name": "fault", "command": "/nonexistent/server"},  # overridden by the session's entry
        fault(tmp_path, "extra"),
    ]
    env = make_env(tmp_path, [fault(tmp_path, "fault")])
    async with running(env, config) as mcp:
        with anyio.fail_after(30):
            await mcp.wait_ready(30)
        meta = mcp.status_meta()
        assert {k: v["state"] for k, v in meta.items()} == {"fault": "ready", "extra": "ready"}
        assert mcp.take_failures() == []


@pytest.mark.process
async def test_a_stdio_server_runs_in_the_project_with_the_roots_of_the_session(tmp_path: Path) -> None:
    env = make_env(tmp_path, [fault(tmp_path)])
    async with running(env) as mcp:
        await mcp.wait_ready(30)
        out = await call_tool(await tool_named(mcp, "mcp__fault__roots"), {})
        assert out.result.as_text() == env.cwd.as_uri()
        pid = int((await call_tool(await tool_named(mcp, "mcp__fault__pid"), {})).result.as_text())
        assert await anyio.Path(f"/proc/{pid}/cwd").resolve() == await anyio.Path(env.cwd).resolve()


@pytest.mark.process
async def test_elicitation_is_declined_by_default_and_goes_to_a_handler_set_after_start(
    tmp_path: Path,
) -> None:
    env = make_env(tmp_path, [fault(tmp_path)])
    async with running(env) as mcp:
        await mcp.wait_ready(30)
        ask = await tool_named(mcp, "mcp__fault__ask")
        assert (await call_tool(ask, {})).result.as_text() == "decline"
        asked: list[Elicitation] = []

        async def handler(request: Elicitation) -> ElicitationReply:
            asked.append(request)
            return ElicitationReply("accept", {"name": "Ada", "age": 36})

        mcp.elicitation_handler = handler
        assert (await call_tool(ask, {})).result.as_text() == "accept:Ada:36"
        assert asked[0].server == "fault" and asked[0].message == "What is your name?"


@pytest.mark.process
async def test_aclose_ends_every_server_process_and_its_children(tmp_path: Path) -> None:
    env = make_env(tmp_path, [fault(tmp_path, "one"), fault(tmp_path, "two")])
    pids: list[int] = []
    mcp = SessionMcp(env)
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            mcp.spawn = tg.start_soon
            await mcp.start()
            await mcp.wait_ready(30)
            for name in ("one", "two"):
                pid = await call_tool(await tool_named(mcp, f"mcp__{name}__pid"), {})
                child = await call_tool(await tool_named(mcp, f"mcp__{name}__spawn_grandchild"), {})
                pids += [int(pid.result.as_text()), int(child.result.as_text())]
            assert all(alive(p) for p in pids)
            await mcp.aclose()
            assert mcp.manager is None
            assert await mcp.tools.tools() == []
            # The owned task has ended: the test's task group exits without being cancelled.

        async def all_gone() -> bool:  # SIGKILLed grandchildren may take init a moment to reap
            return not any(alive(p) for p in pids)

        await wait_until(all_gone, 5)
        assert {v["state"] for v in mcp.status_meta().values()} == {"stopped"}


@pytest.mark.process  # server-everything (node), skipped where the npm peers are absent
async def test_prompts_of_server_everything_become_commands_that_expand_into_the_prompt(
    tmp_path: Path,
) -> None:
    everything = require_everything()
    env = make_env(tmp_path, [stdio("everything", "node", [str(everything), "stdio"])])
    async with running(env) as mcp:
        with anyio.fail_after(60):
            await mcp.wait_ready(60)
            assert mcp.status_meta()["everything"]["state"] == "ready"
            commands = {c["name"]: c for c in await mcp.commands()}
            assert "input" not in commands["everything.simple-prompt"]
            assert commands["everything.simple-prompt"]["description"] == (
                "A prompt with no arguments (MCP: everything)"
            )
            assert commands["everything.args-prompt"]["input"] == {"hint": "<city> [state]"}
            assert (
                await mcp.expand("everything.simple-prompt", "")
                == "This is a simple prompt without arguments."
            )
            assert await mcp.expand("everything.args-prompt", "Paris") == "What's weather in Paris?"
            by_name = await mcp.expand("everything.args-prompt", "state=Texas city=Austin")
            assert by_name is not None and "Austin" in by_name and "Texas" in by_name
            assert await mcp.expand("no-such-command", "x") is None
            with pytest.raises(McpError, match="needs city"):
                await mcp.expand("everything.args-prompt", "")


@pytest.mark.process  # server-everything (node), skipped where the npm peers are absent
@MCP_SDK_SSE_LEAK  # the SDK's Streamable HTTP client, on trio (see tests.mcp.conftest)
async def test_a_streamable_http_entry_with_headers_connects(tmp_path: Path) -> None:
    everything = require_everything()
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
        entry = {
            "type": "http",
            "name": "ev",
            "url": f"http://127.0.0.1:{port}/mcp",
            "headers": [{"name": "X-Test", "value": "1"}],
        }
        async with running(make_env(tmp_path, [entry])) as mcp:
            with anyio.fail_after(60):
                await mcp.wait_ready(30)
                assert mcp.status_meta()["ev"]["state"] == "ready", mcp.status_meta()
                assert mcp.status_meta()["ev"]["transport"] == "http"
                out = await call_tool(await tool_named(mcp, "mcp__ev__get-sum"), {"a": 2, "b": 3})
                assert "5" in out.result.as_text()
    finally:
        proc.kill()
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await proc.aclose()  # (wait() alone leaves the pipes to the garbage collector)


async def test_without_servers_start_needs_no_spawn_and_nothing_runs(tmp_path: Path) -> None:
    mcp = SessionMcp(make_env(tmp_path))
    await mcp.start()
    await mcp.wait_ready(5)
    assert mcp.status_meta() == {} and await mcp.commands() == [] and await mcp.tools.tools() == []
    await mcp.aclose()


async def test_start_without_a_spawner_is_a_loud_misuse(tmp_path: Path) -> None:
    from harness import HarnessUsageError

    mcp = SessionMcp(make_env(tmp_path, [fault(tmp_path)]))
    with pytest.raises(HarnessUsageError, match="spawn"):
        await mcp.start()
