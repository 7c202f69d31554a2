"""A scripted handler for protocol tests, served by a ``Connection`` over memory pipes to the shared
``AcpClient``."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from acp_agent.protocol import Connection, RequestContext, RpcError
from acp_agent.protocol.models import PromptRequest
from tests.acp_client import WAIT, AcpClient, memory_pipe

__all__ = ["WAIT", "AcpClient", "ScriptedHandler", "agent_connection"]


class ScriptedHandler:
    """Methods: `echo`, `slow` (waits for `release`), `fail`, `rpc_fail`, `prompt` (validates a
    PromptRequest), `ask` (asks the client `client/ask` and returns its answer), `graceful` (registers
    a cancel callback and answers `{"cancelled": true}` when cancelled). Anything else: -32601."""

    def __init__(self) -> None:
        self.conn: Connection | None = None
        self.release = anyio.Event()
        self.slow_started = anyio.Event()
        self.graceful_started = anyio.Event()
        self.notifications: list[tuple[str, Any]] = []
        self.cancelled_contexts: list[Any] = []
        self.finished: list[Any] = []

    async def handle_request(self, method: str, params: Any, ctx: RequestContext) -> Any:
        match method:
            case "echo":
                return {"params": params, "notificationsSeen": len(self.notifications)}
            case "slow":
                self.slow_started.set()
                try:
                    await self.release.wait()
                except anyio.get_cancelled_exc_class():
                    self.cancelled_contexts.append(ctx.request_id)
                    raise
                self.finished.append(ctx.request_id)
                return {"slow": True}
            case "graceful":
                done = anyio.Event()
                ctx.on_cancel_request(done.set)
                self.graceful_started.set()
                await done.wait()
                return {"cancelled": ctx.cancel_requested}
            case "fail":
                raise ValueError("secret detail /etc/passwd")
            case "rpc_fail":
                raise RpcError.not_found("no such session", uri="sess_x")
            case "prompt":
                request = PromptRequest.model_validate(params)
                return {"blocks": len(request.prompt)}
            case "ask":
                assert self.conn is not None
                return {"answer": await self.conn.request("client/ask", {"q": 1})}
            case "none":
                return None
            case _:
                raise RpcError.method_not_found(method)

    async def handle_notification(self, method: str, params: Any) -> None:
        self.notifications.append((method, params))


@asynccontextmanager
async def agent_connection(
    handler: ScriptedHandler | None = None, **options: Any
) -> AsyncGenerator[tuple[AcpClient, Connection, ScriptedHandler]]:
    """A served Connection wired to a client; on exit the client closes its output (EOF)."""
    handler = handler or ScriptedHandler()
    to_agent, from_agent = memory_pipe(), memory_pipe()
    conn = Connection(to_agent.receive, from_agent.send, handler, **options)
    handler.conn = conn
    client = AcpClient(to_agent.send, from_agent.receive)
    try:
        async with anyio.create_task_group() as tg:

            async def serve() -> None:
                await conn.serve()
                await from_agent.send.aclose()

            tg.start_soon(serve)
            tg.start_soon(client.read_loop)
            yield client, conn, handler
            await client.close_output()
    finally:
        to_agent.close()
        from_agent.close()
