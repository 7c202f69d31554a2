"""The one ACP test client, and the byte pipes that connect it to an agent in memory or in a real process.

``AcpClient`` writes JSON-RPC lines to the agent and records every line the agent writes, in order, as
bytes (``lines``) and decoded (``messages``). Read them in order (``line``, ``message``,
``remaining_lines``: the wire as the agent wrote it) or by content (``wait_for``, ``response``, ``updates``).
Its ``read_loop`` runs in the test's task group; every wait is bounded by ``WAIT``.

``memory_pipe()`` gives the two ends of an in-memory byte stream; ``spawned_agent(...)`` starts the real
``python -m acp_agent`` and yields a client over its stdin and stdout.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from acp_agent.protocol.jsonvalue import as_object
from acp_conformance.validate import id_key

__all__ = ["WAIT", "AcpClient", "BytePipe", "RecordedBytes", "RpcFailure", "memory_pipe", "spawned_agent"]

WAIT: Final = 10.0
"""Seconds any single wait of a test may take."""

REPO = Path(__file__).resolve().parents[1]
_AUTO: Final = object()


class _MemoryReceive(ByteReceiveStream):
    def __init__(self, stream: MemoryObjectReceiveStream[bytes]) -> None:
        self._stream = stream

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return await self._stream.receive()

    async def aclose(self) -> None:
        self._stream.close()

    def close(self) -> None:
        self._stream.close()


class _MemorySend(ByteSendStream):
    def __init__(self, stream: MemoryObjectSendStream[bytes]) -> None:
        self._stream = stream

    async def send(self, item: bytes) -> None:
        await self._stream.send(item)

    async def aclose(self) -> None:
        self._stream.close()

    def close(self) -> None:
        self._stream.close()


@dataclass(frozen=True, slots=True)
class BytePipe:
    """One direction of an in-memory connection: what is sent on ``send`` is received on ``receive``.
    ``close()`` both ends when the test is done with it (an unclosed stream is a ResourceWarning)."""

    send: _MemorySend
    receive: _MemoryReceive

    def close(self) -> None:
        self.send.close()
        self.receive.close()


class RecordedBytes(ByteSendStream):
    """A send stream that keeps what it is sent (``data``): an output for a test to read afterwards."""

    def __init__(self) -> None:
        self.data = bytearray()

    async def send(self, item: bytes) -> None:
        self.data += item

    async def aclose(self) -> None:
        pass


def memory_pipe(buffer: float = math.inf) -> BytePipe:
    send, receive = anyio.create_memory_object_stream[bytes](buffer)
    return BytePipe(_MemorySend(send), _MemoryReceive(receive))


class RpcFailure(Exception):
    """Raised by an ``on_request`` handler: the agent's request is answered with this error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class AcpClient:
    """The test's side of an ACP connection (see the module docstring)."""

    __test__ = False

    def __init__(
        self,
        send: ByteSendStream,
        receive: ByteReceiveStream,
        on_request: Callable[[str, Any], Awaitable[Any]] | None = None,
    ) -> None:
        self._send = send
        self._receive = receive
        self.lines: list[bytes] = []
        self.messages: list[Any] = []
        """Every line the agent wrote, decoded (a batch answer is a list)."""
        self.closed = False
        self._changed = anyio.Event()
        self._read = 0
        self._next_id = 1
        self.sent: dict[Any, str] = {}
        """The method of each request this client sent, by ``id_key`` of its id."""
        self.on_request = on_request
        """Answers the agent's requests (its result, or an ``RpcFailure``); None: they go unanswered."""

    async def read_loop(self) -> None:
        """Record the agent's lines until it closes its output (answering its requests with
        ``on_request``, each in a task of its own)."""
        buffer = b""
        async with anyio.create_task_group() as tg:
            async for chunk in self._receive:
                *complete, buffer = (buffer + chunk).split(b"\n")
                for line in complete:
                    self.record(line)
                    self._maybe_answer(tg, self.messages[-1])
            if buffer:
                self.record(buffer)
            self.closed = True
            self._wake()
            tg.cancel_scope.cancel()

    def _maybe_answer(self, tg: TaskGroup, message: Any) -> None:
        m = as_object(message)
        if self.on_request is not None and "method" in m and "id" in m:
            tg.start_soon(self._answer_request, m)

    async def _answer_request(self, message: dict[str, Any]) -> None:
        assert self.on_request is not None
        try:
            reply: dict[str, Any] = {
                "result": await self.on_request(message["method"], message.get("params"))
            }
        except RpcFailure as exc:
            reply = {"error": {"code": exc.code, "message": str(exc)}}
        try:
            await self.write({"jsonrpc": "2.0", "id": message["id"], **reply})
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    def record(self, line: bytes) -> None:
        self.lines.append(line)
        self.messages.append(json.loads(line))
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    # --- writing ---------------------------------------------------------------------------------

    async def send_raw(self, data: bytes) -> None:
        await self._send.send(data)

    async def write(self, message: Any) -> None:
        await self.send_raw(json.dumps(message).encode() + b"\n")

    async def send_request(self, method: str, params: Any = None, *, request_id: Any = _AUTO) -> Any:
        """Send a request; returns its id (the next integer unless ``request_id`` is given, ``None`` too)."""
        if request_id is _AUTO:
            request_id = self._next_id
            self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.sent[id_key(request_id)] = method
        await self.write(message)
        return request_id

    def schema_problems(self, *, unstable: bool = False) -> list[str]:
        """What the ACP v1 schema (``unstable``: the unstable one) finds wrong in the agent's messages so far
        (the kit's validator: envelopes, params, and the results of this client's requests)."""
        from acp_conformance.validate import MessageValidator

        validator = MessageValidator(unstable=unstable)
        return [p for m in self.messages for p in validator.check(m, self.sent)]

    async def notify(self, method: str, params: Any = None) -> None:
        await self.write({"jsonrpc": "2.0", "method": method, "params": params})

    async def call(self, method: str, params: Any = None, *, wait: float = WAIT) -> Any:
        """Request and return the result; an error response raises AssertionError. ``wait`` bounds the wait
        for the answer (longer for a request that waits on a process the agent spawns, an MCP server)."""
        answer = await self.response(await self.send_request(method, params), wait=wait)
        assert "result" in answer, answer
        return answer["result"]

    async def close_output(self) -> None:
        """End of input for the agent."""
        await self._send.aclose()

    # --- reading in order ------------------------------------------------------------------------

    async def line(self) -> bytes:
        """The next line not read yet by ``line``/``message``, as the agent wrote it."""
        with anyio.fail_after(WAIT):
            while self._read >= len(self.lines):
                if self.closed:
                    raise AssertionError("the agent closed its output")
                await self._changed.wait()
        self._read += 1
        return self.lines[self._read - 1]

    async def message(self) -> Any:
        return json.loads(await self.line())

    async def remaining_lines(self) -> list[bytes]:
        """The lines not read yet, once the agent closed its output."""
        with anyio.fail_after(WAIT):
            while not self.closed:
                await self._changed.wait()
        rest, self._read = self.lines[self._read :], len(self.lines)
        return rest

    # --- reading by content ----------------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[Any], bool], *, wait: float = WAIT) -> Any:
        """The first message (from the start) that ``predicate`` accepts; waits for it (``wait`` s at most)."""
        with anyio.fail_after(wait):
            seen = 0
            while True:
                for message in self.messages[seen:]:
                    if predicate(message):
                        return message
                seen = len(self.messages)
                if self.closed:
                    raise AssertionError("the agent closed its output")
                await self._changed.wait()

    async def response(self, request_id: Any, *, wait: float = WAIT) -> dict[str, Any]:
        return await self.wait_for(lambda m: _is_response(m, request_id), wait=wait)

    def index_of(self, request_id: Any) -> int:
        return next(i for i, m in enumerate(self.messages) if _is_response(m, request_id))

    def updates(self, session_id: str | None = None) -> list[dict[str, Any]]:
        return [
            m["params"]["update"]
            for m in map(as_object, self.messages)
            if m.get("method") == "session/update"
            and (session_id is None or m["params"]["sessionId"] == session_id)
        ]

    # --- ACP -------------------------------------------------------------------------------------

    async def initialize(self, capabilities: Mapping[str, Any] | None = None) -> dict[str, Any]:
        params = {"protocolVersion": 1, "clientCapabilities": dict(capabilities or {})}
        return await self.call("initialize", params)

    async def new_session(self, cwd: str, **extra: Any) -> str:
        result = await self.call("session/new", {"cwd": cwd, "mcpServers": [], **extra})
        return str(result["sessionId"])

    def prompt_params(self, session_id: str, text: str) -> dict[str, Any]:
        return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


def _stderr_file(home: Path) -> BinaryIO:
    home.mkdir(parents=True, exist_ok=True)
    return (home / "agent-stderr.log").open("wb")


def _is_response(message: Any, request_id: Any) -> bool:
    m = as_object(message)  # a batch answer (a list) is no response
    return bool(m) and "method" not in m and m.get("id") == request_id


@asynccontextmanager
async def spawned_agent(
    home: Path,
    cwd: Path,
    environ: Mapping[str, str] | None = None,
    on_request: Callable[[str, Any], Awaitable[Any]] | None = None,
) -> AsyncGenerator[AcpClient]:
    """The real ``python -m acp_agent`` (``ACP_AGENT_HOME`` = ``home``, run in ``cwd``; its stderr in
    ``home/agent-stderr.log``) and a client over its pipes. On exit its input ends and it must exit by
    itself, with status 0."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "ACP_AGENT_HOME": str(home),
        "ACP_AGENT_LOG": "-",
        **(environ or {}),
    }
    stderr = _stderr_file(home)
    async with await anyio.open_process(
        [sys.executable, "-m", "acp_agent"], cwd=cwd, env=env, stderr=stderr
    ) as process:
        stderr.close()
        assert process.stdin is not None and process.stdout is not None
        client = AcpClient(process.stdin, process.stdout, on_request)
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.read_loop)
            try:
                yield client
            finally:
                await client.close_output()
        with anyio.fail_after(WAIT):
            assert await process.wait() == 0
