"""Session titles: the first prompt cut short, then the model's (after the first exchange, off the turn's
path), or the user's (``session/set_title``), which the agent never replaces."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.protocol.jsonvalue import as_object
from acp_agent.session import SessionEnvironment, SessionSetup
from harness import Model
from harness.model import Delta, Prompt, TextChunk
from harness.testing import FakeModel, Reply
from tests.acp.session._support import running_agent
from tests.acp_client import AcpClient

pytestmark = pytest.mark.anyio


def _factory(titler: FakeModel) -> Any:
    async def title_model() -> Model:
        return titler

    async def factory(env: SessionEnvironment) -> SessionSetup:
        return SessionSetup(title_model=title_model)

    return factory


def _titles(client: AcpClient, sid: str) -> list[str]:
    return [u["title"] for u in client.updates(sid) if u["sessionUpdate"] == "session_info_update"]


def _is_title(title: str) -> Callable[[Any], bool]:
    def check(message: Any) -> bool:
        m = as_object(message)
        update = as_object(as_object(m.get("params")).get("update"))
        return m.get("method") == "session/update" and update.get("title") == title

    return check


async def test_after_the_first_exchange_the_model_writes_the_title(tmp_path: Path) -> None:
    titler = FakeModel([], title=Reply(text='"Fixing the parser bug."\nmore text'))
    model = FakeModel([Reply(text="The parser is fixed."), Reply(text="again")])
    async with running_agent(tmp_path, model, factory=_factory(titler)) as (client, _agent, _tg):
        init = await client.initialize()
        assert init["agentCapabilities"]["sessionCapabilities"]["title"] == {}
        sid = await client.new_session(str(tmp_path))
        await client.call(
            "session/prompt", client.prompt_params(sid, "please fix the parser, it breaks on tabs")
        )
        await client.wait_for(_is_title("Fixing the parser bug"))
        asked = titler.title_prompts[0]
        assert (
            "please fix the parser" in asked.messages[0].text
            and "The parser is fixed." in asked.messages[0].text
        )
        assert asked.tools == () and asked.system is not None and "title" in asked.system
        listed = await client.call("session/list", {})
        assert listed["sessions"][0]["title"] == "Fixing the parser bug"
        await client.call("session/prompt", client.prompt_params(sid, "and now?"))
        assert len(titler.title_prompts) == 1 and titler.calls == 0  # once a session, no scripted reply
        assert _titles(client, sid) == ["please fix the parser, it breaks on tabs", "Fixing the parser bug"]
        assert client.schema_problems(unstable=True) == []


async def test_a_title_the_user_set_is_never_replaced(tmp_path: Path) -> None:
    titler = FakeModel([])  # asked nothing: the user named the session
    model = FakeModel([Reply(text="ok"), Reply(text="ok again")])
    async with running_agent(tmp_path, model, factory=_factory(titler)) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        assert await client.call("session/set_title", {"sessionId": sid, "title": "  My   session "}) == {
            "title": "My session"
        }
        await client.call("session/prompt", client.prompt_params(sid, "first prompt"))
        await client.call("session/prompt", client.prompt_params(sid, "second prompt"))
        assert _titles(client, sid) == ["My session"]
        assert titler.title_prompts == [] and titler.calls == 0
        await client.call("session/close", {"sessionId": sid})
        await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        assert _titles(client, sid)[-1] == "My session"  # kept on disk, replayed
        assert client.schema_problems(unstable=True) == []


async def test_a_saved_session_can_be_renamed_and_bad_titles_are_refused(tmp_path: Path) -> None:
    async with running_agent(tmp_path, FakeModel([Reply(text="ok")])) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        await client.call("session/prompt", client.prompt_params(sid, "hello there"))
        await client.call("session/close", {"sessionId": sid})
        await client.call("session/set_title", {"sessionId": sid, "title": "Renamed while closed"})
        listed = await client.call("session/list", {})
        assert listed["sessions"][0]["title"] == "Renamed while closed"
        for params, code in [
            ({"sessionId": sid, "title": "   "}, -32602),
            ({"sessionId": sid, "title": "x" * 201}, -32602),
            ({"sessionId": sid}, -32602),
            ({"sessionId": "sess_unknown", "title": "t"}, -32002),
        ]:
            answer = await client.response(await client.send_request("session/set_title", params))
            assert answer["error"]["code"] == code, (params, answer)


class HangingTitler:
    """A title model that never answers: it says when it was asked and when it was cancelled."""

    def __init__(self) -> None:
        self.asked = anyio.Event()
        self.cancelled = anyio.Event()

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        return self._stream()

    async def _stream(self) -> AsyncIterator[Delta]:
        self.asked.set()
        try:
            await anyio.Event().wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled.set()
            raise
        yield TextChunk("never")


async def test_a_slow_title_never_holds_up_a_turn_and_closing_the_session_cancels_it(tmp_path: Path) -> None:
    titler = HangingTitler()

    async def factory(env: SessionEnvironment) -> SessionSetup:
        async def title_model() -> Model:
            return titler

        return SessionSetup(title_model=title_model)

    model = FakeModel([Reply(text="first answer"), Reply(text="second answer")])
    async with running_agent(tmp_path, model, factory=factory) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        await client.call("session/prompt", client.prompt_params(sid, "first prompt"))
        with anyio.fail_after(10):
            await titler.asked.wait()
            answer = await client.call("session/prompt", client.prompt_params(sid, "second prompt"))
            assert answer["stopReason"] == "end_turn"  # while the title request still waits
            assert not titler.cancelled.is_set()
            await client.call("session/close", {"sessionId": sid})
            await titler.cancelled.wait()
        assert _titles(client, sid) == ["first prompt"]
