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

from acp_agent.coding._later import Later
from acp_agent.coding.context._context import ProjectContext
from acp_agent.protocol.jsonvalue import as_object
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
