"""The floor of our stack for ``session/cancel`` mid-stream: what any agent on anyio (asyncio) and httpx2 pays.

It reads stdin as the agent does (a non-blocking fd and ``anyio.wait_readable``), streams each prompt from
``$ACP_AGENT_BASE_URL/chat/completions`` with one ``httpx2`` stream, sends one ``session/update`` per chunk
received, and on ``session/cancel`` cancels that stream and answers ``cancelled`` once it is closed. It writes
nothing to disk, keeps no history and runs no harness: the distance between it and the agent is the agent's
own work (the turn's unwinding, the durable write before the answer), not Python's, the pipes' or HTTP's.
"""

import json
import os
from typing import Any

import anyio
import httpx2


def _send(message: dict[str, Any]) -> None:
    os.write(1, (json.dumps(message) + "\n").encode())


def _answer(request_id: Any, result: dict[str, Any]) -> None:
    _send({"jsonrpc": "2.0", "id": request_id, "result": result})


_CHUNK = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}


async def main() -> None:
    base = os.environ["ACP_AGENT_BASE_URL"]
    os.set_blocking(0, False)
    streams: dict[str, anyio.CancelScope] = {}
    async with httpx2.AsyncClient(timeout=None) as client, anyio.create_task_group() as tg:

        async def prompt(request_id: Any, session_id: str) -> None:
            with anyio.CancelScope() as scope:
                streams[session_id] = scope
                body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "go"}]}
                async with client.stream("POST", base + "/chat/completions", json=body) as response:
                    async for _chunk in response.aiter_bytes():
                        update = {"sessionId": session_id, "update": _CHUNK}
                        _send({"jsonrpc": "2.0", "method": "session/update", "params": update})
            streams.pop(session_id, None)
            stop = "cancelled" if scope.cancel_called else "end_turn"
            _answer(request_id, {"stopReason": stop})

        pending = b""
        while True:
            try:
                data = os.read(0, 65536)
            except BlockingIOError:
                await anyio.wait_readable(0)
                continue
            if not data:
                break
            pending += data
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                message = json.loads(line)
                method, params = message.get("method"), message.get("params") or {}
                if method == "initialize":
                    _answer(message["id"], {"protocolVersion": 1, "agentCapabilities": {}})
                elif method == "session/new":
                    _answer(message["id"], {"sessionId": "floor"})
                elif method == "session/prompt":
                    tg.start_soon(prompt, message["id"], params["sessionId"])
                elif method == "session/cancel" and params.get("sessionId") in streams:
                    streams[params["sessionId"]].cancel()
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main)
