"""A ``session/new`` answered before the agent started (``acp_agent._early``): the session is built under the
answered id before later requests are served, what it says differently is sent as updates, and a session
that cannot be built says why on its first prompt."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent._early import EarlyOpened, record_session
from acp_agent.session import SessionEnvironment, SessionSetup
from acp_agent.session._setup import CommandOutcome
from harness import Model
from tests.acp.session._support import running_agent

pytestmark = pytest.mark.anyio

MODES = {"currentModeId": "plan", "availableModes": [{"id": "plan", "name": "Plan", "description": "p"}]}
OPTIONS = [{"type": "boolean", "id": "web_tools", "name": "Web tools", "currentValue": False}]


class _Controls:
    """The controls a factory built: mode ``plan`` and one option, whatever the early answer said."""

    def bind(self, session: Any) -> None:
        pass

    def modes(self) -> dict[str, Any]:
        return MODES

    def config_options(self) -> list[dict[str, Any]]:
        return OPTIONS

    async def set_mode(self, mode_id: str) -> None:
        pass

    async def set_config_option(self, config_id: str, value: str | bool) -> list[dict[str, Any]]:
        return OPTIONS

    async def opened(self) -> None:
        pass

    async def client_followed_up(self) -> None:
        pass

    async def turn_starting(self) -> None:
        pass

    async def command(self, text: str) -> CommandOutcome | None:
        return None

    async def model(self, default: Callable[[], Any]) -> Model:
        return await default()


async def _controlled(env: SessionEnvironment) -> SessionSetup:
    return SessionSetup(controls=_Controls())


async def _broken(env: SessionEnvironment) -> SessionSetup:
    raise RuntimeError("the toolchain folder is gone")


def _opened(cwd: Path, state: dict[str, Any]) -> EarlyOpened:
    return EarlyOpened(2, {"cwd": str(cwd), "mcpServers": []}, "sess_early0000", state)


async def test_what_the_built_session_says_differently_from_the_early_answer_is_sent_as_updates(
    tmp_path: Path,
) -> None:
    said: dict[str, Any] = {"modes": {**MODES, "currentModeId": "default"}, "configOptions": []}
    async with running_agent(tmp_path, factory=_controlled, early=_opened(tmp_path, said)) as (
        client,
        agent,
        _,
    ):
        await client.initialize()
        with anyio.fail_after(10):
            await client.wait_for(
                lambda m: (
                    m.get("method") == "session/update"
                    and m["params"]["update"]["sessionUpdate"] == "config_option_update"
                )
            )
        updates = client.updates("sess_early0000")
        assert {"sessionUpdate": "current_mode_update", "currentModeId": "plan"} in updates
        options = next(u for u in updates if u["sessionUpdate"] == "config_option_update")
        assert options["configOptions"] == OPTIONS
        assert "sess_early0000" in agent.sessions
        assert (tmp_path / "sessions" / "sess_early0000").is_dir()  # its meta is written: load finds it


async def test_an_early_answer_the_built_session_agrees_with_sends_nothing_more(tmp_path: Path) -> None:
    said = {"modes": MODES, "configOptions": OPTIONS}
    async with running_agent(tmp_path, factory=_controlled, early=_opened(tmp_path, said)) as (
        client,
        agent,
        _,
    ):
        await client.initialize()  # served only once the session is built
        assert "sess_early0000" in agent.sessions
        listed = await client.call("session/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == ["sess_early0000"]
        assert client.updates("sess_early0000") == []


async def test_a_session_answered_early_that_cannot_be_built_says_why_on_its_first_prompt(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path, factory=_broken, early=_opened(tmp_path, {})) as (client, _agent, _):
        await client.initialize()
        answer = await client.response(
            await client.send_request("session/prompt", client.prompt_params("sess_early0000", "hi"))
        )
        assert answer["error"]["code"] == -32603
        assert "could not be set up: the toolchain folder is gone" in answer["error"]["message"]


async def test_end_of_input_cuts_the_early_sessions_build_short_and_the_session_stays_loadable(
    tmp_path: Path,
) -> None:
    started = anyio.Event()

    async def slow(env: SessionEnvironment) -> SessionSetup:
        started.set()
        await anyio.sleep_forever()  # a set-up nobody waits for once the editor closed the thread
        raise AssertionError("unreachable")

    params: dict[str, Any] = {
        "cwd": str(tmp_path),
        "mcpServers": [],
        "additionalDirectories": [str(tmp_path)],
    }
    assert record_session(tmp_path / "sessions", "sess_early0000", params)  # as the early answer does
    opened = EarlyOpened(2, params, "sess_early0000", {})
    with anyio.fail_after(5):  # (the build never ends by itself: only the end of input ends it)
        async with running_agent(tmp_path, factory=slow, early=opened) as (client, _agent, _tg):
            await started.wait()
    meta = json.loads((tmp_path / "sessions" / "sess_early0000" / "meta.json").read_text(encoding="utf-8"))
    assert meta["cwd"] == str(tmp_path) and meta["additionalDirectories"] == [str(tmp_path)]
    async with running_agent(tmp_path, factory=_controlled) as (client, _agent, _tg):
        await client.initialize()
        loaded = await client.call(
            "session/load", {"sessionId": "sess_early0000", "cwd": str(tmp_path), "mcpServers": []}
        )
        assert loaded["modes"] == MODES
