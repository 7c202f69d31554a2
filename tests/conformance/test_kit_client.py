"""How the kit's client answers the agent's requests: permission policies, a file system served only inside
the scenario's directory and only when advertised, and capability violations reported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_conformance.client import answer_agent_request, choose_permission

OPTIONS = [
    {"optionId": "no", "kind": "reject_once", "name": "No"},
    {"optionId": "always", "kind": "allow_always", "name": "Always"},
    {"optionId": "once", "kind": "allow_once", "name": "Once"},
]
FS = {"fs": {"readTextFile": True, "writeTextFile": True}}


def _selected(answer: dict[str, Any]) -> Any:
    return answer["outcome"].get("optionId")


@pytest.mark.parametrize(
    ("policy", "chosen"),
    [("allow", "once"), ("allow_always", "always"), ("reject", "no"), ("unknown-policy", "once")],
)
def test_a_permission_request_gets_the_option_of_the_policys_kind(policy: str, chosen: str) -> None:
    assert _selected(choose_permission({"options": OPTIONS}, policy)) == chosen


def test_a_permission_request_falls_back_to_the_first_option_or_cancels() -> None:
    only_reject = {"options": [{"optionId": "r", "kind": "reject_always"}]}
    assert _selected(choose_permission(only_reject, "allow")) == "r"
    cancelled = {"outcome": {"outcome": "cancelled"}}
    assert choose_permission({"options": OPTIONS}, "cancel") == cancelled
    assert choose_permission({"options": []}, "allow") == cancelled
    assert choose_permission({"options": ["not an option"]}, "allow") == cancelled
    assert choose_permission("not params", "allow") == cancelled


def test_session_request_permission_is_answered_with_the_policy(tmp_path: Path) -> None:
    reply, violation = answer_agent_request(
        "session/request_permission", {"options": OPTIONS}, {}, "reject", tmp_path
    )
    assert reply == {"result": {"outcome": {"outcome": "selected", "optionId": "no"}}} and violation is None


def test_files_are_read_and_written_inside_the_project_when_advertised(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "a.txt"
    reply, violation = answer_agent_request(
        "fs/write_text_file", {"path": str(target), "content": "one\ntwo\nthree\n"}, FS, "allow", tmp_path
    )
    assert reply == {"result": {}} and violation is None
    assert target.read_text(encoding="utf-8") == "one\ntwo\nthree\n"
    whole, _ = answer_agent_request("fs/read_text_file", {"path": str(target)}, FS, "allow", tmp_path)
    assert whole == {"result": {"content": "one\ntwo\nthree\n"}}
    window, _ = answer_agent_request(
        "fs/read_text_file", {"path": str(target), "line": 2, "limit": 1}, FS, "allow", tmp_path
    )
    assert window == {"result": {"content": "two\n"}}


@pytest.mark.parametrize("method", ["fs/read_text_file", "fs/write_text_file"])
def test_a_path_outside_the_project_or_relative_is_refused(method: str, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "secret.txt").write_text("s", encoding="utf-8")
    for path, code in (
        (str(tmp_path / "secret.txt"), -32002),
        (str(project / ".." / "secret.txt"), -32002),
        ("secret.txt", -32602),
        ("", -32602),
    ):
        reply, violation = answer_agent_request(method, {"path": path, "content": "x"}, FS, "allow", project)
        assert reply["error"]["code"] == code and violation is None, (path, reply)
    assert (tmp_path / "secret.txt").read_text(encoding="utf-8") == "s"


def test_reading_a_missing_file_is_an_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "missing.txt"
    reply, _ = answer_agent_request("fs/read_text_file", {"path": str(missing)}, FS, "allow", tmp_path)
    assert reply["error"]["code"] == -32002 and reply["error"]["data"] == {"uri": str(missing)}


@pytest.mark.parametrize(
    ("method", "params", "caps"),
    [
        ("fs/read_text_file", {"path": "/x"}, {}),
        ("fs/read_text_file", {"path": "/x"}, {"fs": {"readTextFile": False}}),
        ("fs/write_text_file", {"path": "/x"}, {"fs": {"readTextFile": True}}),
        ("terminal/create", {"command": "ls"}, {"fs": {"readTextFile": True}}),
        ("elicitation/create", {"mode": "url"}, {"elicitation": {"form": {}}}),
        ("elicitation/create", {}, {"elicitation": True}),
    ],
)
def test_a_request_for_an_unadvertised_capability_is_a_violation_answered_not_found(
    method: str, params: dict[str, Any], caps: dict[str, Any], tmp_path: Path
) -> None:
    reply, violation = answer_agent_request(method, params, caps, "allow", tmp_path)
    assert reply["error"]["code"] == -32601
    assert violation is not None and method in violation


def test_advertised_terminals_and_elicitation_and_unknown_methods_are_no_violation(tmp_path: Path) -> None:
    terminal, violation = answer_agent_request("terminal/create", {}, {"terminal": True}, "allow", tmp_path)
    assert terminal["error"]["code"] == -32601 and violation is None
    form: dict[str, Any] = {"elicitation": {"form": {}}}
    declined, violation = answer_agent_request(
        "elicitation/create", {"mode": "form"}, form, "allow", tmp_path
    )
    assert declined == {"result": {"action": "decline"}} and violation is None
    unknown, violation = answer_agent_request("_vendor/thing", None, {}, "allow", tmp_path)
    assert unknown["error"]["code"] == -32601 and violation is None


def _mcp(inner: str, params: Any = None, **outer: Any) -> Any:
    message = {"serverId": "kit-mcp", "requestId": "r1", "method": inner, **outer}
    if params is not None:
        message["params"] = params
    reply, violation = answer_agent_request("mcp/message", message, {}, "allow", Path("."))
    assert violation is None
    return reply


def test_the_kits_mcp_server_over_acp_answers_the_handshake_lists_and_calls_its_echo_tool() -> None:
    """The handshake era (MCP before 2026-07-28), which older agents' MCP clients speak."""
    init = _mcp("initialize", {"protocolVersion": "2025-03-26", "capabilities": {}})["result"]["result"]
    assert init["protocolVersion"] == "2025-03-26" and init["capabilities"] == {"tools": {}}
    assert _mcp("ping")["result"] == {"result": {}}
    (tool,) = _mcp("tools/list")["result"]["result"]["tools"]
    assert tool["name"] == "echo" and tool["inputSchema"]["required"] == ["text"]
    called = _mcp("tools/call", {"name": "echo", "arguments": {"text": "hi"}})["result"]["result"]
    assert called == {"content": [{"type": "text", "text": "KIT-MCP-ECHO:hi"}], "isError": False}


MODERN = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
"""The per-request envelope of MCP 2026-07-28 (as the mcp SDK's client stamps every request)."""


def test_the_kits_mcp_server_over_acp_speaks_mcp_2026_07_28_discovery_and_its_results() -> None:
    from mcp import types

    discovered = _mcp("server/discover", MODERN)["result"]["result"]
    result = types.DiscoverResult.model_validate(discovered)
    assert result.supported_versions == ["2026-07-28"] and result.capabilities.tools is not None
    assert discovered["resultType"] == "complete"
    listed = _mcp("tools/list", MODERN)["result"]["result"]
    (tool,) = types.ListToolsResult.model_validate(listed).tools
    assert tool.name == "echo" and listed["resultType"] == "complete" and listed["ttlMs"] == 0
    called = _mcp("tools/call", {**MODERN, "name": "echo", "arguments": {"text": "hi"}})["result"]["result"]
    (content,) = types.CallToolResult.model_validate(called).content
    assert isinstance(content, types.TextContent) and content.text == "KIT-MCP-ECHO:hi"
    assert called["resultType"] == "complete"
    # a handshake-era request (no revision in its ``_meta``) gets the handshake-era shape
    assert "resultType" not in _mcp("tools/list")["result"]["result"]


@pytest.mark.parametrize("version", ["2025-06-18", "2099-01-01", None])
def test_a_discovery_at_a_revision_the_kits_server_does_not_serve_names_the_one_it_does(
    version: str | None,
) -> None:
    params = {"_meta": {"io.modelcontextprotocol/protocolVersion": version}} if version else None
    error = _mcp("server/discover", params)["result"]["error"]
    assert error["code"] == -32022 and error["data"]["supported"] == ["2026-07-28"]
    assert "result" not in _mcp("server/discover", params)["result"]


@pytest.mark.parametrize(
    ("method", "params", "code"),
    [
        ("resources/list", None, -32601),
        ("tools/call", {"name": "other", "arguments": {"text": "x"}}, -32602),
        ("tools/call", {"name": "echo", "arguments": {"text": 5}}, -32602),
        ("tools/call", {"name": "echo"}, -32602),
    ],
)
def test_the_kits_mcp_server_answers_what_it_does_not_serve_with_an_inner_error(
    method: str, params: Any, code: int
) -> None:
    reply = _mcp(method, params)
    assert reply["result"]["error"]["code"] == code and "result" not in reply["result"]


@pytest.mark.parametrize(
    "outer",
    [
        {"serverId": "someone-else"},
        {"serverId": None},
        {"requestId": None},
        {"requestId": ["x"]},
        {"method": 3},
    ],
)
def test_an_mcp_message_for_another_server_or_without_its_ids_is_an_outer_invalid_params(outer: Any) -> None:
    reply = _mcp("tools/list", **outer)
    assert reply["error"]["code"] == -32602 and "result" not in reply
