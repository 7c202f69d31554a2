from __future__ import annotations

import logging

import pytest
from pydantic import ValidationError

from acp_agent.protocol import errors
from acp_agent.protocol.errors import RpcError, error_from_exception
from acp_agent.protocol.models import InitializeRequest, NewSessionRequest, PromptRequest


def validation_error(model: type, data: object) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)  # type: ignore[attr-defined]
    return caught.value


def test_error_codes_match_the_acp_error_code_set() -> None:
    assert (errors.PARSE_ERROR, errors.INVALID_REQUEST, errors.METHOD_NOT_FOUND) == (-32700, -32600, -32601)
    assert (errors.INVALID_PARAMS, errors.INTERNAL_ERROR, errors.REQUEST_CANCELLED) == (
        -32602,
        -32603,
        -32800,
    )
    assert (errors.AUTH_REQUIRED, errors.RESOURCE_NOT_FOUND) == (-32000, -32002)


def test_constructors_build_wire_errors() -> None:
    assert RpcError.invalid_params("bad").to_dict() == {"code": -32602, "message": "bad"}
    assert RpcError.auth_required().to_dict() == {"code": -32000, "message": "Authentication required"}
    assert RpcError.not_found("unknown session", uri="s1").to_dict() == {
        "code": -32002,
        "message": "unknown session",
        "data": {"uri": "s1"},
    }
    assert RpcError.method_not_found("x/y").code == -32601
    assert RpcError.request_cancelled().code == -32800


def test_rpc_error_maps_to_itself() -> None:
    error = RpcError.invalid_params("x")
    assert error_from_exception(error) is error


def test_single_exception_group_is_unwrapped() -> None:
    error = RpcError.not_found()
    assert error_from_exception(ExceptionGroup("g", [ExceptionGroup("h", [error])])) is error


def test_missing_field_names_the_field() -> None:
    mapped = error_from_exception(validation_error(PromptRequest, {"prompt": []}))
    assert (mapped.code, mapped.message) == (-32602, "invalid params: sessionId: field required")


def test_wrong_type_names_the_nested_field_without_url() -> None:
    mapped = error_from_exception(
        validation_error(NewSessionRequest, {"cwd": "/x", "mcpServers": [{"name": 1}]})
    )
    assert mapped.code == -32602
    assert mapped.message.startswith("invalid params: mcpServers.0.stdio.")
    assert "pydantic" not in mapped.message and "http" not in mapped.message
    assert len(mapped.message) <= 300


def test_string_protocol_version_is_invalid_params() -> None:
    mapped = error_from_exception(validation_error(InitializeRequest, {"protocolVersion": "1.0.0"}))
    assert mapped.code == -32602 and mapped.message.startswith("invalid params: protocolVersion:")


def test_non_object_params_say_expected_an_object() -> None:
    mapped = error_from_exception(validation_error(PromptRequest, [1, 2]))
    assert mapped.message == "invalid params: expected an object"


def test_unknown_content_type_is_invalid_params() -> None:
    error = validation_error(PromptRequest, {"sessionId": "s", "prompt": [{"type": "video"}]})
    mapped = error_from_exception(error)
    assert mapped.code == -32602 and mapped.message.startswith("invalid params: prompt.0:")


def test_other_exceptions_become_generic_internal_error_and_are_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR, logger="acp_agent.protocol"):
        mapped = error_from_exception(KeyError("secret"))
    assert mapped.to_dict() == {"code": -32603, "message": "internal error"}
    assert any(record.exc_info for record in caplog.records)


def test_malformed_peer_error_is_tolerated() -> None:
    assert RpcError.from_dict({"code": "x"}).code == -32603
    assert RpcError.from_dict("oops").code == -32603
    parsed = RpcError.from_dict({"code": -32002, "message": "m", "data": [1]})
    assert (parsed.code, parsed.message, parsed.data) == (-32002, "m", [1])
