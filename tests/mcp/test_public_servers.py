"""``McpServer`` against the public servers: mcp-server-time (PyPI) and server-everything (npm, stdio + HTTP)."""

from __future__ import annotations

import os
from typing import Any

import anyio
import pytest

from harness.mcp import McpManager, McpServer, ServerStatus
from harness.testing import call_tool
from tests._ports import child_port
from tests.mcp.conftest import MCP_SDK_SSE_LEAK, PYTHON, require_everything, require_time_server

pytestmark = [pytest.mark.anyio, pytest.mark.process]  # the public servers run as processes


async def test_time_server_lists_its_tools_with_hints_and_answers_a_call() -> None:
    require_time_server()
    with anyio.fail_after(60):
        async with McpServer.stdio("time", PYTHON, ["-m", "mcp_server_time"]) as server:
            assert server.status == ServerStatus.READY, server.state.cause
            tools = {t.spec().name: t for t in await server.tools()}
            assert set(tools) == {"mcp__time__get_current_time", "mcp__time__convert_time"}
            now = tools["mcp__time__get_current_time"]
            assert now.spec().hints.read_only
            out = await call_tool(now, {"timezone": "Europe/Paris"})
    assert not out.result.error
    assert out.result.value["timezone"] == "Europe/Paris"


async def test_time_server_invalid_input_is_refused_before_the_call() -> None:
    require_time_server()
    with anyio.fail_after(60):
        async with McpServer.stdio("time", PYTHON, ["-m", "mcp_server_time"]) as server:
            now = next(t for t in await server.tools() if t.original_name == "get_current_time")
            out = await call_tool(now, {})
    assert out.result.error and "timezone" in out.result.as_text()


async def test_everything_over_stdio_echoes_reports_progress_and_returns_images() -> None:
    everything = require_everything()
    with anyio.fail_after(60):
        async with McpServer.stdio("everything", "node", [str(everything), "stdio"]) as server:
            assert server.status == ServerStatus.READY, server.state.cause
            tools = {t.original_name: t for t in await server.tools()}
            # Sampling is not offered, so the server does not register its sampling tool.
            assert "trigger-sampling-request" not in tools
            assert "$schema" in tools["echo"].spec().schema  # draft-07 schemas pass through
            echo = await call_tool(tools["echo"], {"message": "hi"})
            assert "hi" in echo.result.as_text()
            long = await call_tool(tools["trigger-long-running-operation"], {"duration": 0.3, "steps": 3})
            assert [p["progress"] for p in long.progress] == [1.0, 2.0, 3.0]
            image = await call_tool(tools["get-tiny-image"], {})
            assert any(getattr(p, "media_type", None) == "image/png" for p in image.result.content)
            structured = await call_tool(tools["get-structured-content"], {"location": "Chicago"})
            assert isinstance(structured.result.value, dict)


@MCP_SDK_SSE_LEAK  # the SDK's Streamable HTTP client, on trio (see its docstring)
async def test_everything_over_streamable_http_on_loopback() -> None:
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
        with anyio.fail_after(60):
            async with McpManager([McpServer.http("ev", f"http://127.0.0.1:{port}/mcp")]) as mcp:
                states = await mcp.wait_ready(30)
                assert states["ev"].status == ServerStatus.READY, states["ev"].cause
                tools: dict[str, Any] = {t.spec().name: t for t in await mcp.tools()}
                out = await call_tool(tools["mcp__ev__get-sum"], {"a": 2, "b": 3})
                assert "5" in out.result.as_text()
    finally:
        proc.kill()
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await proc.aclose()  # (wait() alone leaves the pipes to the garbage collector)
