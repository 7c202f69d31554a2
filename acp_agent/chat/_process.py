"""The chat's agent process: spawn it, speak ACP to it over its stdio, show its stderr, and stop it when
the conversation (``_app.ChatApp``) ends."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream, Process

from ..protocol.connection import Connection
from ._app import ChatApp, ChatOptions
from ._client import ChatClient
from ._input import LineReader, Lines
from .render import Renderer

__all__ = ["agent_command", "run_chat"]

_CLOSE_TIMEOUT: Final = 5.0


def agent_command(agent_args: Sequence[str]) -> list[str]:
    """The agent process: this interpreter running ``acp_agent`` with the chat's agent flags."""
    return [sys.executable, "-m", "acp_agent", *agent_args]


async def _pump_stderr(stream: ByteReceiveStream, renderer: Renderer) -> None:
    """The agent's stderr (its warnings and errors), shown dimmed so problems are visible."""
    reader = LineReader(stream)
    while (line := await reader.readline()) is not None:
        if line.strip():
            renderer.notice(f"agent: {line}")


async def run_chat(
    options: ChatOptions, reader: Lines, renderer: Renderer, prompt: Callable[[str], None]
) -> int:
    """Spawn the agent and converse until the user leaves or the agent exits; returns the exit code."""
    app = ChatApp(options, reader, renderer, prompt)
    try:
        process = await anyio.open_process(
            agent_command(options.agent_args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=options.cwd,
            env=options.env,
            start_new_session=True,  # the terminal's Ctrl-C is ours to interpret, not the agent's
        )
    except OSError as exc:
        renderer.error(f"cannot start the agent ({exc.strerror}); check that {sys.executable} still exists.")
        return 1
    try:
        return await _converse(app, process, renderer)
    finally:  # (after the task group: nothing reads its pipes any more)
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT):
            await process.aclose()  # its pipes too: ``wait()`` returns at the exit, before their end


async def _converse(app: ChatApp, process: Process, renderer: Renderer) -> int:
    """The conversation with the agent ``process`` over its stdio; its exit code."""
    code = 1
    async with anyio.create_task_group() as tg:
        await tg.start(app.watch_interrupts)
        assert process.stdout is not None and process.stdin is not None and process.stderr is not None
        tg.start_soon(_pump_stderr, process.stderr, renderer)
        conn = Connection(process.stdout, process.stdin, ChatClient(app), shutdown_grace=1.0)
        app.conn = conn

        async def serve() -> None:
            await conn.serve()
            app.agent_gone()

        tg.start_soon(serve)
        try:
            if await app.start():
                code = await app.repl()
        finally:
            with anyio.CancelScope(shield=True):
                conn.close()
                await _stop(process)
            tg.cancel_scope.cancel()
    return code


async def _stop(process: Process) -> None:
    """End input so the agent exits on its own; terminate, then kill, if it does not."""
    if process.stdin is not None:
        await process.stdin.aclose()
    with anyio.move_on_after(_CLOSE_TIMEOUT):
        await process.wait()
        return
    process.terminate()
    with anyio.move_on_after(2.0):
        await process.wait()
        return
    process.kill()
    await process.wait()
