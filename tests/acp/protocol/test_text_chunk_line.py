"""The fast paths write exactly the bytes the general encoder writes for the same message: a streamed text
chunk's ``session/update`` notification, and a response (its result encoded once)."""

from __future__ import annotations

import json

import pytest

from acp_agent.protocol._jsonrpc import encode, result_line, text_chunk_line

TEXTS = [
    "",
    "tok42 ",
    'quotes " and \\ backslashes',
    "new\nlines\tand\rcontrols \x00 \x1f \x7f",
    "unicode: héllo — 日本語 🎉 \u2028 \u2029",
    "a lone surrogate \udc80 in a file name",
    "%s %d %% format characters",
    "</script> <!-- html -->",
]


def _general(session_id: str, text: str, message_id: str) -> bytes:
    update = {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text},
        "messageId": message_id,
    }
    return encode(
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}}
    )


@pytest.mark.parametrize("text", TEXTS)
def test_a_text_chunk_line_is_byte_for_byte_the_general_encoding(text: str) -> None:
    for session_id in ("sess_0123456789abcdef", 'odd "id" é'):
        for message_id in ("msg_0123456789abcdef", 'odd "msg" \udc80'):
            assert text_chunk_line(session_id, text, message_id) == _general(session_id, text, message_id)


def test_a_text_chunk_line_is_one_json_line() -> None:
    line = text_chunk_line("s", "two\nlines", "m1")
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line)["params"]["update"]["content"]["text"] == "two\nlines"


@pytest.mark.parametrize(
    "result",
    [
        {},
        {"sessionId": "sess_1", "modes": {"currentModeId": "ask"}},
        {"text": TEXTS[4]},
        {"name": TEXTS[5]},
        [1, 2.5],
    ],
)
def test_a_response_line_is_byte_for_byte_the_general_encoding(result: object) -> None:
    for request_id in (0, 7, 9007199254740993, "", "3f9c-uuid", 'odd "id" é', "lone \udc80", None):
        message = {"jsonrpc": "2.0", "id": request_id, "result": result}
        assert result_line(request_id, result) == encode(message)
        assert json.loads(result_line(request_id, result)) == json.loads(encode(message))


@pytest.mark.parametrize("result", [{"x": float("nan")}, {"x": object()}])
def test_a_result_that_is_not_json_raises_as_the_general_encoder_does(result: object) -> None:
    with pytest.raises((TypeError, ValueError)):
        encode(result)
    with pytest.raises((TypeError, ValueError)):
        result_line(1, result)
