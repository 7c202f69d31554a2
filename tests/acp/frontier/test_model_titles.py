"""Model-written titles, on by default: after the first exchange one short request (the small model where
one is configured, else the session's) writes the title, off the turn's path, told by
``session_info_update``; ``titles = "prompt"`` (or ``ACP_AGENT_TITLES=prompt``) keeps the first prompt cut
short. The fake model answers the title request apart from the scripted turns (``FakeServer``'s
``TITLE_MARKERS``). Through the real process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.protocol.jsonvalue import as_object
from acp_conformance.fake_model import Turn
from acp_conformance.fake_model.server import TITLE_MARKERS
from harness.titles import TITLE_SYSTEM
from tests.acp.frontier._frontier_support import check_wire, frontier_agent

pytestmark = [pytest.mark.anyio, pytest.mark.process]

TURNS = [Turn(text="The parser now reads tabs."), Turn(text="Nothing else.")]
PROMPT = "please fix the parser, it breaks on tabs"


def _titles(client: Any, sid: str) -> list[str]:
    return [u["title"] for u in check_wire(client, sid) if u["sessionUpdate"] == "session_info_update"]


def _is_title(title: str) -> Any:
    def check(message: Any) -> bool:
        update = as_object(as_object(as_object(message).get("params")).get("update"))
        return update.get("sessionUpdate") == "session_info_update" and update.get("title") == title

    return check


def test_the_fakes_know_the_agents_title_request() -> None:
    assert all(marker.decode() in TITLE_SYSTEM for marker in TITLE_MARKERS)


async def test_by_default_the_small_model_writes_the_title_after_the_first_exchange(tmp_path: Path) -> None:
    environ = {"ACP_AGENT_SMALL_MODEL": "small-model"}
    async with frontier_agent(
        tmp_path, TURNS, {}, environ=environ, title='"Parser reads tabs."', side_models=["small-model"]
    ) as agent:
        client = agent.client
        with anyio.fail_after(30):
            sid = (await agent.new_session())["sessionId"]
            assert (await agent.prompt(sid, PROMPT))["stopReason"] == "end_turn"
            await client.wait_for(_is_title("Parser reads tabs"))
            listed = await client.call("session/list", {})
            assert listed["sessions"][0]["title"] == "Parser reads tabs"
            assert (await agent.prompt(sid, "anything else?"))["stopReason"] == "end_turn"
        assert _titles(client, sid) == [PROMPT, "Parser reads tabs"]
        (asked,) = agent.model.title_requests  # once a session, and no scripted turn taken
        body = asked.json
        assert body["model"] == "small-model" and "tools" not in body
        assert PROMPT in body["messages"][-1]["content"] and "reads tabs" in body["messages"][-1]["content"]
        assert len(agent.model.model_requests) == 2
        assert client.schema_problems(unstable=True) == []


async def test_titles_prompt_keeps_the_first_prompt_as_the_title(tmp_path: Path) -> None:
    environ = {"ACP_AGENT_TITLES": "prompt"}
    async with frontier_agent(tmp_path, TURNS, {}, environ=environ, title="Never used") as agent:
        with anyio.fail_after(30):
            sid = (await agent.new_session())["sessionId"]
            await agent.prompt(sid, PROMPT)
            await agent.prompt(sid, "anything else?")
        assert agent.model.title_requests == []
        assert _titles(agent.client, sid) == [PROMPT]


async def test_a_title_request_that_fails_leaves_the_prompts_title(tmp_path: Path) -> None:
    async with frontier_agent(tmp_path, TURNS, {}) as agent:  # the fake answers the title with nothing
        with anyio.fail_after(30):
            sid = (await agent.new_session())["sessionId"]
            await agent.prompt(sid, PROMPT)
            assert await anyio.to_thread.run_sync(agent.model.server.title_asked.wait, 20)
            await agent.prompt(sid, "anything else?")  # its empty answer was read meanwhile
        assert len(agent.model.title_requests) == 1
        assert _titles(agent.client, sid) == [PROMPT]
