"""The conformance kit (``acp_conformance``) against the real ``acp-agent`` process: every kit scenario through
the ``acp-agent`` profile (the agent pointed at the kit's fake model), this project's own scenarios
(``scenarios/``, its contract beyond the spec), the prompt-turn scenarios once per fake-model API (the
profile mechanism end to end), and one conversation driven by the official ACP Python SDK's client side."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from acp_conformance import Outcome, load_profile, load_scenarios
from acp_conformance.suite import probe, run_scenario
from acp_conformance.validate import MessageValidator
from tests.conftest import REPO

pytestmark = pytest.mark.anyio

AGENT = [sys.executable, "-m", "acp_agent"]
KIT = load_scenarios()
PROJECT = load_scenarios([Path(__file__).parent / "scenarios"])
PROMPT_TURNS = [
    s
    for s in KIT
    if s.name
    in ("6p01_prompt_turn", "7x01_cancel_mid_stream", "8t01_tool_call_lifecycle", "5s06_load_replays_history")
]
# What the agent does not advertise, so the kit reports it apart (asserted, so a change is noticed).
EXPECTED_GAPS = {
    "caps.logout-unadvertised-is-not-found": Outcome.NOT_APPLICABLE,
    "caps.list-unadvertised-is-not-found": Outcome.NOT_APPLICABLE,
    "caps.resume-unadvertised-is-not-found": Outcome.NOT_APPLICABLE,
    "caps.close-unadvertised-is-not-found": Outcome.NOT_APPLICABLE,
    "caps.delete-unadvertised-is-not-found": Outcome.NOT_APPLICABLE,
    "caps.load-unadvertised-is-not-found": Outcome.NOT_APPLICABLE,
    "prompt.unadvertised-image-rejected": Outcome.NOT_APPLICABLE,
}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_AGENT_", "OPENAI_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture(scope="module")
def validator() -> MessageValidator:
    return MessageValidator()


@pytest.fixture(scope="module")
def init(validator: MessageValidator) -> dict[str, Any]:
    result, why = anyio.run(probe, AGENT, load_profile("acp-agent"), validator, _env())
    assert result is not None, why
    return dict(result)


async def _run(
    scenario: Any, init: dict[str, Any], validator: MessageValidator, api: str | None = None
) -> None:
    profile = load_profile("acp-agent").with_api(api)
    run = await run_scenario(scenario, AGENT, profile, init=init, validator=validator, base_env=_env())
    assert not run.wire_problems, run.wire_problems
    assert not run.violations, run.violations
    for result in run.results:
        expected = EXPECTED_GAPS.get(result.check.id, Outcome.PASSED)
        assert result.outcome is expected, (
            f"{result.check.id} ({result.check.level}): {result.outcome.value}\n{result.detail}\n"
            f"--- agent stderr (tail) ---\n{result.stderr_tail}"
        )


def test_the_kit_and_project_scenarios_cover_at_least_forty_reference_scenarios() -> None:
    refs = {r for s in KIT + PROJECT for r in s.data.get("refs", [])}
    assert len(refs) >= 40, sorted(refs)


@pytest.mark.process
@pytest.mark.parametrize("scenario", KIT, ids=[s.name for s in KIT])
async def test_kit_scenario(scenario: Any, init: dict[str, Any], validator: MessageValidator) -> None:
    await _run(scenario, init, validator)


@pytest.mark.process
@pytest.mark.parametrize("scenario", PROJECT, ids=[s.name for s in PROJECT])
async def test_project_scenario(scenario: Any, init: dict[str, Any], validator: MessageValidator) -> None:
    await _run(scenario, init, validator)


@pytest.mark.process
@pytest.mark.parametrize("api", ["responses", "anthropic"])
@pytest.mark.parametrize("scenario", PROMPT_TURNS, ids=[s.name for s in PROMPT_TURNS])
async def test_prompt_turns_through_each_fake_model_api(
    scenario: Any, api: str, init: dict[str, Any], validator: MessageValidator
) -> None:
    await _run(scenario, init, validator, api)


@pytest.mark.process
async def test_official_sdk_client_drives_a_conversation(tmp_path: Path) -> None:
    import acp
    from acp import schema

    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [{"reasoning": "hmm", "text": "Hi from the agent", "chunks": 2}, {"text": "second answer"}]
        )
    )
    project = tmp_path / "project"
    project.mkdir()
    env = _env() | {
        "ACP_AGENT_PROVIDER": "script",
        "ACP_AGENT_SCRIPT": str(script),
        "ACP_AGENT_HOME": str(tmp_path / "home"),
    }
    updates: list[tuple[str, Any]] = []

    class Client:
        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            updates.append((session_id, update))

        async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("no permission requests expected")

    with anyio.fail_after(30):
        async with acp.spawn_agent_process(
            cast(Any, Client()), AGENT[0], *AGENT[1:], env=env, cwd=project
        ) as (
            conn,
            _proc,
        ):
            init = await conn.initialize(protocol_version=1)
            assert init.protocol_version == 1
            assert init.agent_capabilities is not None and init.agent_capabilities.load_session
            new = await conn.new_session(cwd=str(project), mcp_servers=[])
            sid = new.session_id
            first = await conn.prompt(session_id=sid, prompt=[acp.text_block("hello")])
            assert first.stop_reason == "end_turn"
            texts = [
                u.content.text for s, u in updates if s == sid and isinstance(u, schema.AgentMessageChunk)
            ]
            assert "".join(texts) == "Hi from the agent"
            assert any(isinstance(u, schema.AgentThoughtChunk) for _, u in updates)
            second = await conn.prompt(session_id=sid, prompt=[acp.text_block("again")])
            assert second.stop_reason == "end_turn"
            listed = await conn.list_sessions(cwd=str(project))
            assert [s.session_id for s in listed.sessions] == [sid]
            updates.clear()
            await conn.load_session(cwd=str(project), session_id=sid, mcp_servers=[])
            replayed_users = [u.content.text for _, u in updates if isinstance(u, schema.UserMessageChunk)]
            assert replayed_users == ["hello", "again"]
