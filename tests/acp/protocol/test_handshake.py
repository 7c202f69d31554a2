from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_agent.protocol import ClientHandshake, RpcError, parse_initialize
from acp_agent.protocol.models import InitializeRequest

GOLDEN = Path(__file__).parent / "goldens" / "initialize.json"


def test_zed_initialize_params_are_read_like_the_model() -> None:
    params = json.loads(GOLDEN.read_text())[0]["json"]
    handshake = parse_initialize(params)
    model = InitializeRequest.model_validate(params)
    capabilities = model.client_capabilities
    assert handshake.protocol_version == model.protocol_version == 1
    assert handshake.fs_read_text_file == capabilities.fs.read_text_file is True
    assert handshake.fs_write_text_file == capabilities.fs.write_text_file is True
    assert handshake.terminal is capabilities.terminal is True
    assert handshake.auth_terminal is capabilities.auth.terminal is True
    assert handshake.boolean_config_options is True
    assert handshake.elicitation_form and handshake.elicitation_url
    assert (handshake.client_name, handshake.client_version) == ("zed", "0.300.0")
    assert handshake.capabilities_meta == {"terminal_output": True, "terminal-auth": True}


def test_omitted_capabilities_mean_unsupported() -> None:
    assert parse_initialize({"protocolVersion": 1}) == ClientHandshake(protocol_version=1)


def test_malformed_optional_capabilities_count_as_not_advertised() -> None:
    handshake = parse_initialize({"protocolVersion": 2, "clientCapabilities": {"fs": "yes", "terminal": 1}})
    assert handshake == ClientHandshake(protocol_version=2)


@pytest.mark.parametrize("params", [{}, {"protocolVersion": "1.0.0"}, {"protocolVersion": True}, [1], None])
def test_bad_params_are_invalid_params(params: Any) -> None:
    with pytest.raises(RpcError) as caught:
        parse_initialize(params)
    assert caught.value.code == -32602
