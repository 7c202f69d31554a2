"""The validator of every line an agent writes: the JSON-RPC envelope, batch answers, a response's result
against the method the kit sent under its id, agent requests and notifications against the schema."""

from __future__ import annotations

from typing import Any

import pytest

from acp_conformance import MessageValidator
from acp_conformance.validate import id_key, method_tables

SENT = {id_key(1): "session/new", id_key("init"): "initialize", id_key(2): "session/prompt"}


@pytest.fixture(scope="module")
def validator() -> MessageValidator:
    return MessageValidator()


def _problems(validator: MessageValidator, msg: Any) -> str:
    return "\n".join(validator.check(msg, SENT))


def test_ids_of_different_json_types_never_collide() -> None:
    assert len({id_key(1), id_key(1.0), id_key(True), id_key("1")}) == 4


def test_method_tables_come_from_the_schemas_own_tags() -> None:
    tables = method_tables()
    assert tables.responses["session/new"] == "NewSessionResponse"
    assert tables.requests["session/request_permission"] == "RequestPermissionRequest"
    assert tables.notifications["session/update"] == "SessionNotification"
    assert "session/new" not in tables.requests


def test_a_valid_response_and_notification_have_no_problems(validator: MessageValidator) -> None:
    assert _problems(validator, {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}}) == ""
    assert _problems(validator, {"jsonrpc": "2.0", "id": 9, "error": {"code": -32601, "message": "no"}}) == ""
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}
    note = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": chunk}}
    assert _problems(validator, note) == ""
    assert _problems(validator, {"jsonrpc": "2.0", "method": "_vendor/ping", "params": {}}) == ""


@pytest.mark.parametrize(
    ("msg", "problem"),
    [
        ("a string", "not a JSON object"),
        ([], "an empty array"),
        ([{"jsonrpc": "2.0", "method": "x"}], "a batch answer may only hold responses"),
        ([7], "a batch answer may only hold responses"),
        ({"jsonrpc": "2.0"}, "neither request, notification nor response"),
        ({"jsonrpc": "2.0", "id": 1}, "exactly one of result and error"),
        (
            {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}},
            "exactly one of result and error",
        ),
        ({"jsonrpc": "2.0", "id": 1, "result": []}, "session/new result must be an object"),
        ({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "bored"}}, "session/prompt result"),
        ({"jsonrpc": "1.0", "id": 5, "result": {}}, "message: schema.json"),
        ({"jsonrpc": "2.0", "id": 3, "method": "fs/format_disk", "params": {}}, "agent request of a method"),
        ({"jsonrpc": "2.0", "method": "session/shout", "params": {}}, "agent notification of a method"),
        ({"jsonrpc": "2.0", "method": "session/update", "result": {}}, "carrying result or error"),
        ({"jsonrpc": "2.0", "id": 4, "method": "fs/read_text_file", "params": {}}, "fs/read_text_file:"),
    ],
)
def test_a_malformed_message_is_named(validator: MessageValidator, msg: Any, problem: str) -> None:
    assert problem in _problems(validator, msg)


def test_a_batch_answer_is_checked_response_by_response(validator: MessageValidator) -> None:
    batch = [{"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}}, {"jsonrpc": "2.0", "id": 1}]
    problems = validator.check(batch, SENT)
    assert problems[-1] == "a response must carry exactly one of result and error"
    assert all("{'jsonrpc': '2.0', 'id': 1}" in p for p in problems[:-1])


def test_an_initialize_answer_choosing_another_version_follows_that_versions_schema(
    validator: MessageValidator,
) -> None:
    other = {"jsonrpc": "2.0", "id": "init", "result": {"protocolVersion": 2, "whatever": True}}
    assert _problems(validator, other) == ""
    wrong = {"jsonrpc": "2.0", "id": "init", "result": {"protocolVersion": 1, "agentCapabilities": "all"}}
    assert "initialize result: schema.json #/$defs/InitializeResponse" in _problems(validator, wrong)


def test_only_the_unstable_schema_knows_the_unstable_parts() -> None:
    update = {"sessionUpdate": "plan_removed", "planId": "p1"}
    note = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}}
    stable = MessageValidator().check(note, {})
    assert len(stable) == 1 and stable[0].startswith(
        "session/update: schema.json #/$defs/SessionNotification"
    )
    assert MessageValidator(unstable=True).check(note, {}) == []
