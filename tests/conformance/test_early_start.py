"""The first line is answered before the agent's imports (acp_agent._early): what follows it in the same
write, a line split across writes, and a first line that is not `initialize` all behave as before. A plain
`session/new` after it is answered there too, as the connection would answer it, and the session is built
before the next request is served."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_conformance.fake_model import FakeServer, Reply
from tests.reliability._reliability_support import agent_env, agent_process

pytestmark = [pytest.mark.anyio, pytest.mark.process]

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}


def _line(message: object) -> bytes:
    return (json.dumps(message) + "\n").encode()


async def test_requests_written_together_with_initialize_are_all_answered_in_order(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with agent_process(home, agent_env(home)) as agent:
        for request_id in (1, 2, 3):
            agent.expect(request_id)
        new: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(tmp_path), "mcpServers": []},
        }
        listing: dict[str, Any] = {"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {}}
        await agent.send_raw(_line(INIT) + _line(new) + _line(listing))
        with anyio.fail_after(30):
            answers = [await agent.response(i) for i in (1, 2, 3)]
        assert answers[0]["result"]["protocolVersion"] == 1
        assert answers[1]["result"]["sessionId"]
        # Requests run concurrently, so the list may or may not see the new session yet: it just answers.
        assert isinstance(answers[2]["result"]["sessions"], list)
        assert agent.violations == []


async def test_an_initialize_split_across_writes_is_answered(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with agent_process(home, agent_env(home)) as agent:
        agent.expect(1)
        data = _line(INIT)
        await agent.send_raw(data[:20])
        await agent.send_raw(data[20:])
        with anyio.fail_after(30):
            answer = await agent.response(1)
        assert answer["result"]["agentInfo"]["name"] == "acp-harness-agent"


async def test_a_first_line_that_is_not_initialize_is_answered_by_the_connection(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with agent_process(home, agent_env(home)) as agent:
        agent.expect(7)
        agent.expect(1)
        bad = {"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {"protocolVersion": "one"}}
        await agent.send_raw(_line(bad) + _line(INIT))
        with anyio.fail_after(30):
            rejected = await agent.response(7)
            accepted = await agent.response(1)
        assert rejected["error"]["code"] == -32602 and "protocolVersion" in rejected["error"]["message"]
        assert accepted["result"]["protocolVersion"] == 1
        assert agent.violations == []


# --- session/new answered at start-up (acp_agent._early with the coding agent's EarlyOpening) -------------

BOOLEANS = {"protocolVersion": 1, "clientCapabilities": {"session": {"configOptions": {"boolean": True}}}}


def _cached_models(home: Path, base_url: str) -> None:
    """The model list an earlier run cached for the endpoint (one model with a known window)."""
    from acp_agent.coding.models._model_list import cache_key

    entry = {
        "models": ["local-model", "other-model"],
        "facts": [{"id": "other-model", "context_window": 32768, "source": "server"}],
        "fetchedAt": 0,
    }
    (home / "cache").mkdir(parents=True)
    (home / "cache" / "models.json").write_text(json.dumps({cache_key("openai", base_url): entry}))


def _http_env(home: Path, base_url: str) -> dict[str, str]:
    return agent_env(
        home,
        ACP_AGENT_PROVIDER="openai",
        ACP_AGENT_BASE_URL=base_url,
        ACP_AGENT_MODEL="local-model",
        ACP_AGENT_API_KEY="sk-early-0123456789",
        ACP_AGENT_LOG_LEVEL="info",
    )


async def test_a_session_new_answered_at_start_up_says_what_the_connection_says_for_the_next(
    tmp_path: Path,
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    # Nothing listens there: the model list's refresh after the answer fails and changes nothing.
    base = "http://127.0.0.1:9/v1"
    _cached_models(home, base)
    async with agent_process(home, _http_env(home, base)) as agent:
        agent.expect(1)
        agent.expect(2)
        params: dict[str, Any] = {"cwd": str(project), "mcpServers": []}
        init = {**INIT, "params": BOOLEANS}
        await agent.send_raw(
            _line(init) + _line({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": params})
        )
        with anyio.fail_after(30):
            early = (await agent.response(2))["result"]
            later = await agent.call("session/new", params)
        assert early.pop("sessionId") != later.pop("sessionId")
        assert early == later
        model = next(o for o in early["configOptions"] if o["id"] == "model")
        assert [v["value"] for v in model["options"]] == ["local-model", "other-model"]
        assert model["options"][1]["description"] == "33k tokens of context"
        assert {o["id"] for o in early["configOptions"]} >= {"mode", "web_tools", "auto_compact"}
        assert agent.violations == []
    assert "(answered at start-up)" in agent.stderr_text()


async def test_a_prompt_right_after_the_early_answer_is_served_by_the_fully_built_session(
    tmp_path: Path,
) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    (project / "AGENTS.md").write_text("Always answer in haiku.\n")
    reply = (
        b'data: {"choices":[{"index":0,"delta":{"content":"Leaves fall."},"finish_reason":null}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    with FakeServer() as server:
        server.route("POST", "/v1/chat/completions", Reply.sse(reply))
        async with agent_process(home, _http_env(home, server.url + "/v1")) as agent:
            new: dict[str, Any] = {"cwd": str(project), "mcpServers": []}
            for request_id in (1, 2, 3):
                agent.expect(request_id)
            await agent.send_raw(
                _line(INIT) + _line({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": new})
            )
            with anyio.fail_after(30):
                session = (await agent.response(2))["result"]["sessionId"]
                # At once, before the session can have been built: it waits for it.
                prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "Hello"}]}
                await agent.send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt})
                answer = await agent.response(3)
            assert answer["result"] == {"stopReason": "end_turn"}
            posts = [r for r in server.requests if r.method == "POST"]
            body = json.dumps(posts[0].json)
            assert "Always answer in haiku." in body  # the project's instructions, the tools
            assert '"read_file"' in body
        async with agent_process(home, _http_env(home, server.url + "/v1")) as again:
            with anyio.fail_after(30):
                await again.call("initialize", INIT["params"])
                start = len(again.notifications)
                await again.call("session/load", {"sessionId": session, **new})
            texts = [
                n["params"]["update"].get("content", {}).get("text")
                for n in again.notifications[start:]
                if n.get("method") == "session/update"
            ]
            assert "Leaves fall." in texts


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"mcpServers": [{"name": "broken"}]}, "mcpServers"),
        ({"mcpServers": [], "cwd": "relative/path"}, "cwd"),
    ],
)
async def test_a_session_new_of_an_unusual_shape_is_left_to_the_connection_which_refuses_it(
    tmp_path: Path, params: dict[str, Any], says: str
) -> None:
    home = tmp_path / "home"
    with FakeServer() as server:
        async with agent_process(home, _http_env(home, server.url + "/v1")) as agent:
            agent.expect(1)
            agent.expect(2)
            new = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/new",
                "params": {"cwd": str(tmp_path), **params},
            }
            await agent.send_raw(_line(INIT) + _line(new))
            with anyio.fail_after(30):
                answer = await agent.response(2)
            assert answer["error"]["code"] == -32602 and says in answer["error"]["message"]
        assert "(answered at start-up)" not in agent.stderr_text()
