from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from acp_agent.protocol import models
from acp_agent.protocol.models import dump
from tests.conftest import ACP_SCHEMA, require_shared

GOLDENS = Path(__file__).parent / "goldens"


def load_goldens() -> list[Any]:
    cases: list[Any] = []
    for path in sorted(GOLDENS.glob("*.json")):
        for index, case in enumerate(json.loads(path.read_text())):
            cases.append(pytest.param(case, id=f"{path.stem}-{index}-{case['model']}"))
    return cases


CASES = load_goldens()


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json.loads(require_shared(ACP_SCHEMA).read_text())


def validator_for(schema: dict[str, Any], ref: str | None) -> Any:
    jsonschema = pytest.importorskip("jsonschema")
    target = {"$ref": f"#/$defs/{ref}", "$defs": schema["$defs"]} if ref else schema
    return jsonschema.Draft202012Validator(target)


def parse(case: dict[str, Any]) -> BaseModel:
    model_type: type[BaseModel] = getattr(models, case["model"])
    return model_type.model_validate(case["json"])


@pytest.mark.parametrize("case", CASES)
def test_golden_round_trips_exactly(case: dict[str, Any]) -> None:
    assert dump(parse(case)) == case["json"]


@pytest.mark.parametrize("case", CASES)
def test_dump_validates_against_the_acp_schema(case: dict[str, Any], schema: dict[str, Any]) -> None:
    dumped = dump(parse(case))
    validator_for(schema, case["def"]).validate(dumped)
    envelope: dict[str, Any] = {"jsonrpc": "2.0"}
    match case.get("kind"):
        case "request":
            envelope |= {"id": 1, "method": case["method"], "params": dumped}
        case "notification":
            envelope |= {"method": case["method"], "params": dumped}
        case "result":
            envelope |= {"id": 1, "result": dumped}
        case _:
            return  # a part of messages (content blocks): checked against its $def above
    validator_for(schema, None).validate(envelope)


@pytest.mark.parametrize("case", CASES)
def test_dump_parses_with_the_official_sdk(case: dict[str, Any]) -> None:
    sdk_schema = pytest.importorskip("acp.schema")
    if case["sdk"] is None:
        pytest.skip("the official Python SDK (0.12) predates this part of the schema")
    sdk_type = getattr(sdk_schema, case["sdk"])
    TypeAdapter(sdk_type).validate_python(dump(parse(case)))


def test_every_session_update_variant_has_a_golden() -> None:
    tags = {
        case.values[0]["json"]["update"]["sessionUpdate"]
        for case in CASES
        if case.values[0]["model"] == "SessionNotification"
    }
    assert tags == {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
        "notice",
        "compaction_update",
        "compaction_summary_chunk",
    }


def test_session_update_variants_match_the_schema(schema: dict[str, Any]) -> None:
    tags = {
        variant["properties"]["sessionUpdate"]["const"]
        for variant in schema["$defs"]["SessionUpdate"]["oneOf"]
    }
    ours = {
        cls.model_fields["session_update"].default
        for cls in (
            models.UserMessageChunk,
            models.AgentMessageChunk,
            models.AgentThoughtChunk,
            models.ToolCallStart,
            models.ToolCallProgress,
            models.AgentPlanUpdate,
            models.AvailableCommandsUpdate,
            models.CurrentModeUpdate,
            models.ConfigOptionUpdate,
            models.SessionInfoUpdate,
            models.UsageUpdate,
            models.Notice,
            models.CompactionUpdate,
            models.CompactionSummaryChunk,
        )
    }
    assert ours == tags


def test_schema_check_rejects_a_doc_style_mode_update(schema: dict[str, Any]) -> None:
    # The docs' example uses `modeId`; the schema requires `currentModeId` (proves the check can fail).
    validator = validator_for(schema, "SessionUpdate")
    assert not validator.is_valid({"sessionUpdate": "current_mode_update", "modeId": "code"})
    assert validator.is_valid(dump(models.CurrentModeUpdate(current_mode_id="code")))


def test_unknown_fields_are_ignored_and_meta_is_kept() -> None:
    request = models.PromptRequest.model_validate(
        {"sessionId": "s", "prompt": [], "zzz": 1, "_meta": {"traceparent": "00-x"}}
    )
    assert request.field_meta == {"traceparent": "00-x"}
    assert dump(request) == {"sessionId": "s", "prompt": [], "_meta": {"traceparent": "00-x"}}


def test_fields_populate_by_snake_case_name() -> None:
    request = models.SetSessionModeRequest(session_id="s", mode_id="code")
    assert dump(request) == {"sessionId": "s", "modeId": "code"}


def test_stdio_mcp_server_without_type_is_sent_without_type() -> None:
    server = models.McpServerStdio(name="fs", command="/bin/fs", args=[], env=[])
    assert "type" not in dump(server)


def test_unknown_mcp_server_transport_does_not_fail_session_new() -> None:
    request = models.NewSessionRequest.model_validate(
        {"cwd": "/p", "mcpServers": [{"type": "acp", "name": "x", "id": "1"}]}
    )
    assert isinstance(request.mcp_servers[0], models.McpServerUnknown)


def test_auth_method_without_type_is_the_agent_kind() -> None:
    response = models.InitializeResponse.model_validate(
        {"protocolVersion": 1, "authMethods": [{"id": "a", "name": "A"}]}
    )
    assert isinstance(response.auth_methods[0], models.AuthMethodAgent)


def test_new_file_diff_sends_explicit_null_old_text() -> None:
    diff = models.DiffToolCallContent(path="/p/new.py", new_text="x")
    assert dump(diff) == {"type": "diff", "path": "/p/new.py", "oldText": None, "newText": "x"}


def test_session_info_update_sends_null_only_for_explicitly_cleared_fields() -> None:
    assert dump(models.SessionInfoUpdate(title=None)) == {
        "sessionUpdate": "session_info_update",
        "title": None,
    }
    assert dump(models.SessionInfoUpdate(updated_at="t")) == {
        "sessionUpdate": "session_info_update",
        "updatedAt": "t",
    }


@pytest.mark.parametrize(
    "params",
    [
        {"sessionId": "s", "configId": "c", "type": "boolean", "value": "yes"},
        {"sessionId": "s", "configId": "c", "value": True},
        {"sessionId": "s", "configId": "c", "value": 1},
    ],
)
def test_set_config_option_value_must_match_its_type(params: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        models.SetSessionConfigOptionRequest.model_validate(params)


@pytest.mark.parametrize("version", ["1.0.0", "1", True, 70000, -1])
def test_protocol_version_must_be_a_uint16_integer(version: Any) -> None:
    with pytest.raises(ValidationError):
        models.InitializeRequest.model_validate({"protocolVersion": version})


def test_initialize_request_defaults_client_capabilities_to_unsupported() -> None:
    request = models.InitializeRequest.model_validate({"protocolVersion": 1})
    capabilities = request.client_capabilities
    assert (
        not capabilities.fs.read_text_file and not capabilities.terminal and capabilities.elicitation is None
    )
