"""``acp-harness-agent`` started by hand in a terminal (stdin a TTY), through a pseudo-terminal: it says on
stderr what it is and what to run instead, leaves on the first Ctrl-D, answers typed text with a sentence
(no JSON-RPC parse error), and still speaks ACP to a JSON-RPC message pasted by hand."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

pexpect = pytest.importorskip("pexpect", reason="pexpect (dev extra) drives the agent through a pty")

AGENT = Path(sys.executable).parent / "acp-harness-agent"
TIMEOUT = 20


def _spawn(tmp_path: Path) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_AGENT_")}
    env.update(ACP_AGENT_HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "xdg"), TERM="xterm")
    return pexpect.spawn(str(AGENT), [], env=env, cwd=str(tmp_path), encoding="utf-8", timeout=TIMEOUT)


@pytest.mark.process
def test_in_a_terminal_it_says_what_it_is_and_leaves_on_the_first_ctrl_d(tmp_path: Path) -> None:
    child = _spawn(tmp_path)
    try:
        child.expect_exact("not meant to be typed at")
        child.expect_exact("acp-harness-agent chat")
        child.expect_exact("acp-harness-agent setup")
        child.expect_exact("Ctrl-D to quit")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


@pytest.mark.process
def test_typed_text_gets_a_sentence_not_a_parse_error_and_ctrl_d_still_leaves(tmp_path: Path) -> None:
    child = _spawn(tmp_path)
    try:
        child.expect_exact("Ctrl-D to quit")
        child.sendline("hello, can you fix my bug?")
        child.expect_exact("that is not a JSON-RPC message")
        child.expect_exact("`acp-harness-agent chat`")
        child.sendline("")  # an empty line says nothing
        child.sendeof()
        child.expect(pexpect.EOF)
        seen = child.before or ""
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert "-32700" not in seen and "Parse error" not in seen and "jsonrpc" not in seen


@pytest.mark.process
def test_a_json_rpc_message_pasted_in_the_terminal_is_answered_and_one_ctrl_d_ends_it(tmp_path: Path) -> None:
    child = _spawn(tmp_path)
    try:
        child.expect_exact("Ctrl-D to quit")
        request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
        child.sendline(json.dumps(request))
        child.expect(r'\{"jsonrpc":"2\.0","id":1,"result":\{[^\r\n]*\}\}')
        answer = json.loads(child.after)
        assert answer["result"]["protocolVersion"] == 1
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
