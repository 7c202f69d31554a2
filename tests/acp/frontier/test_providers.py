"""Client-routed providers through the real process: ``providers/list`` says the route without secrets,
``providers/set`` moves the next model request of every session to a second local server with the
client's headers (and without the user's key, which belongs to the configured endpoint), the required
provider cannot be disabled, and the header value is in no file, no log and no answer."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from acp_conformance.fake_model import FakeModel, Turn
from acp_conformance.fake_model.turn import ToolCall
from tests.acp.frontier._frontier_support import KEY, check_wire, frontier_agent, validate

pytestmark = [pytest.mark.anyio, pytest.mark.process]

SECRET = "gw-token-5f0e1d2c3b4a"


async def test_providers_set_routes_the_next_request_to_the_clients_endpoint_with_its_headers(
    tmp_path: Path,
) -> None:
    with FakeModel([Turn(text="from B"), Turn(text="B again")], model="local-model") as other:
        async with frontier_agent(tmp_path, [Turn(text="from A")]) as agent:
            client = agent.client
            assert agent.initialize["agentCapabilities"]["providers"] == {}
            with anyio.fail_after(30):
                listed = await client.call("providers/list", {})
                validate("ListProvidersResponse", listed)
                assert listed == {
                    "providers": [
                        {
                            "providerId": "main",
                            "supported": ["openai", "anthropic"],
                            "required": True,
                            "current": {"apiType": "openai", "baseUrl": agent.model.url + "/v1"},
                        }
                    ]
                }
                sid = (await agent.new_session())["sessionId"]
                await agent.prompt(sid, "one")
                assert agent.model.model_requests[0].headers["authorization"] == f"Bearer {KEY}"

                params = {
                    "providerId": "main",
                    "apiType": "openai",
                    "baseUrl": other.url + "/v1",
                    "headers": {"X-Gateway-Token": SECRET},
                }
                validate("SetProviderRequest", params)
                answer = await client.call("providers/set", params)
                validate("SetProviderResponse", answer)

                await agent.prompt(sid, "two")
                second = (await agent.new_session())["sessionId"]
                await agent.prompt(second, "three")
                assert len(agent.model.model_requests) == 1, "nothing more went to the configured endpoint"
                # Each message's own words (without the context the agent tells in front of a prompt).
                last = [
                    str(m["content"]).split("\n</context>\n\n", 1)[-1]
                    for m in other.model_requests[-1].json["messages"]
                ]
                assert "three" in last and "one" not in last, "the second session's request went there"
                for request in other.model_requests:
                    assert request.headers["x-gateway-token"] == SECRET
                    assert KEY not in request.headers.get("authorization", ""), "the user's key stays home"

                listed = await client.call("providers/list", {})
                assert listed["providers"][0]["current"] == {
                    "apiType": "openai",
                    "baseUrl": other.url + "/v1",
                }

                refused = await client.response(
                    await client.send_request("providers/disable", {"providerId": "main"})
                )
                assert refused["error"]["code"] == -32602 and "required" in refused["error"]["message"]
                assert await client.call("providers/disable", {"providerId": "nope"}) == {}
            check_wire(client)
            lines = b"\n".join(client.lines)
        assert SECRET.encode() not in lines
    texts = _files(tmp_path)
    assert "holding headers, not logged" in texts["agent-stderr.log"], "the debug log was on, masked"
    assert [name for name, text in texts.items() if SECRET in text] == []


def _files(root: Path) -> dict[str, str]:
    """Every file the agent wrote (its home, its logs), by relative path."""
    found = (p for p in root.rglob("*") if p.is_file() and "xdg" not in p.parts)
    return {
        (p.name if p.name == "agent-stderr.log" else str(p)): p.read_text(errors="replace") for p in found
    }


async def test_providers_set_refuses_what_it_cannot_route_without_echoing_header_values(
    tmp_path: Path,
) -> None:
    async with frontier_agent(tmp_path, []) as agent:
        client = agent.client
        with anyio.fail_after(30):
            cases = [
                {"providerId": "other", "apiType": "openai", "baseUrl": "http://127.0.0.1:9/v1"},
                {"providerId": "main", "apiType": "bedrock", "baseUrl": "http://127.0.0.1:9/v1"},
                {"providerId": "main", "apiType": "openai", "baseUrl": "file:///etc/passwd"},
                {
                    "providerId": "main",
                    "apiType": "openai",
                    "baseUrl": "http://127.0.0.1:9/v1",
                    "headers": {"X-Bad": f"{SECRET}\r\nInjected: yes"},
                },
            ]
            for params in cases:
                answer = await client.response(await client.send_request("providers/set", params))
                assert answer["error"]["code"] == -32602, answer
                assert SECRET not in json.dumps(answer)
            listed = await client.call("providers/list", {})
            assert listed["providers"][0]["current"]["baseUrl"] == agent.model.url + "/v1"


def _explore(i: int) -> Turn:
    return Turn(tool_calls=(ToolCall("explore", {"prompt": "Where is the config read?"}, f"call_x{i}"),))


async def test_the_small_provider_routes_side_work_and_once_disabled_side_work_runs_on_main(
    tmp_path: Path,
) -> None:
    turns = [
        _explore(1), Turn(text="found"), Turn(text="ok"),  # explore on the small model, main's endpoint
        _explore(2), Turn(text="ok"),  # its sub-agent's request goes to the client's route for small
        _explore(3), Turn(text="found on main"), Turn(text="ok"),  # small disabled: on the main model
    ]  # fmt: skip
    environ = {"ACP_AGENT_SMALL_MODEL": "small-model", "ACP_AGENT_EXPLORE_MODEL": "small"}
    with FakeModel([Turn(text="found elsewhere")], model="small-model") as other:
        async with frontier_agent(tmp_path, turns, environ=environ) as agent:
            client, main = agent.client, agent.model
            with anyio.fail_after(60):
                listed = await client.call("providers/list", {})
                validate("ListProvidersResponse", listed)
                small = listed["providers"][1]
                assert small == {
                    "providerId": "small",
                    "supported": ["openai", "anthropic"],
                    "required": False,
                    "current": {"apiType": "openai", "baseUrl": main.url + "/v1"},
                }
                sid = (await agent.new_session())["sessionId"]
                await agent.prompt(sid, "one")
                assert [r.json["model"] for r in main.model_requests] == [
                    "local-model",
                    "small-model",
                    "local-model",
                ]

                route = {"providerId": "small", "apiType": "openai", "baseUrl": other.url + "/v1"}
                assert await client.call("providers/set", route) == {}
                await agent.prompt(sid, "two")
                assert [r.json["model"] for r in other.model_requests] == ["small-model"]
                assert len(main.model_requests) == 5, "main's requests stay on main's endpoint"

                assert await client.call("providers/disable", {"providerId": "small"}) == {}
                listed = await client.call("providers/list", {})
                validate("ListProvidersResponse", listed)
                assert listed["providers"][1].get("current") is None, "disabled"
                await agent.prompt(sid, "three")
                assert [r.json["model"] for r in main.model_requests[5:]] == ["local-model"] * 3
                assert len(other.model_requests) == 1
            check_wire(client)
