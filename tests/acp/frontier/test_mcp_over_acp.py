"""MCP over ACP through the real process, in the request-scoped shape: an ``acp`` server that the test
client itself implements (``mcp/message`` requests with ``serverId`` and ``requestId``, answered with an
inner ``result`` or ``error``), a handshake-era MCP server (``server/discover`` unknown, so ``initialize``),
and the conformance kit's server, which speaks MCP 2026-07-28 (``server/discover``, no handshake); its tool
offered to the model as ``mcp__<name>__<tool>`` and called over ``mcp/message``; no ``mcp/connect`` or
``mcp/disconnect`` ever."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_conformance.fake_model import ToolCall, Turn
from tests.acp.frontier._frontier_support import check_wire, frontier_agent, validate

pytestmark = [pytest.mark.anyio, pytest.mark.process]


class EchoServer:
    """A minimal MCP server with one tool, ``shout``, spoken through the client's side of ACP."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.called = anyio.Event()
        self.fail_calls = False

    async def __call__(self, method: str, params: Any) -> Any:
        self.calls.append((method, params))
        assert method == "mcp/message", method  # no mcp/connect or mcp/disconnect in this shape
        validate("MessageMcpRequest", params)
        assert params["serverId"] == "srv-1"
        inner: dict[str, Any] = params.get("params") or {}
        self.called.set()
        match params["method"]:
            case "server/discover":  # a handshake-era server (MCP before 2026-07-28): the agent falls back
                unknown: dict[str, Any] = {"error": {"code": -32601, "message": "Method not found"}}
                validate("MessageMcpResponse", unknown)
                return unknown
            case "initialize":
                result: Any = {
                    "protocolVersion": inner["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "echo", "version": "1"},
                }
            case "tools/list":
                schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
                result = {"tools": [{"name": "shout", "description": "Shout a text", "inputSchema": schema}]}
            case "tools/call" if self.fail_calls:
                answer: dict[str, Any] = {"error": {"code": -32000, "message": "the echo server is hoarse"}}
                validate("MessageMcpResponse", answer)
                return answer
            case "tools/call":
                text = str(inner["arguments"]["text"]).upper()
                result = {"content": [{"type": "text", "text": f"{text}!"}], "isError": False}
            case "ping":
                result = {}
            case other:
                raise AssertionError(f"unexpected MCP request {other}")
        validate("MessageMcpResponse", {"result": result})
        return {"result": result}


def _acp_server() -> list[dict[str, Any]]:
    return [{"type": "acp", "name": "echo", "serverId": "srv-1"}]


@pytest.mark.parametrize("fail_calls", [False, True])
async def test_an_acp_mcp_servers_tool_is_called_over_request_scoped_mcp_message(
    tmp_path: Path, fail_calls: bool
) -> None:
    server = EchoServer()
    server.fail_calls = fail_calls
    turns = [
        Turn(tool_calls=(ToolCall("mcp__echo__shout", {"text": "hello"}, "call_shout"),)),
        Turn(text="It shouted."),
    ]

    async def allow(method: str, params: Any) -> Any:
        if method == "session/request_permission":
            return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
        return await server(method, params)

    async with frontier_agent(tmp_path, turns, {}, on_request=allow) as agent:
        client = agent.client
        assert agent.initialize["agentCapabilities"]["mcpCapabilities"]["acp"] is True
        with anyio.fail_after(30):
            sid = (await agent.new_session(mcpServers=_acp_server()))["sessionId"]
            await server.called.wait()
            assert (await agent.prompt(sid, "shout hello"))["stopReason"] == "end_turn"
            tools = [t["function"]["name"] for t in agent.model.model_requests[0].json["tools"]]
            assert "mcp__echo__shout" in tools
            inner = [p["method"] for _, p in server.calls]
            # asked as MCP 2026-07-28 first (the TypeScript SDK's binding; tests/ts_client), then the handshake
            assert inner[:2] == ["server/discover", "initialize"] and "tools/call" in inner
            request_ids = [p["requestId"] for _, p in server.calls]
            assert len(set(request_ids)) == len(request_ids)  # one id per inner request
            results = [m for m in agent.model.model_requests[1].json["messages"] if m["role"] == "tool"]
            assert ("hoarse" if fail_calls else "HELLO!") in results[0]["content"]
            calls = [u for u in check_wire(client, sid) if u["sessionUpdate"].startswith("tool_call")]
            assert {u["name"] for u in calls} == {"mcp__echo__shout"}  # the name the model saw

            # The provider's notifications name an active request; one for none is ignored, and the old
            # shape's requests from the client are not served.
            await client.notify(
                "mcp/message", {"serverId": "srv-1", "requestId": "nope", "method": "notifications/progress"}
            )
            old = await client.response(
                await client.send_request("mcp/message", {"connectionId": "conn-1", "method": "ping"})
            )
            assert old["error"]["code"] == -32601
            await client.call("session/close", {"sessionId": sid})
        assert {m for m, _ in server.calls} == {"mcp/message"}
        check_wire(client)
        assert client.schema_problems(unstable=True) == []


async def test_an_acp_server_entry_without_a_server_id_is_skipped(tmp_path: Path) -> None:
    async with frontier_agent(tmp_path, [Turn(text="ok")], {}) as agent:
        with anyio.fail_after(30):
            sid = (await agent.new_session(mcpServers=[{"type": "acp", "name": "odd", "id": "1"}]))[
                "sessionId"
            ]
            assert (await agent.prompt(sid, "hi"))["stopReason"] == "end_turn"


async def test_the_conformance_kits_mcp_server_is_reached_at_mcp_2026_07_28_without_a_handshake(
    tmp_path: Path,
) -> None:
    from acp_conformance.mcp_over_acp import KIT_MCP_SERVER, answer_mcp_message

    inner: list[str] = []

    async def kit(method: str, params: Any) -> Any:
        if method == "session/request_permission":
            return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}
        assert method == "mcp/message", method
        validate("MessageMcpRequest", params)
        inner.append(params["method"])
        reply = answer_mcp_message(params)
        validate("MessageMcpResponse", reply["result"])
        return reply["result"]

    turns = [
        Turn(tool_calls=(ToolCall("mcp__kit__echo", {"text": "hi"}, "call_echo"),)),
        Turn(text="Echoed."),
    ]
    async with frontier_agent(tmp_path, turns, {}, on_request=kit) as agent:
        with anyio.fail_after(30):
            sid = (await agent.new_session(mcpServers=[KIT_MCP_SERVER]))["sessionId"]
            assert (await agent.prompt(sid, "echo hi"))["stopReason"] == "end_turn"
        # discovered, never initialized: the kit's server speaks the 2026-07-28 revision the agent asks first
        assert inner[0] == "server/discover" and "initialize" not in inner
        assert "tools/list" in inner and "tools/call" in inner
        results = [m for m in agent.model.model_requests[1].json["messages"] if m["role"] == "tool"]
        assert "KIT-MCP-ECHO:hi" in results[0]["content"]
        assert agent.client.schema_problems(unstable=True) == []
