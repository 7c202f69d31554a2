"""MCP over ACP through the real process: an ``acp`` server that the test client itself implements
(``mcp/connect``, ``mcp/message``, ``mcp/disconnect``); its tool offered to the model as
``mcp__<name>__<tool>`` and called over ``mcp/message``; the server's own requests (ping; sampling,
which this agent refuses) carried the other way; disconnected when the session closes."""

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
        self.connected: list[str] = []
        self.disconnected: list[str] = []
        self.connection = anyio.Event()

    async def __call__(self, method: str, params: Any) -> Any:
        self.calls.append((method, params))
        if method == "mcp/connect":
            validate("ConnectMcpRequest", params)
            assert params["serverId"] == "srv-1"
            self.connected.append("conn-1")
            self.connection.set()
            return {"connectionId": "conn-1"}
        if method == "mcp/disconnect":
            validate("DisconnectMcpRequest", params)
            self.disconnected.append(params["connectionId"])
            return {}
        assert method == "mcp/message", method
        validate("MessageMcpRequest", params)
        assert params["connectionId"] == "conn-1"
        inner: dict[str, Any] = params.get("params") or {}
        match params["method"]:
            case "initialize":
                return {
                    "protocolVersion": inner["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "echo", "version": "1"},
                }
            case "tools/list":
                schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
                return {"tools": [{"name": "shout", "description": "Shout a text", "inputSchema": schema}]}
            case "tools/call":
                text = str(inner["arguments"]["text"]).upper()
                return {"content": [{"type": "text", "text": f"{text}!"}], "isError": False}
            case "ping":
                return {}
            case other:
                raise AssertionError(f"unexpected MCP request {other}")


def _acp_server() -> list[dict[str, Any]]:
    return [{"type": "acp", "name": "echo", "serverId": "srv-1"}]


async def test_an_acp_mcp_servers_tool_is_called_over_mcp_message(tmp_path: Path) -> None:
    server = EchoServer()
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
            await server.connection.wait()
            assert (await agent.prompt(sid, "shout hello"))["stopReason"] == "end_turn"
            tools = [t["function"]["name"] for t in agent.model.model_requests[0].json["tools"]]
            assert "mcp__echo__shout" in tools
            inner = [p["method"] for m, p in server.calls if m == "mcp/message"]
            assert inner[0] == "initialize" and "tools/call" in inner
            results = [m for m in agent.model.model_requests[1].json["messages"] if m["role"] == "tool"]
            assert "HELLO!" in results[0]["content"]

            # The server's own requests come from the client as mcp/message requests.
            pong = await client.call(
                "mcp/message", {"connectionId": "conn-1", "method": "ping", "params": {}}
            )
            assert pong == {}
            sampling: dict[str, Any] = {
                "connectionId": "conn-1",
                "method": "sampling/createMessage",
                "params": {"messages": [], "maxTokens": 10},
            }
            refused = await client.response(await client.send_request("mcp/message", sampling))
            assert "error" in refused
            unknown = await client.response(
                await client.send_request("mcp/message", {"connectionId": "nope", "method": "ping"})
            )
            assert unknown["error"]["code"] == -32602

            await client.call("session/close", {"sessionId": sid})
            assert server.disconnected == ["conn-1"]
        check_wire(client)


async def test_an_acp_server_entry_without_a_server_id_is_skipped(tmp_path: Path) -> None:
    async with frontier_agent(tmp_path, [Turn(text="ok")], {}) as agent:
        with anyio.fail_after(30):
            sid = (await agent.new_session(mcpServers=[{"type": "acp", "name": "odd", "id": "1"}]))[
                "sessionId"
            ]
            assert (await agent.prompt(sid, "hi"))["stopReason"] == "end_turn"
