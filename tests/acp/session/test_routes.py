"""The route table: what is routed is what ``initialize`` advertises, and each column is honoured."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from acp_agent._early import PROMPT_CAPABILITIES, initialize_result
from acp_agent.session import _agent as agent_module  # pyright: ignore[reportPrivateUsage]
from acp_agent.session._agent import ROUTES
from acp_agent.session._setup import SessionEnvironment, SessionSetup
from harness.testing import FakeModel, Reply
from tests.acp.session._support import running_agent

pytestmark = pytest.mark.anyio

# Methods every agent serves (the spec's baseline); the others are advertised in agentCapabilities.
BASELINE = {
    "initialize",
    "authenticate",
    "session/new",
    "session/prompt",
    "session/set_mode",
    "session/set_config_option",
}
FIELD_CAPABILITIES = {"additionalDirectories", "systemPrompt"}  # capabilities of a field, not a method


def _advertised() -> dict[str, Any]:
    """``agentCapabilities``, with the answer's ``_meta`` beside them (where extensions are advertised)."""
    result = initialize_result({"protocolVersion": 1}, configured=True, how_to_configure="")
    return {**result["agentCapabilities"], "_meta": result["_meta"]}


def _at(tree: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        tree = cast(dict[str, Any], tree).get(key) if isinstance(tree, dict) else None
    return tree


def test_every_routed_method_is_baseline_or_advertised_where_its_route_says() -> None:
    capabilities = _advertised()
    for method, route in ROUTES.items():
        if route.capability:
            assert _at(capabilities, route.capability) not in (None, False), method
        elif method.startswith("_"):
            raise AssertionError(f"{method}: an extension is advertised in the answer's _meta")
        else:
            assert method in BASELINE, f"{method}: name the capability that advertises it"


def test_every_advertised_session_method_has_a_route() -> None:
    capabilities = _advertised()
    routed = {route.capability for route in ROUTES.values()}
    for name in capabilities["sessionCapabilities"]:
        if name not in FIELD_CAPABILITIES:
            assert ("sessionCapabilities", name) in routed, name
    assert capabilities["loadSession"] is True and ("loadSession",) in routed


def test_the_advertised_prompt_capabilities_are_the_ones_the_session_applies() -> None:
    assert _advertised()["promptCapabilities"] == dict(PROMPT_CAPABILITIES)


async def test_unknown_methods_are_not_found_and_routed_ones_wait_for_initialize(tmp_path: Path) -> None:
    async with running_agent(tmp_path, FakeModel([])) as (client, _agent, _tg):
        for method, route in ROUTES.items():
            if route.needs_initialize:
                answer = await client.response(await client.send_request(method, {}))
                assert answer["error"]["code"] == -32600, (method, answer)
        answer = await client.response(await client.send_request("nes/start", {}))
        assert answer["error"]["code"] == -32601
        await client.initialize()
        answer = await client.response(await client.send_request("nes/start", {}))
        assert answer["error"]["code"] == -32601


async def test_omitted_params_are_an_empty_object(tmp_path: Path) -> None:
    async with running_agent(tmp_path, FakeModel([])) as (client, _agent, _tg):
        await client.initialize()
        assert await client.call("session/list") == {"sessions": []}
        answer = await client.response(await client.send_request("session/new"))
        assert answer["error"] == {
            "code": -32602,
            "message": "invalid params: cwd: field required (and 1 more)",
        }


async def test_a_short_method_finishes_and_answers_when_the_client_cancels_it(tmp_path: Path) -> None:
    started, release = anyio.Event(), anyio.Event()

    async def slow_factory(env: SessionEnvironment) -> SessionSetup:
        started.set()
        await release.wait()
        return SessionSetup()

    async with running_agent(tmp_path, FakeModel([]), factory=slow_factory) as (client, _agent, _tg):
        await client.initialize()
        request_id = await client.send_request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        with anyio.fail_after(10):
            await started.wait()
        await client.notify("$/cancel_request", {"requestId": request_id})
        assert (await client.response(await client.send_request("session/list", {})))["result"]
        release.set()
        answer = await client.response(request_id)
        assert answer["result"]["sessionId"].startswith("sess_")


async def test_a_prompt_is_cancellable_and_ends_cancelled(tmp_path: Path) -> None:
    async with running_agent(tmp_path, FakeModel([Reply(text="never", hang=True)])) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        request_id = await client.send_request("session/prompt", client.prompt_params(sid, "go"))
        await client.wait_for(lambda m: m.get("method") == "session/update")
        await client.notify("$/cancel_request", {"requestId": request_id})
        assert (await client.response(request_id))["result"] == {"stopReason": "cancelled"}


async def test_a_route_that_needs_a_model_answers_auth_required_until_one_is_configured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    routes = dict(ROUTES)
    routes["session/new"] = dataclasses.replace(ROUTES["session/new"], needs_model=True)
    monkeypatch.setattr(agent_module, "ROUTES", routes)
    params: dict[str, Any] = {"cwd": str(tmp_path), "mcpServers": []}
    async with running_agent(tmp_path) as (client, _agent, _tg):
        await client.initialize()
        answer = await client.response(await client.send_request("session/new", params))
        assert answer["error"]["code"] == -32000 and "configure" in answer["error"]["message"].lower()
    async with running_agent(tmp_path, FakeModel([])) as (client, _agent, _tg):
        await client.initialize()
        assert await client.new_session(str(tmp_path))
