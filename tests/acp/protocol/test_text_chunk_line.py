"""The streamed-text fast path writes exactly the bytes the general encoder writes for the same
``session/update`` notification."""

from __future__ import annotations

import json

import pytest

from acp_agent.protocol._jsonrpc import encode, text_chunk_line

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
