"""The agent over in-memory streams: initialize, sessions, prompt turns, cancellation, failures."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.model_setup import ModelSettings
from acp_agent.session import SessionEnvironment, SessionSetup, default_factory
from harness import ErrorKind, ModelError, Result, Tools, tool
from harness.testing import FakeModel, Reply
from harness.tools._values import ToolMeta
from tests.acp.session._support import kinds, running_agent, transcript_lines

pytestmark = pytest.mark.anyio


async def test_initialize_answers_version_1_and_needs_no_auth_with_a_model(tmp_path: Path) -> None:
    async with running_agent(tmp_path, FakeModel([])) as (client, _agent, _tg):
        result = await client.call("initialize", {"protocolVersion": 7})
        assert result["protocolVersion"] == 1
        assert result["authMethods"] == []
        caps = result["agentCapabilities"]
        assert caps["loadSession"] is True
        assert caps["promptCapabilities"] == {"image": True, "audio": False, "embeddedContext": True}
        assert set(caps["sessionCapabilities"]) >= {"list", "resume", "close", "delete"}
        assert result["agentInfo"]["name"] == "acp-harness-agent"


async def test_without_a_model_an_auth_method_explains_the_setup_and_prompts_need_auth(
    tmp_path: Path,
) -> None:
    async with running_agent(tmp_path, settings=ModelSettings(None)) as (client, _agent, _tg):
        result = await client.initialize()
        assert [m["id"] for m in result["authMethods"]] == ["configure-model"]
        assert "ACP_AGENT_PROVIDER" in result["authMethods"][0]["description"]
        sid = await client.new_session(str(tmp_path))
        answer = await client.response(
            await client.send_request("session/prompt", client.prompt_params(sid, "hi"))
        )
        assert answer["error"]["code"] == -32000
        assert "ACP_AGENT_PROVIDER" in answer["error"]["message"]


class _ConfigFactory:
    """A factory that knows whether its configuration names a model (as the coding factory does)."""

    def __init__(self) -> None:
        self.names = False

    async def names_a_model(self, cwd: Path | None) -> bool:
        return self.names

    async def __call__(self, env: SessionEnvironment) -> SessionSetup:
        return await default_factory(env)


async def test_a_client_with_terminal_auth_gets_the_setup_method_and_auth_required_at_session_new(
    tmp_path: Path,
) -> None:
    factory = _ConfigFactory()
    async with running_agent(tmp_path, settings=ModelSettings(None), factory=factory) as (
        client,
        _agent,
        _tg,
    ):
        caps = {"auth": {"terminal": True}, "_meta": {"terminal-auth": True}}
        result = await client.call("initialize", {"protocolVersion": 1, "clientCapabilities": caps})
        (method,) = result["authMethods"]
        assert method["type"] == "terminal" and method["id"] == "setup" and method["args"] == ["setup"]
        legacy = method["_meta"]["terminal-auth"]  # Zed without the stable terminal type reads this
        assert legacy["args"][-1] == "setup" and os.access(legacy["command"], os.X_OK)
        # The editor learns it before the user types: session/new itself answers auth_required.
        answer = await client.response(
            await client.send_request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        )
        assert answer["error"]["code"] == -32000
        assert "ACP_AGENT_PROVIDER" in answer["error"]["message"]
        factory.names = True  # what `acp-agent setup` writing the user configuration makes true
        assert (await client.new_session(str(tmp_path))).startswith("sess_")


async def test_requests_before_initialize_are_rejected_as_not_initialized(tmp_path: Path) -> None:
    async with running_agent(tmp_path, FakeModel([])) as (client, _agent, _tg):
        answer = await client.response(await client.send_request("session/list", {}))
        assert answer["error"]["code"] == -32600
        assert "not initialized" in answer["error"]["message"]


async def test_prompt_streams_thoughts_and_text_before_end_turn(tmp_path: Path) -> None:
    model = FakeModel([Reply(text="Hello world", reasoning="hmm", chunks=3)])
    async with running_agent(tmp_path, model) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        pid = await client.send_request("session/prompt", client.prompt_params(sid, "hi"))
        assert (await client.response(pid))["result"] == {"stopReason": "end_turn"}
        updates = client.updates(sid)
        texts = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
        thoughts = "".join(
            u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_thought_chunk"
        )
        assert (texts, thoughts) == ("Hello world", "hmm")
        last_update = max(i for i, m in enumerate(client.messages) if m.get("method") == "session/update")
        assert last_update < client.index_of(pid)
        assert model.prompts[0].messages[-1].text == "hi"


async def test_tools_from_the_session_factory_show_as_tool_calls_with_their_meta(tmp_path: Path) -> None:
    @tool(read_only=True)
    def read_file(path: str) -> Result:
        """Read a file."""
        return Result.text(f"contents of {path}", value={"bytes": 12})

    spec = read_file.spec()

    def title(tool_input: Mapping[str, Any]) -> str:
        return f"Read {tool_input['path']}"

    object.__setattr__(spec, "meta", ToolMeta(kind="read", title=title))
    seen: list[SessionEnvironment] = []

    async def factory(env: SessionEnvironment) -> SessionSetup:
        seen.append(env)
        return SessionSetup(tools=Tools(read_file), system="test")

    model = FakeModel([Reply(tool_calls=[("read_file", {"path": "/a.txt"}, "call_a")]), Reply(text="done")])
    async with running_agent(tmp_path, model, factory=factory) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        await client.call("session/prompt", client.prompt_params(sid, "read it"))
        calls = [u for u in client.updates(sid) if u["sessionUpdate"].startswith("tool_call")]
        assert calls[0] == {
            "sessionUpdate": "tool_call",
            "toolCallId": "call_a",
            "title": "read_file",
            "name": "read_file",
            "kind": "read",
            "status": "pending",
        }
        assert all(c["name"] == "read_file" for c in calls)  # every update names the tool
        assert calls[1]["status"] == "in_progress" and calls[1]["rawInput"] == {"path": "/a.txt"}
        assert calls[1]["title"] == "Read /a.txt"
        assert calls[-1]["status"] == "completed"
        assert calls[-1]["content"] == [
            {"type": "content", "content": {"type": "text", "text": "contents of /a.txt"}}
        ]
        assert calls[-1]["rawOutput"] == {"bytes": 12}
        assert seen[0].cwd == tmp_path and seen[0].session_id == sid
        # load replays the call once, in its final state
        await client.call("session/load", {"sessionId": sid, "cwd": str(tmp_path), "mcpServers": []})
        replayed = [
            u
            for u in client.updates(sid)[len(client.updates(sid)) - 4 :]
            if u["sessionUpdate"] == "tool_call"
        ]
        assert replayed[-1]["status"] == "completed" and replayed[-1]["title"] == "Read /a.txt"
        assert replayed[-1]["name"] == "read_file"


async def test_cancel_during_streaming_answers_cancelled_and_keeps_only_the_user_message(
    tmp_path: Path,
) -> None:
    model = FakeModel([Reply(text="partial", hang=True)])
    async with running_agent(tmp_path, model) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        pid = await client.send_request("session/prompt", client.prompt_params(sid, "go"))
        await client.wait_for(
            lambda m: (
                m.get("method") == "session/update"
                and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            )
        )
        await client.notify("session/cancel", {"sessionId": sid})
        assert (await client.response(pid))["result"] == {"stopReason": "cancelled"}
        lines = transcript_lines(tmp_path, sid)
        assert [line["role"] for line in lines] == ["user"]


async def test_a_failed_turn_is_an_actionable_error_and_completed_steps_stay(tmp_path: Path) -> None:
    @tool
    def noop() -> str:
        """Do nothing."""
        return "ok"

    async def factory(env: SessionEnvironment) -> SessionSetup:
        return SessionSetup(tools=Tools(noop))

    error = ModelError("connection refused by http://127.0.0.1:8080/v1", ErrorKind.TRANSPORT_ERROR)
    model = FakeModel([Reply(tool_calls=[("noop", {})]), Reply(error=error)])
    async with running_agent(tmp_path, model, factory=factory) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        answer = await client.response(
            await client.send_request("session/prompt", client.prompt_params(sid, "x"))
        )
        assert answer["error"]["code"] == -32603
        assert answer["error"]["data"] == {"errorKind": "transport_error"}
        assert "127.0.0.1:8080" in answer["error"]["message"]
        assert "ACP_AGENT_BASE_URL" in answer["error"]["message"]
        roles = [line["role"] for line in transcript_lines(tmp_path, sid)]
        assert roles == ["user", "assistant", "user"]  # prompt, the tool-call step and its results


async def test_each_step_is_on_disk_before_the_next_step_begins_and_the_prompt_with_the_first(
    tmp_path: Path,
) -> None:
    @tool
    def noop() -> str:
        """Do nothing."""
        return "ok"

    async def factory(env: SessionEnvironment) -> SessionSetup:
        return SessionSetup(tools=Tools(noop))

    lines_seen: list[int] = []
    fake = FakeModel([Reply(tool_calls=[("noop", {})]), Reply(text="end")])
    holder: dict[str, str] = {}

    class CountingModel:
        def stream(self, prompt: Any) -> Any:
            if "sid" in holder:
                lines_seen.append(len(transcript_lines(tmp_path, holder["sid"])))
            return fake.stream(prompt)

    async with running_agent(tmp_path, CountingModel(), factory=factory) as (client, _agent, _tg):
        await client.initialize()
        holder["sid"] = sid = await client.new_session(str(tmp_path))
        await client.call("session/prompt", client.prompt_params(sid, "x"))
    # The prompt is written beside the first model request (not before it); step one's messages are on
    # disk before step two's request.
    assert lines_seen[1:] == [3]
    lines = transcript_lines(tmp_path, sid)
    assert len(lines) == 4 and lines[0]["role"] == "user"


async def test_closing_a_session_answers_its_running_and_its_queued_prompts_cancelled(tmp_path: Path) -> None:
    model = FakeModel([Reply(text="slow answer", hang=True)])
    async with running_agent(tmp_path, model) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        first = await client.send_request("session/prompt", client.prompt_params(sid, "one"))
        await client.wait_for(
            lambda m: (
                m.get("method") == "session/update"
                and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            )
        )
        second = await client.send_request("session/prompt", client.prompt_params(sid, "two"))
        await client.call("session/close", {"sessionId": sid})
        assert (await client.response(first))["result"] == {"stopReason": "cancelled"}
        assert (await client.response(second))["result"] == {"stopReason": "cancelled"}
        assert model.calls == 1


async def test_close_cancels_the_running_turn_and_forgets_the_session(tmp_path: Path) -> None:
    model = FakeModel([Reply(text="x", hang=True)])
    async with running_agent(tmp_path, model) as (client, agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        pid = await client.send_request("session/prompt", client.prompt_params(sid, "go"))
        await client.wait_for(
            lambda m: (
                m.get("method") == "session/update"
                and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            )
        )
        cid = await client.send_request("session/close", {"sessionId": sid})
        assert (await client.response(cid))["result"] == {}
        assert (await client.response(pid))["result"] == {"stopReason": "cancelled"}
        assert client.index_of(pid) < client.index_of(cid)
        assert sid not in agent.sessions


async def test_end_of_input_cancels_the_running_turn_and_flushes_its_answer(tmp_path: Path) -> None:
    model = FakeModel([Reply(text="x", hang=True)])
    async with running_agent(tmp_path, model) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        pid = await client.send_request("session/prompt", client.prompt_params(sid, "go"))
        await client.wait_for(
            lambda m: (
                m.get("method") == "session/update"
                and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            )
        )
        await client.close_output()
        assert (await client.response(pid))["result"] == {"stopReason": "cancelled"}


async def test_the_opening_response_releases_the_sessions_updates(tmp_path: Path) -> None:
    async with running_agent(tmp_path, FakeModel([])) as (client, agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        with anyio.fail_after(5):
            await agent.sessions[sid].opened.wait()
        assert not agent.answered.watching


async def test_mcp_servers_are_kept_and_unknown_kinds_skipped(tmp_path: Path) -> None:
    envs: list[SessionEnvironment] = []

    async def factory(env: SessionEnvironment) -> SessionSetup:
        envs.append(env)
        return SessionSetup()

    servers: list[dict[str, Any]] = [
        {"name": "a", "command": "/bin/echo", "args": [], "env": [{"name": "K", "value": "V"}]},
        {"type": "http", "name": "b", "url": "http://x/mcp", "headers": []},
        {"type": "acp", "name": "c", "id": "z"},
    ]
    (tmp_path / "other").mkdir()
    async with running_agent(tmp_path, FakeModel([]), factory=factory) as (client, _agent, _tg):
        await client.initialize()
        await client.call(
            "session/new",
            {"cwd": str(tmp_path), "mcpServers": servers, "additionalDirectories": [str(tmp_path / "other")]},
        )
    assert [s["name"] for s in envs[0].mcp_servers] == ["a", "b"]
    assert "type" not in envs[0].mcp_servers[0]
    assert envs[0].additional_directories == (tmp_path / "other",)


async def test_session_list_pages_with_an_opaque_cursor(tmp_path: Path) -> None:
    async with running_agent(tmp_path, FakeModel([])) as (client, _agent, _tg):
        await client.initialize()
        ids = {await client.new_session(str(tmp_path)) for _ in range(53)}
        first = await client.call("session/list", {})
        assert len(first["sessions"]) == 50 and "nextCursor" in first
        second = await client.call("session/list", {"cursor": first["nextCursor"]})
        assert "nextCursor" not in second
        assert {s["sessionId"] for s in first["sessions"] + second["sessions"]} == ids


async def test_updates_of_each_kind_are_stable_tags(tmp_path: Path) -> None:
    model = FakeModel([Reply(text="a", reasoning="b")])
    async with running_agent(tmp_path, model) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        await client.call("session/prompt", client.prompt_params(sid, "t"))
        assert kinds(client.updates(sid)) == [
            "session_info_update",
            "agent_thought_chunk",
            "agent_message_chunk",
        ]


async def test_cancel_withdraws_the_turns_open_client_requests(tmp_path: Path) -> None:
    holder: dict[str, SessionEnvironment] = {}

    @tool
    async def ask_client(path: str) -> str:
        """Read through the client."""
        env = holder["env"]
        result = await env.connection.request(
            "fs/read_text_file", {"sessionId": env.session_id, "path": path}
        )
        return str(result)

    async def factory(env: SessionEnvironment) -> SessionSetup:
        holder["env"] = env
        return SessionSetup(tools=Tools(ask_client))

    model = FakeModel([Reply(tool_calls=[("ask_client", {"path": "/etc/hosts"})])])
    async with running_agent(tmp_path, model, factory=factory) as (client, _agent, _tg):
        await client.initialize()
        sid = await client.new_session(str(tmp_path))
        pid = await client.send_request("session/prompt", client.prompt_params(sid, "read"))
        request = await client.wait_for(lambda m: m.get("method") == "fs/read_text_file")
        await client.notify("session/cancel", {"sessionId": sid})
        withdrawn = await client.wait_for(lambda m: m.get("method") == "$/cancel_request")
        assert withdrawn["params"] == {"requestId": request["id"]}
        assert (await client.response(pid))["result"] == {"stopReason": "cancelled"}
        assert client.messages.index(withdrawn) < client.index_of(pid)
        final = [u for u in client.updates(sid) if u["sessionUpdate"] == "tool_call_update"][-1]
        assert "status" not in final  # the client marked it cancelled itself: no "failed" over that
        assert final["content"] == [{"type": "content", "content": {"type": "text", "text": "Cancelled"}}]
        assert [line["role"] for line in transcript_lines(tmp_path, sid)] == ["user"]
