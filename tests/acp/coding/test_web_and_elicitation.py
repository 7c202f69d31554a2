"""Web tools in a coding session (offered, asking before they run), the permission files' default names,
and MCP elicitations asked through the editor (the fault server's ``ask`` tool, and a unit test of the
handler's permission fallback)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_agent.coding._elicit import McpElicitor
from acp_agent.coding.permissions._gate import SessionLink
from acp_agent.coding.permissions._modes import coding_policy, store_paths
from acp_agent.config import load_config
from harness import Decision, Question, ToolCall, ToolSpec
from harness.mcp import Elicitation
from harness.policy import Rule, Verdict
from harness.testing import Reply
from tests.acp.coding._support import calls, editor_agent, fake, final, last, prompt, select, text_of

pytestmark = pytest.mark.anyio

FAULT_SERVER = Path(__file__).parents[2] / "mcp" / "fault_server.py"


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


# --- web tools ---------------------------------------------------------------------------------------


async def test_web_fetch_is_offered_and_asks_in_default_mode(tmp_path: Path) -> None:
    model = fake(calls(("web_fetch", {"url": "http://127.0.0.1:9/secret"})), Reply(text="ok"))
    async with editor_agent(tmp_path, model) as (editor, sid, _):
        editor.permission = select("reject_once")
        with anyio.fail_after(10):
            await prompt(editor, sid, "fetch it")
        names = [t.name for t in model.prompts[0].tools]
        assert "web_fetch" in names and "web_search" not in names
        (asked,) = editor.requests_of("session/request_permission")
        assert asked["toolCall"]["title"] == "Fetch http://127.0.0.1:9/secret"
        assert asked["toolCall"]["kind"] == "fetch"
        ended = last(editor, "call_0_web_fetch")
        assert ended["status"] == "failed" and "rejected" in text_of(ended)


async def test_web_search_is_offered_when_searxng_is_configured(tmp_path: Path) -> None:
    model = fake(Reply(text="ok"))
    environ = {"ACP_AGENT_SEARXNG_URL": "http://127.0.0.1:8888"}
    async with editor_agent(tmp_path, model, environ=environ) as (editor, sid, _):
        with anyio.fail_after(10):
            await prompt(editor, sid, "hi")
        names = [t.name for t in model.prompts[0].tools]
        assert {"web_fetch", "web_search", "explore"} <= set(names)


def _judge(mode: str, name: str, remembered: list[Rule] | None = None) -> Verdict:
    policy = coding_policy(mode, [Path("/p")], remembered or [])
    spec = ToolSpec(name, "d", hints=_web_hints())
    return policy.judge(ToolCall("c1", name, {"url": "https://example.com"}), spec).verdict


def _web_hints() -> Any:
    from harness import Hints

    return Hints(read_only=True, open_world=True)


def test_web_tools_ask_in_every_mode_but_full_access() -> None:
    for mode in ("read-only", "default", "accept-edits", "plan"):
        assert _judge(mode, "web_fetch") is Verdict.ASK, mode
        assert _judge(mode, "web_search") is Verdict.ASK, mode
    assert _judge("full-access", "web_fetch") is Verdict.ALLOW
    # Other read-only open-world tools (an MCP server's, say) keep running without a question.
    assert _judge("default", "mcp__docs__lookup") is Verdict.ALLOW


def test_an_always_allow_answer_for_web_fetch_holds_in_default_mode() -> None:
    remembered = [Rule.tool("web_fetch", Verdict.ALLOW)]
    assert _judge("default", "web_fetch", remembered) is Verdict.ALLOW
    assert _judge("default", "web_search", remembered) is Verdict.ASK


def test_permission_files_default_to_jsonl(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "user"), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    config = load_config(tmp_path, {}, env)
    assert config.permissions_project_file == tmp_path / ".acp-agent" / "permissions.jsonl"
    assert config.permissions_user_file == tmp_path / "cfg" / "acp-agent" / "permissions.jsonl"
    assert store_paths(config, tmp_path, env) == (
        config.permissions_project_file,
        config.permissions_user_file,
    )


# --- MCP elicitation ----------------------------------------------------------------------------------


def _fault_config(project: Path) -> None:
    (project / ".acp-agent").mkdir(parents=True)
    (project / ".acp-agent" / "config.toml").write_text(
        f'[mcp_servers.fault]\ncommand = "{sys.executable}"\nargs = ["{FAULT_SERVER}"]\n'
    )


@pytest.mark.process
async def test_an_mcp_form_elicitation_goes_to_the_editor_and_the_answer_back(tmp_path: Path) -> None:
    _fault_config(tmp_path / "project")
    model = fake(calls(("mcp__fault__ask", {})), Reply(text="ok"))
    caps: dict[str, Any] = {"fs": {"readTextFile": True, "writeTextFile": True}, "elicitation": {"form": {}}}
    async with editor_agent(tmp_path, model, capabilities=caps) as (editor, sid, _):
        editor.permission = select("allow_once")
        editor.elicit = lambda p: {"action": "accept", "content": {"name": "Ada", "age": 36}}
        # The turn waits for the fault MCP server (a Python process) to start: 10 s was not enough at load 7.
        await prompt(editor, sid, "ask me", wait=30)
        (asked,) = editor.requests_of("elicitation/create")
        assert asked["sessionId"] == sid and asked["mode"] == "form"
        assert asked["toolCallId"] == "call_0_mcp__fault__ask"
        assert "fault" in asked["message"] and "What is your name?" in asked["message"]
        assert set(asked["requestedSchema"]["properties"]) == {"name", "age"}
        ended = final(editor, "call_0_mcp__fault__ask")
        assert "accept:Ada:36" in text_of(ended)


@pytest.mark.process
async def test_without_elicitation_a_free_form_field_is_declined(tmp_path: Path) -> None:
    _fault_config(tmp_path / "project")
    model = fake(calls(("mcp__fault__ask", {})), Reply(text="ok"))
    async with editor_agent(tmp_path, model) as (editor, sid, _):
        editor.permission = select("allow_once")  # the tool itself is not read-only: allow it
        await prompt(editor, sid, "ask me", wait=30)  # waits for the fault MCP server to start, as above
        assert editor.requests_of("elicitation/create") == []
        ended = final(editor, "call_0_mcp__fault__ask")
        assert "decline" in text_of(ended)


class _Gate:
    """The part of ``PermissionGate`` the handler uses, answering from a script."""

    def __init__(self, answers: list[Any], *, form: bool = False) -> None:
        self.answers = answers
        self.form = form
        self.asked: list[tuple[dict[str, Any], Any]] = []

    def can_elicit(self, mode: str = "form") -> bool:
        return self.form and mode == "form"

    async def ask_by_permission(self, tool_call: dict[str, Any], question: Question) -> Any:
        self.asked.append((tool_call, question))
        return self.answers.pop(0)

    async def request_permission(self, tool_call: dict[str, Any], options: list[dict[str, str]]) -> str:
        self.asked.append((tool_call, options))
        return str(self.answers.pop(0))


_SCHEMA = {
    "type": "object",
    "properties": {
        "size": {"type": "integer", "enum": [1, 2, 3]},
        "ok": {"type": "boolean"},
        "note": {"type": "string", "default": "none"},
    },
    "required": ["size", "ok"],
}


async def test_the_permission_fallback_asks_each_choice_and_types_the_answers() -> None:
    gate = _Gate(["2", "true"])
    link = SessionLink()
    link.running["c9"] = "mcp__srv__tool"
    handler = McpElicitor(gate, link)  # type: ignore[arg-type]
    reply = await handler(Elicitation("srv", "Pick", schema=_SCHEMA))
    assert reply.action == "accept"
    assert reply.content == {"size": 2, "ok": True, "note": "none"}
    assert [call["toolCallId"] for call, _ in gate.asked] == ["c9", "c9"]
    assert "MCP server `srv` asks: Pick" in gate.asked[0][0]["title"]


async def test_a_declined_choice_declines_the_elicitation() -> None:
    gate = _Gate([Decision.deny("no")])
    reply = await McpElicitor(gate, SessionLink())(Elicitation("srv", "Pick", schema=_SCHEMA))  # type: ignore[arg-type]
    assert reply.action == "decline"


async def test_a_url_elicitation_without_url_support_is_an_accept_or_decline_request() -> None:
    gate = _Gate(["accept"], form=True)
    reply = await McpElicitor(gate, SessionLink())(  # type: ignore[arg-type]
        Elicitation("srv", "Sign in", mode="url", url="https://example.com/login")
    )
    assert reply.action == "accept"
    (tool_call, options) = gate.asked[0]
    assert "https://example.com/login" in tool_call["title"]
    assert [o["optionId"] for o in options] == ["accept", "decline"]


async def test_the_web_tools_switch_takes_them_from_the_model(tmp_path: Path) -> None:
    model = fake(Reply(text="ok"), Reply(text="ok again"))
    caps: dict[str, Any] = {
        "fs": {"readTextFile": True, "writeTextFile": True},
        "session": {"configOptions": {"boolean": {}}},
    }
    async with editor_agent(tmp_path, model, capabilities=caps) as (editor, sid, _):
        params = {"sessionId": sid, "configId": "web_tools", "type": "boolean", "value": False}
        options = (await editor.call("session/set_config_option", params))["configOptions"]
        assert next(o for o in options if o["id"] == "web_tools")["currentValue"] is False
        await prompt(editor, sid, "no web please")
        params["value"] = True
        await editor.call("session/set_config_option", params)
        await prompt(editor, sid, "web again")
    names = [[t.name for t in p.tools] for p in model.prompts]
    assert "web_fetch" not in names[0] and "web_fetch" in names[1]


async def test_switches_are_offered_only_to_clients_that_render_them(tmp_path: Path) -> None:
    async with editor_agent(tmp_path, fake()) as (editor, _sid, project):
        answer = await editor.call("session/new", {"cwd": str(project), "mcpServers": []})
        assert all(o["type"] == "select" for o in answer["configOptions"])
