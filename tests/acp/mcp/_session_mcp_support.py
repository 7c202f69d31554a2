"""Helpers of the session MCP tests: an environment, and a ``SessionMcp`` run in a test-owned task group.

No ``__init__.py`` here: with ``tests/acp`` not a package, this directory would be imported as the package
``mcp`` and shadow the SDK. Test modules import this one by its (unique) top-level name."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

from acp_agent.session._mcp import SessionMcp
from acp_agent.session._setup import SessionEnvironment


def make_env(tmp_path: Path, servers: Sequence[Mapping[str, Any]] = ()) -> SessionEnvironment:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    return SessionEnvironment(
        session_id="sess_test",
        cwd=project,
        additional_directories=(),
        mcp_servers=tuple(servers),
        client_capabilities={},
        connection=cast(Any, None),  # SessionMcp never talks to the client itself
        home=tmp_path / "home",
    )


@asynccontextmanager
async def running(
    env: SessionEnvironment,
    config: Sequence[Mapping[str, Any]] = (),
    on_change: Callable[[], Awaitable[None]] | None = None,
) -> AsyncGenerator[SessionMcp]:
    """A started ``SessionMcp`` whose owned task lives in this block's task group; closed on exit."""
    import anyio

    async with anyio.create_task_group() as tg:
        mcp = SessionMcp(env, config, on_change=on_change, spawn=tg.start_soon)
        await mcp.start()
        try:
            yield mcp
        finally:
            await mcp.aclose()
