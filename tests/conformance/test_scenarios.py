"""Every conformance scenario against the real ``acp-agent`` process (script provider, temp home), and
one conversation driven by the official ACP Python SDK's client side."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from tests.conftest import ACP_SCHEMA, REPO, require_shared

from .runner import load_scenarios, run_scenario
from .validate import MessageValidator

pytestmark = pytest.mark.anyio

AGENT = [sys.executable, "-m", "acp_agent"]
FEATURES = {"core", "script", "persist", "coding"}
SCENARIOS = load_scenarios()


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACP_AGENT_", "OPENAI_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@pytest.fixture(scope="module")
def validator() -> MessageValidator:
    return MessageValidator()


def test_the_suite_covers_at_least_forty_reference_scenarios() -> None:
    refs = {r for s in SCENARIOS for r in s.get("refs", [])}
    assert len(refs) >= 40, sorted(refs)


def test_jsonschema_validation_is_active_when_the_spec_is_present(validator: MessageValidator) -> None:
    require_shared(ACP_SCHEMA)
    assert validator.jsonschema_skipped is None


def test_the_validator_rejects_a_malformed_update(validator: MessageValidator) -> None:
    bad = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk"}},
    }
    assert validator.check(bad, {})
    unstable = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": "s",
            "update": {"sessionUpdate": "notice", "content": {"type": "text", "text": "x"}},
        },
    }
    assert validator.check(unstable, {})


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
async def test_scenario(scenario: dict[str, Any], validator: MessageValidator) -> None:
    result = await run_scenario(scenario, AGENT, features=FEATURES, base_env=_env(), validator=validator)
    if result.skipped:
        pytest.skip(result.skipped)
    assert result.ok, f"{result.detail}\n--- agent stderr (tail) ---\n{result.stderr_tail}"


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

    import anyio

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
