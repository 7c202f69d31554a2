"""In-memory byte-stream pair and a scripted handler for protocol tests."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from acp_agent.protocol import Connection, RequestContext, RpcError
from acp_agent.protocol.models import PromptRequest

WAIT = 10.0


class MemoryByteReceive(ByteReceiveStream):
    def __init__(self, stream: MemoryObjectReceiveStream[bytes]) -> None:
        self._stream = stream

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return await self._stream.receive()

    async def aclose(self) -> None:
        await self._stream.aclose()


class MemoryByteSend(ByteSendStream):
    def __init__(self, stream: MemoryObjectSendStream[bytes]) -> None:
        self._stream = stream

    async def send(self, item: bytes) -> None:
        await self._stream.send(item)

    async def aclose(self) -> None:
        await self._stream.aclose()


class Client:
    """The test's side: writes raw lines, reads the agent's lines as JSON."""

    def __init__(self, to_agent: MemoryObjectSendStream[bytes], from_agent: MemoryObjectReceiveStream[bytes]):
        self._to_agent = to_agent
        self._from_agent = from_agent
        self._buffer = b""

    async def send_raw(self, data: bytes) -> None:
        await self._to_agent.send(data)

    async def send(self, obj: Any) -> None:
        await self.send_raw(json.dumps(obj).encode() + b"\n")

    async def request(self, request_id: Any, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def notify(self, method: str, params: Any = None) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def line(self) -> bytes:
        with anyio.fail_after(WAIT):
            while b"\n" not in self._buffer:
                self._buffer += await self._from_agent.receive()
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    async def message(self) -> Any:
        return json.loads(await self.line())

    async def remaining_lines(self) -> list[bytes]:
        """All further lines until the agent closes its output."""
        lines: list[bytes] = []
        with anyio.fail_after(WAIT):
            async for chunk in self._from_agent:
                self._buffer += chunk
        while self._buffer:
            line, _, self._buffer = self._buffer.partition(b"\n")
            lines.append(line)
        return lines

    async def close(self) -> None:
        await self._to_agent.aclose()


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
) -> AsyncGenerator[tuple[Client, Connection, ScriptedHandler]]:
    """A served Connection wired to a Client; on exit the client closes its output (EOF)."""
    handler = handler or ScriptedHandler()
    to_agent_send, to_agent_receive = anyio.create_memory_object_stream[bytes](math.inf)
    from_agent_send, from_agent_receive = anyio.create_memory_object_stream[bytes](math.inf)
    conn = Connection(
        MemoryByteReceive(to_agent_receive), MemoryByteSend(from_agent_send), handler, **options
    )
    handler.conn = conn
    client = Client(to_agent_send, from_agent_receive)
    async with anyio.create_task_group() as tg:

        async def serve() -> None:
            await conn.serve()
            await from_agent_send.aclose()

        tg.start_soon(serve)
        yield client, conn, handler
        await client.close()
