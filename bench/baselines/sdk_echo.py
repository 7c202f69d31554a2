"""A minimal echo agent written with the official ACP Python SDK (agent-client-protocol): the baseline.

A prompt `stream N` answers with N agent_message_chunk updates; `wait` waits until cancelled; anything
else is echoed back in one chunk.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from acp import PROTOCOL_VERSION, run_agent, text_block, update_agent_message
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
)


class EchoAgent:
    def __init__(self) -> None:
        self._conn: Client | None = None
        self._cancel: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Client) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=PROTOCOL_VERSION, agent_capabilities=AgentCapabilities())

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        sid = uuid.uuid4().hex
        self._cancel[sid] = asyncio.Event()
        return NewSessionResponse(session_id=sid)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self._cancel.setdefault(session_id, asyncio.Event()).set()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        assert self._conn is not None
        text = "".join(getattr(b, "text", "") for b in prompt)
        cancel = self._cancel.setdefault(session_id, asyncio.Event())
        cancel.clear()
        if text.startswith("stream "):
            for _ in range(int(text.split()[1])):
                if cancel.is_set():
                    return PromptResponse(stop_reason="cancelled")
                await self._conn.session_update(session_id, update_agent_message(text_block("x")))
            return PromptResponse(stop_reason="end_turn")
        if text == "wait":
            await cancel.wait()
            return PromptResponse(stop_reason="cancelled")
        await self._conn.session_update(session_id, update_agent_message(text_block(text)))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(run_agent(EchoAgent()))  # type: ignore[arg-type]
