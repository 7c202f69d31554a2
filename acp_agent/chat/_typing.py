"""Typing while the agent works: during a turn the chat keeps reading lines. Enter sends the line as a
prompt of its own, which the agent queues and runs when the current turn ends (each turn's answer shows as
it comes); ``/steer <text>`` slips the text into the running turn instead (``_session/steering``: the agent
reads it after its current step). A permission question takes the input while it is asked."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from ..protocol.errors import RpcError
from ._render import as_obj

if TYPE_CHECKING:
    from ._app import ChatApp

__all__ = ["STEER", "steer", "turns_typing_ahead"]

STEER = "/steer "


async def turns_typing_ahead(app: ChatApp, text: str) -> None:
    """Run the turn of ``text`` and those typed meanwhile; returns when the last has ended."""
    async with anyio.create_task_group() as tg:
        reading = anyio.CancelScope()

        async def one(text: str) -> None:
            await app.turn(text)
            if not app.turns:
                reading.cancel()  # the last turn ended: back to the prompt

        tg.start_soon(one, text)
        with reading:
            while True:
                await app.no_question.wait()  # a question being asked reads the next line itself
                line: str | None = ""  # stays empty when a permission question took the input
                app.typing_stopped = anyio.Event()
                with anyio.CancelScope() as app.typing:
                    line = await app.reader.readline()
                app.typing = None
                app.typing_stopped.set()  # the question may read now: one reader at a time
                if line is None:
                    break  # end of input: the turns still end and answer
                typed = line.strip()
                if typed.startswith(STEER):
                    await steer(app, typed.removeprefix(STEER).strip())
                elif typed.startswith("/") and not app.is_agent_command(typed):
                    app.renderer.notice("(that command waits for the turn to end: type it again then)")
                elif typed:
                    app.renderer.notice("(queued: it runs when the current turn ends)")
                    tg.start_soon(one, typed)


async def steer(app: ChatApp, text: str) -> None:
    """``_session/steering`` of ``text`` into the running turn."""
    assert app.conn is not None
    params = {"sessionId": app.session_id, "prompt": [{"type": "text", "text": text}]}
    try:
        answer = as_obj(await app.conn.request("_session/steering", params))
    except RpcError as exc:
        app.renderer.error(f"error: {exc.message}")
        return
    if answer.get("outcome") == "injected":
        app.renderer.notice("(sent: the agent reads it after its current step)")
