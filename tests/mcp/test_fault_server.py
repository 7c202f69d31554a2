"""``McpServer`` against an in-test Python MCP server: results, progress, elicitation, and every fault."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness.mcp import (
    Elicitation,
    ElicitationReply,
    McpManager,
    McpServer,
    McpTool,
    ServerState,
    ServerStatus,
)
from harness.testing import call_tool
from tests._ports import child_port
from tests.mcp.conftest import FAULT_SERVER, MCP_SDK_SSE_LEAK, PYTHON, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.process]


def fault(tmp_path: Path, env: dict[str, str] | None = None, **options: Any) -> McpServer:
    base = {"FAULT_MARKS": str(tmp_path)}
    return McpServer.stdio("fault", PYTHON, [str(FAULT_SERVER)], env=base | (env or {}), **options)


async def tool(server: McpServer, name: str) -> McpTool:
    for t in await server.tools():
        if t.original_name == name:
            return t
    raise AssertionError(f"no tool {name!r} in {[t.original_name for t in await server.tools()]}")


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


async def test_tools_carry_prefixed_names_schemas_and_hints(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with fault(tmp_path) as server:
            assert server.status == ServerStatus.READY
            peek = (await tool(server, "peek")).spec()
            assert peek.name == "mcp__fault__peek"
            assert peek.hints.read_only and not peek.hints.destructive and not peek.hints.open_world
            echo = (await tool(server, "echo")).spec()
            assert echo.schema["properties"]["text"]["type"] == "string"
            assert echo.hints.destructive and echo.hints.open_world  # MCP defaults without annotations
            weird = await tool(server, "weird.name/with spaces")
            assert weird.spec().name.startswith("mcp__fault__weird_name_with_spaces_")
            out = await call_tool(weird, {})
            assert out.result.as_text() == "weird ok"


async def test_every_content_kind_becomes_the_result_with_structured_content_as_value(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with fault(tmp_path) as server:
            out = await call_tool(await tool(server, "media"), {})
    r = out.result
    assert not r.error
    assert r.value == {"answer": 42}
    text = r.as_text()
    assert "hello" in text and "[audio audio/wav, 8 bytes]" in text
    assert "[resource file:///tmp/a.txt]\nfile text" in text and "resource link file:///tmp/b.bin" in text
    assert any(getattr(p, "media_type", None) == "image/png" for p in r.content)
    assert [b["type"] for b in r.meta["mcp_content"]] == [
        "text",
        "image",
        "audio",
        "resource",
        "resource_link",
    ]


async def test_a_tool_error_is_an_error_result(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with fault(tmp_path) as server:
            out = await call_tool(await tool(server, "fail"), {})
    assert out.result.error
    assert "fail" in out.result.as_text()


async def test_progress_notifications_become_call_progress(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with fault(tmp_path) as server:
            out = await call_tool(await tool(server, "slow"), {"steps": 3})
    assert out.result.as_text() == "done after 3 steps"
    assert out.progress == [
        {"progress": 1.0, "total": 3.0, "message": "step 1"},
        {"progress": 2.0, "total": 3.0, "message": "step 2"},
        {"progress": 3.0, "total": 3.0, "message": "step 3"},
    ]


async def test_a_huge_result_is_read_whole_and_truncated_for_the_model(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with fault(tmp_path, max_result_chars=1000) as server:
            out = await call_tool(await tool(server, "huge"), {"n": 3_000_000})
    text = out.result.as_text()
    assert text.startswith("x" * 1000)
    assert "[truncated: the result had 3000000 characters, 1000 are shown]" in text


async def test_elicitation_goes_to_the_handler_and_its_answer_to_the_server(tmp_path: Path) -> None:
    asked: list[Elicitation] = []

    async def handler(request: Elicitation) -> ElicitationReply:
        asked.append(request)
        return ElicitationReply("accept", {"name": "Ada", "age": 36})

    with anyio.fail_after(30):
        async with fault(tmp_path, elicitation_handler=handler) as server:
            out = await call_tool(await tool(server, "ask"), {})
    assert out.result.as_text() == "accept:Ada:36"
    assert asked[0].server == "fault" and asked[0].message == "What is your name?"
    assert [q.id for q in asked[0].questions()] == ["name", "age"]


async def test_elicitation_without_a_handler_is_declined(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with fault(tmp_path) as server:
            out = await call_tool(await tool(server, "ask"), {})
    assert out.result.as_text() == "decline"


async def test_roots_are_the_session_roots(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with fault(tmp_path, roots=[tmp_path]) as server:
            out = await call_tool(await tool(server, "roots"), {})
    assert out.result.as_text() == tmp_path.as_uri()


async def test_list_changed_makes_the_next_listing_show_the_new_tool(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with fault(tmp_path) as server:
            assert "added" not in [t.original_name for t in await server.tools()]
            await call_tool(await tool(server, "add_tool"), {})

            async def listed() -> bool:  # the notification arrives on its own task
                return "added" in [t.original_name for t in await server.tools()]

            await wait_until(listed)
            out = await call_tool(await tool(server, "added"), {})
    assert out.result.as_text() == "I was added"


async def test_the_server_env_has_the_configured_env_but_not_our_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOME_API_KEY", "do-not-leak")
    with anyio.fail_after(30):
        async with fault(tmp_path, env={"GIVEN": "yes"}) as server:
            env = await tool(server, "env")
            leaked = await call_tool(env, {"name": "SOME_API_KEY"})
            given = await call_tool(env, {"name": "GIVEN"})
    assert leaked.result.as_text() == "<unset>"
    assert given.result.as_text() == "yes"


async def test_stderr_of_the_server_goes_to_the_log(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="harness.mcp.stderr")
    with anyio.fail_after(30):
        async with fault(tmp_path) as server:
            assert server.status == ServerStatus.READY
    assert any("fault server: serving" in r.getMessage() for r in caplog.records)


async def test_a_server_that_fails_to_start_gives_an_error_result_naming_it_and_the_cause(
    tmp_path: Path,
) -> None:
    states: list[ServerState] = []
    with anyio.fail_after(30):
        async with fault(tmp_path, env={"FAULT_FAIL_START": "1"}, on_status_change=states.append) as server:
            assert server.status == ServerStatus.FAILED
            assert "exited with code 3" in (server.state.cause or "")
            assert "the config is missing" in (server.state.cause or "")
            assert await server.tools() == []
            result = await server.call_tool("echo", {"text": "x"})
    assert result.error
    assert "`fault`" in result.as_text() and "exited with code 3" in result.as_text()
    assert [s.status for s in states][:2] == [ServerStatus.STARTING, ServerStatus.FAILED]


async def test_a_command_that_does_not_exist_fails_with_the_os_error(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with McpServer.stdio("nope", str(tmp_path / "no-such-binary")) as server:
            assert server.status == ServerStatus.FAILED
            assert "No such file" in (server.state.cause or "")


@pytest.mark.parametrize(
    "path", ["{sep}/usr/bin", ".{sep}/usr/bin", "/usr/bin{sep}", "{cwd}/bin{sep}/usr/bin"]
)
async def test_a_server_command_the_project_supplies_is_never_started(tmp_path: Path, path: str) -> None:
    """The configured command by name, found on PATH only where the project (the server's folder) cannot
    supply it: a clone's own ``my-server`` file, reached through an empty or relative PATH entry or a PATH
    entry into the project, would run unasked when the session starts."""
    marker = tmp_path / "marker"
    for folder in (tmp_path, tmp_path / "bin"):
        folder.mkdir(exist_ok=True)
        planted = folder / "my-server"
        planted.write_text(f"#!/bin/sh\ntouch {marker}\n")
        planted.chmod(0o755)
    env = {"PATH": path.format(sep=os.pathsep, cwd=tmp_path)}
    with anyio.fail_after(30):
        async with McpServer.stdio("planted", "my-server", env=env, cwd=tmp_path) as server:
            assert server.status == ServerStatus.FAILED
            assert "not searched" in (server.state.cause or ""), server.state.cause
    assert not marker.exists()


async def test_a_crash_mid_call_is_an_error_result_and_the_server_restarts_on_next_use(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(30):
        async with fault(tmp_path) as server:
            crash = await call_tool(await tool(server, "crash"), {})
            assert crash.result.error
            assert "`fault`" in crash.result.as_text() and "exited with code 7" in crash.result.as_text()
            assert server.status == ServerStatus.FAILED
            again = await call_tool(await tool(server, "echo"), {"text": "back"})
            assert again.result.as_text() == "back"
            assert server.status == ServerStatus.READY


async def test_a_hanging_call_times_out_with_an_error_result_and_the_server_stays_usable(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(30):
        async with fault(tmp_path, call_timeout=1.0) as server:
            out = await call_tool(await tool(server, "hang"), {})
            assert out.result.error
            assert "did not answer `hang` within 1 s" in out.result.as_text()
            ok = await call_tool(await tool(server, "echo"), {"text": "still here"})
    assert ok.result.as_text() == "still here"


async def test_cancelling_the_call_returns_at_once_and_cancels_it_on_the_server(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with fault(tmp_path) as server:
            hang = await tool(server, "hang")
            started = anyio.Event()

            async def progress(_: Any) -> None:
                started.set()

            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:

                    async def cancel_once_started() -> None:
                        await started.wait()  # the tool runs on the server: it reported progress
                        scope.cancel()

                    tg.start_soon(cancel_once_started)
                    await server.call_tool(hang.original_name, {}, progress=progress)
            assert scope.cancelled_caught

            async def marked() -> bool:
                return (tmp_path / "cancelled").exists()

            await wait_until(marked)
            ok = await call_tool(await tool(server, "echo"), {"text": "after cancel"})
    assert ok.result.as_text() == "after cancel"


async def test_garbage_on_stdout_is_tolerated(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="harness.mcp._stdio")
    with anyio.fail_after(30):
        async with fault(tmp_path, env={"FAULT_GARBAGE_START": "1"}) as server:
            out = await call_tool(await tool(server, "echo"), {"text": "fine"})
    assert out.result.as_text() == "fine"
    assert any("non-JSON-RPC" in r.getMessage() for r in caplog.records)


async def test_closing_ends_the_server_and_its_grandchildren(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with fault(tmp_path) as server:
            pid = int((await call_tool(await tool(server, "pid"), {})).result.as_text())
            child = int((await call_tool(await tool(server, "spawn_grandchild"), {})).result.as_text())
            assert alive(pid) and alive(child)

        async def reaped() -> bool:  # SIGKILLed; init may take a moment to reap it
            return not alive(child)

        await wait_until(reaped, 5)
    assert not alive(pid)
    assert server.status == ServerStatus.STOPPED


async def test_a_slow_server_does_not_block_the_manager_and_its_tools_appear_once_ready(
    tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"
    states: list[tuple[str, ServerStatus]] = []
    slow = fault(tmp_path, env={"FAULT_GATE": str(gate)})
    quick = McpServer.stdio("quick", PYTHON, [str(FAULT_SERVER)], env={"FAULT_MARKS": str(tmp_path)})
    with anyio.fail_after(60):
        async with McpManager(
            [slow, quick], on_status_change=lambda s: states.append((s.name, s.status))
        ) as mcp:
            with anyio.fail_after(30):
                await quick.wait_ready()
            await mcp.wait_ready(0.2)  # bounded: returns although `fault` is still starting
            assert mcp.status("fault") == ServerStatus.STARTING
            assert mcp.status("quick") == ServerStatus.READY
            names = [t.spec().name for t in await mcp.tools()]
            assert "mcp__quick__echo" in names and not any(n.startswith("mcp__fault__") for n in names)
            gate.write_text("open")
            states_now = await mcp.wait_ready(30)
            assert states_now["fault"].status == ServerStatus.READY
            names = [t.spec().name for t in await mcp.tools()]
            assert "mcp__fault__echo" in names and "mcp__quick__echo" in names
    assert ("fault", ServerStatus.READY) in states and ("quick", ServerStatus.STOPPED) in states


@MCP_SDK_SSE_LEAK
async def test_a_lost_http_session_is_an_error_result_and_the_server_reconnects(tmp_path: Path) -> None:
    port = child_port()
    url = f"http://127.0.0.1:{port}/mcp"

    async def start_http() -> Any:
        proc = await anyio.open_process(
            [PYTHON, str(FAULT_SERVER), "http", str(port)], env={**os.environ, "FAULT_MARKS": str(tmp_path)}
        )
        assert proc.stderr is not None
        seen = b""
        with anyio.fail_after(30):
            async for chunk in proc.stderr:  # uvicorn says when it listens
                seen += chunk
                if b"Uvicorn running" in seen or b"Application startup complete" in seen:
                    break
        return proc

    proc = await start_http()
    try:
        with anyio.fail_after(60):
            async with McpServer.http("web", url) as server:
                assert server.status == ServerStatus.READY
                first = await call_tool(await tool(server, "echo"), {"text": "one"})
                assert first.result.as_text() == "one"
                proc.kill()
                await proc.aclose()
                proc = await start_http()  # a new process: the old session id is unknown to it
                lost = await call_tool(await tool(server, "echo"), {"text": "two"})
                assert lost.result.error
                assert "`web`" in lost.result.as_text() and "HTTP session was lost" in lost.result.as_text()
                again = await call_tool(await tool(server, "echo"), {"text": "three"})
                assert again.result.as_text() == "three"
    finally:
        proc.kill()
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await proc.aclose()  # (wait() alone leaves the pipes to the garbage collector)
