"""The part of a session's set-up done after the ``session/new`` answer (``acp_agent.coding._later``): a
prompt sent before it ended waits for it and is served with all of it; its failure is that prompt's error,
and the next prompt tries again. The real factory, an in-memory editor, a fake model; the set-up after the
answer is held (or failed) by wrapping ``ProjectContext.load_sync``, its blocking part."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.coding._factory import CodingFactory
from acp_agent.coding._later import Later
from acp_agent.coding._tools import explore_tool
from acp_agent.coding.context._context import ProjectContext
from acp_agent.protocol.jsonvalue import as_object
from acp_agent.session.plugin import SessionSetup
from harness import HarnessUsageError
from harness.testing import FakeModel, Reply
from tests.acp.coding._support import editor_agent, fake
from tests.acp_client import WAIT

pytestmark = pytest.mark.anyio

_real_load = ProjectContext.load_sync


def _project(tmp: Path) -> None:
    """A project with instructions, a skill and a custom command: all found after the answer."""
    project = tmp / "project"
    (project / ".agents" / "skills" / "deploy").mkdir(parents=True)
    (project / "AGENTS.md").write_text("Run the tests with `make check-all`.\n")
    (project / ".agents" / "skills" / "deploy" / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: How this project is deployed\n---\nUse the staging script.\n"
    )
    (project / ".acp-agent" / "commands").mkdir(parents=True)
    (project / ".acp-agent" / "commands" / "review.md").write_text("Review the staged changes.\n")


def _lists_command(name: str) -> Callable[[Any], bool]:
    """An ``available_commands_update`` naming the command ``name``."""

    def match(message: Any) -> bool:
        if as_object(message).get("method") != "session/update":
            return False
        update = as_object(as_object(as_object(message).get("params")).get("update"))
        if update.get("sessionUpdate") != "available_commands_update":
            return False
        listed: list[dict[str, Any]] = update.get("availableCommands") or []
        return name in [c.get("name") for c in listed]

    return match


def _waiting_prompts(monkeypatch: pytest.MonkeyPatch) -> anyio.Event:
    """Set once a prompt waits for the set-up after the answer (``SessionSetup.ready``)."""
    waiting = anyio.Event()
    real_wait = Later.wait

    async def wait(self: Later) -> None:
        waiting.set()
        await real_wait(self)

    monkeypatch.setattr(Later, "wait", wait)
    return waiting


async def test_a_prompt_sent_before_the_set_up_after_the_answer_ended_waits_and_gets_all_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path)
    entered, release = threading.Event(), threading.Event()

    def held(self: ProjectContext) -> None:
        entered.set()
        release.wait(WAIT)  # (a worker thread: released by the test, or given up after WAIT)
        _real_load(self)

    monkeypatch.setattr(ProjectContext, "load_sync", held)
    waiting = _waiting_prompts(monkeypatch)
    model = fake(Reply(text="done"))
    async with editor_agent(tmp_path, model) as (editor, sid, _):
        with anyio.fail_after(WAIT):
            await anyio.to_thread.run_sync(entered.wait)  # answered; the rest of the set-up under way
            request = await editor.send_request("session/prompt", editor.prompt_params(sid, "check it"))
            await waiting.wait()
        assert model.prompts == [], "the model is not asked before the set-up is complete"
        release.set()
        answer = await editor.response(request)
        assert answer["result"]["stopReason"] == "end_turn"
        await editor.wait_for(_lists_command("review"))  # the custom command, listed once found
    [asked] = model.prompts
    assert "make check-all" in (asked.system or ""), "the project's instructions"
    assert "deploy: How this project is deployed" in (asked.system or ""), "its skills"
    assert "skill" in [t.name for t in asked.tools] and "read_file" in [t.name for t in asked.tools]


async def test_a_failure_of_the_set_up_after_the_answer_is_the_prompts_error_and_the_next_prompt_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path)
    failures = [OSError("the project's folders cannot be read (injected)")]

    def flaky(self: ProjectContext) -> None:
        if failures:
            raise failures.pop()
        _real_load(self)

    monkeypatch.setattr(ProjectContext, "load_sync", flaky)
    model: FakeModel = fake(Reply(text="second try"))
    async with editor_agent(tmp_path, model) as (editor, sid, _):
        first = await editor.response(
            await editor.send_request("session/prompt", editor.prompt_params(sid, "one"))
        )
        error = first["error"]
        assert "setting up the session failed" in error["message"]
        assert "the project's folders cannot be read (injected)" in error["message"]
        assert error["data"]["errorKind"] == "configuration_error"
        assert model.prompts == []
        second = await editor.response(
            await editor.send_request("session/prompt", editor.prompt_params(sid, "two"))
        )
        assert second["result"]["stopReason"] == "end_turn"
    [asked] = model.prompts
    assert "make check-all" in (asked.system or "")


async def test_the_sessions_tools_and_middleware_are_composed_after_the_answer_and_before_its_first_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    finished: list[SessionSetup] = []
    real_finish = CodingFactory.finish

    async def finish(self: CodingFactory, env: Any, prepared: Any) -> SessionSetup:
        setup = await real_finish(self, env, prepared)
        # What the answer is written from: no middleware yet, and tools that refuse to be read.
        assert setup.middleware == ()
        assert setup.tools is not None
        with pytest.raises(HarnessUsageError, match="before its set-up was completed"):
            await setup.tools.tools()
        assert setup.controls is not None and setup.controls.modes() is not None
        finished.append(setup)
        return setup

    monkeypatch.setattr(CodingFactory, "finish", finish)
    model = fake(Reply(text="done"))
    async with editor_agent(tmp_path, model) as (editor, sid, _):
        answer = await editor.response(
            await editor.send_request("session/prompt", editor.prompt_params(sid, "check it"))
        )
        assert answer["result"]["stopReason"] == "end_turn"
    [setup] = finished
    assert setup.tools is not None
    names = [t.spec().name for t in await setup.tools.tools()]
    assert {"read_file", "shell", "explore"} <= set(names)
    assert len(setup.middleware) > 10
    [asked] = model.prompts
    assert [t.name for t in asked.tools] == names, "the model saw the composed tools"


async def test_a_composition_that_fails_after_the_answer_is_the_first_prompts_error_and_the_next_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    failures = [RuntimeError("the explore tool cannot be built (injected)")]

    def flaky(*args: Any, **kwargs: Any) -> Any:
        if failures:
            raise failures.pop()
        return explore_tool(*args, **kwargs)

    monkeypatch.setattr("acp_agent.coding._factory.explore_tool", flaky)
    model = fake(Reply(text="second try"))
    async with editor_agent(tmp_path, model) as (editor, sid, _):  # (the answer came: it needs none of it)
        first = await editor.response(
            await editor.send_request("session/prompt", editor.prompt_params(sid, "one"))
        )
        error = first["error"]
        assert "setting up the session failed" in error["message"]
        assert "the explore tool cannot be built (injected)" in error["message"]
        assert error["data"]["errorKind"] == "internal_error"
        assert model.prompts == []
        second = await editor.response(
            await editor.send_request("session/prompt", editor.prompt_params(sid, "two"))
        )
        assert second["result"]["stopReason"] == "end_turn"
    [asked] = model.prompts
    assert "explore" in [t.name for t in asked.tools]
