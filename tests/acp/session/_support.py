"""An in-memory ACP test client wired to an ``AcpAgent`` served over memory streams."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from acp_agent.models import ModelSettings
from acp_agent.session import AcpAgent, SessionFactory, default_factory, serve
from harness import Model


class TestClient:
    """Sends requests and notifications; records every message the agent writes, in order."""

    __test__ = False

    def __init__(
        self, send: MemoryObjectSendStream[bytes], receive: MemoryObjectReceiveStream[bytes]
    ) -> None:
        self._send = send
        self._receive = receive
        self.messages: list[dict[str, Any]] = []
        self._changed = anyio.Event()
        self._next_id = 1
        self.closed = False

    async def read_loop(self) -> None:
        buffer = b""
        async for chunk in self._receive:
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                self.messages.append(json.loads(line))
                self._changed.set()
                self._changed = anyio.Event()
        self.closed = True
        self._changed.set()

    async def write(self, message: dict[str, Any]) -> None:
        await self._send.send(json.dumps(message).encode() + b"\n")

    async def send_request(self, method: str, params: Any = None) -> int:
        request_id = self._next_id
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.write(message)
        return request_id

    async def notify(self, method: str, params: Any = None) -> None:
        await self.write({"jsonrpc": "2.0", "method": method, "params": params})

    async def wait_for(self, predicate: Any) -> dict[str, Any]:
        with anyio.fail_after(10):
            seen = 0
            while True:
                for message in self.messages[seen:]:
                    if predicate(message):
                        return message
                seen = len(self.messages)
                if self.closed:
                    raise AssertionError("the agent closed its output")
                await self._changed.wait()

    async def response(self, request_id: int) -> dict[str, Any]:
        return await self.wait_for(lambda m: m.get("id") == request_id and "method" not in m)

    async def call(self, method: str, params: Any = None) -> Any:
        """Request and return the result; an error response raises AssertionError."""
        answer = await self.response(await self.send_request(method, params))
        assert "result" in answer, answer
        return answer["result"]

    def index_of(self, request_id: int) -> int:
        return next(i for i, m in enumerate(self.messages) if m.get("id") == request_id and "method" not in m)

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        return [
            m["params"]["update"]
            for m in self.messages
            if m.get("method") == "session/update"
            and (session_id is None or m["params"]["sessionId"] == session_id)
        ]

    async def initialize(self) -> dict[str, Any]:
        return await self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})

    async def new_session(self, cwd: str, **extra: Any) -> str:
        result = await self.call("session/new", {"cwd": cwd, "mcpServers": [], **extra})
        return str(result["sessionId"])

    def prompt_params(self, session_id: str, text: str) -> dict[str, Any]:
        return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}

    async def close_output(self) -> None:
        await self._send.aclose()


@asynccontextmanager
async def running_agent(
    home: Path,
    model: Model | None = None,
    *,
    factory: SessionFactory = default_factory,
    settings: ModelSettings | None = None,
) -> AsyncIterator[tuple[TestClient, AcpAgent, TaskGroup]]:
    """An agent served over memory streams, and a client reading its output."""
    to_agent_send, to_agent_receive = anyio.create_memory_object_stream[bytes](1000)
    from_agent_send, from_agent_receive = anyio.create_memory_object_stream[bytes](1000)
    agent = AcpAgent(home=home, settings=settings or ModelSettings(None), factory=factory, model=model)
    client = TestClient(to_agent_send, from_agent_receive)
    async with anyio.create_task_group() as tg:
        tg.start_soon(client.read_loop)

        async def run_agent() -> None:
            async with from_agent_send:
                await serve(
                    cast(ByteReceiveStream, to_agent_receive),
                    cast(ByteSendStream, from_agent_send),
                    agent,
                    shutdown_grace=5,
                )

        tg.start_soon(run_agent)
        try:
            yield client, agent, tg
        finally:
            await client.close_output()


def transcript_lines(home: Path, session_id: str) -> list[dict[str, Any]]:
    path = home / "sessions" / session_id / "messages.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def kinds(updates: Sequence[dict[str, Any]]) -> list[str]:
    return [u["sessionUpdate"] for u in updates]
