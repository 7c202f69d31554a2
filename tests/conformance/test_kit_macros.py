"""The shorthand steps (``initialize``, ``new_session``, ``prompt``) expand into the plain steps they stand for."""

from __future__ import annotations

from acp_conformance.macros import CLIENT_INFO, expand_macros


def test_initialize_sends_version_1_with_the_scenarios_client_and_expects_version_1() -> None:
    caps = {"fs": {"readTextFile": True}}
    steps = expand_macros([{"initialize": {"id": 7, "capture": {"INIT": "result"}}}], client=caps)
    assert steps == [
        {
            "send": {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "initialize",
                "params": {"protocolVersion": 1, "clientCapabilities": caps, "clientInfo": CLIENT_INFO},
            }
        },
        {
            "expect": {"jsonrpc": "2.0", "id": 7, "result": {"protocolVersion": 1}, "error": "<absent>"},
            "capture": {"INIT": "result"},
        },
    ]


def test_initialize_params_override_and_a_profiles_auth_method_authenticates() -> None:
    steps = expand_macros(
        [{"initialize": {"params": {"protocolVersion": 2}}}], client={}, auth_method="api-key"
    )
    assert steps[0]["send"]["params"]["protocolVersion"] == 2
    assert steps[2] == {
        "send": {
            "jsonrpc": "2.0",
            "id": "auth-0",
            "method": "authenticate",
            "params": {"methodId": "api-key"},
        }
    }
    assert steps[3] == {"expect": {"id": "auth-0", "result": "<object>"}}


def test_new_session_runs_in_the_scenario_directory_and_captures_its_id() -> None:
    (send, expect) = expand_macros([{"new_session": {"id": 3, "capture": "S2"}}], client={})
    assert send["send"]["params"] == {"cwd": "${CWD}", "mcpServers": []}
    assert expect["capture"] == {"S2": "result.sessionId"}
    assert expect["expect"]["result"] == {"sessionId": "<nonempty>"}
    (_, bare) = expand_macros([{"new_session": {"capture": ""}}], client={})
    assert bare["capture"] == {}


def test_prompt_waits_for_its_stop_reason_collecting_what_comes_before() -> None:
    steps = expand_macros(
        [{"prompt": {"id": 4, "text": "hi", "stop": "*", "collect": "turn", "allow": "*"}}], client={}
    )
    assert steps[0]["send"]["params"] == {"sessionId": "${S}", "prompt": [{"type": "text", "text": "hi"}]}
    assert steps[1] == {
        "expect_until": {"id": 4, "result": {"stopReason": "<string>"}},
        "collect": "turn",
        "allow": "*",
    }
    blocks = [{"type": "resource_link", "uri": "file:///x", "name": "x"}]
    (send, wait) = expand_macros(
        [{"prompt": {"session": "${S2}", "blocks": blocks, "expect": {"id": 2, "error": "<object>"}}}],
        client={},
    )
    assert send["send"]["params"] == {"sessionId": "${S2}", "prompt": blocks}
    assert wait == {"expect_until": {"id": 2, "error": "<object>"}}


def test_as_lenient_and_timeout_move_to_the_step_that_waits_and_plain_steps_pass_through() -> None:
    check = {"id": "x.y", "title": "t", "level": "MUST", "source": "docs/x.mdx"}
    steps = expand_macros(
        [
            {"new_session": None, "as": check, "timeout_ms": 50},
            {"prompt": {"lenient": {"id": 2}}},
            {"expect_silence_ms": 10},
        ],
        client={},
    )
    assert "as" not in steps[0] and steps[1]["as"] == check and steps[1]["timeout_ms"] == 50
    assert steps[3]["lenient"] == {"id": 2}
    assert steps[4] == {"expect_silence_ms": 10}
