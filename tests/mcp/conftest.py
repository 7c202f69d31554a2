"""Fixtures of the MCP tests: paths to the test peers; a missing peer skips with the reason (fails in CI)."""

from __future__ import annotations

import importlib
import shutil
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest

from tests.conftest import missing

REPO = Path(__file__).resolve().parents[2]
FAULT_SERVER = Path(__file__).with_name("fault_server.py")
NPM = REPO / ".cache" / "npm" / "node_modules"
EVERYTHING = NPM / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
PYTHON = sys.executable

MCP_SDK_SSE_LEAK = pytest.mark.filterwarnings(
    "ignore:Async generator 'httpx2._sse.EventSource.__aiter__' was garbage collected:ResourceWarning",
    "ignore:Async generator 'httpx2._models.Response.aiter_text' was garbage collected:ResourceWarning",
    "ignore:Async generator 'httpx2._models.Response.aiter_bytes' was garbage collected:ResourceWarning",
)
"""The mcp SDK's Streamable HTTP client returns from ``async for sse in EventSource(...)`` when a lost session
ends the stream, leaving the SSE iterator chain to the garbage collector (a ResourceWarning on trio; the
response itself is closed). Third-party, so filtered for the tests that reach it, by name."""


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    """MCP tests run on both backends: the SDK client and our stdio transport are anyio-only."""
    return str(request.param)


def require_everything() -> Path:
    if shutil.which("node") is None:
        missing("node is not installed: server-everything tests need it")
    if not EVERYTHING.exists():
        missing(f"{EVERYTHING} is absent: run .ci/npm-peers.sh to install the npm test peers")
    return EVERYTHING


def require_time_server() -> None:
    try:
        importlib.import_module("mcp_server_time")  # untyped, and absent where it is not installed
    except ImportError:
        missing("mcp-server-time is not installed (pip install mcp-server-time)")


async def wait_until(predicate: Callable[[], Awaitable[bool]], timeout: float = 10.0) -> None:
    """Wait for state outside this process (another process's file, a process reaped by init), bounded.
    Polled because there is no event to wait on; the deadline fails the test, nothing is timed."""
    with anyio.fail_after(timeout):
        while not await predicate():  # noqa: ASYNC110
            await anyio.sleep(0.05)
