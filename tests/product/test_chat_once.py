"""``acp-harness-agent chat`` says each thing once, on the screen a user sees (the pty's bytes played on a
``pyte`` terminal): a cancelled reply's partial text, a write's diff, one line per tool call, ``/mode`` and
``/model`` in ``/help``; an error without the agent's raw log line; and lines are edited with a history
(Up recalls the last prompt, kept in a file between chats)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.product.pty_screen import Screen

pexpect = pytest.importorskip("pexpect", reason="pexpect (dev extra) drives the chat through a pty")
pyte = pytest.importorskip("pyte", reason="pyte (dev extra) plays the chat's output on a terminal")

AGENT = Path(sys.executable).parent / "acp-harness-agent"
PROMPT = r">(?: |\x08\x1b\[2C)"  # "> ", or ">" and the cursor moved past the space (prompt_toolkit)
TIMEOUT = 20
UP = "\x1b[A"


def _spawn(tmp_path: Path, replies: list[dict[str, Any]], **extra: str) -> Any:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(replies), encoding="utf-8")
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_AGENT_")}
    env.update(
        ACP_AGENT_PROVIDER="script",
        ACP_AGENT_SCRIPT=str(script),
        ACP_AGENT_HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "xdg"),
        NO_COLOR="1",
        TERM="xterm",
        **extra,
    )
    child: Any = pexpect.spawn(
        str(AGENT), ["chat", "--cwd", str(project)], env=env, timeout=TIMEOUT, dimensions=(200, 100)
    )
    child.transcript = bytearray()
    child.logfile_read = _Tee(child.transcript)
    return child


class _Tee:
    def __init__(self, into: bytearray) -> None:
        self._into = into

    def write(self, data: bytes) -> None:
        self._into += data

    def flush(self) -> None:
        pass


def _screen(child: Any) -> list[str]:
    """The lines a user sees once everything was written (the terminal's final picture)."""
    screen: Any = pyte.Screen(100, 200)
    stream: Any = pyte.ByteStream(screen)
    stream.feed(bytes(child.transcript))
    return [line.rstrip() for line in screen.display if line.strip()]


def _end(child: Any) -> None:
    child.sendeof()
    child.expect(pexpect.EOF)


@pytest.mark.process
def test_a_cancelled_replys_partial_text_shows_once(tmp_path: Path) -> None:
    slow = {"text": "Pondering at length about everything there is", "chunks": 40, "delay_ms": 150}
    child = _spawn(tmp_path, [slow])
    try:
        child.expect(PROMPT)
        child.sendline("take your time")
        Screen(child, lambda: bytes(child.transcript)).expect("Pondering at")  # drawn in place
        child.sendintr()
        child.expect_exact("(cancelled)")
        child.expect(PROMPT)
        _end(child)
    finally:
        child.close(force=True)
    lines = _screen(child)
    assert len([ln for ln in lines if ln.startswith("Pondering")]) == 1, lines
    assert not any(ln.startswith("^C") and "cancelling" not in ln for ln in lines), lines


@pytest.mark.process
def test_a_write_shows_its_diff_once_and_one_line_for_the_call(tmp_path: Path) -> None:
    write = {"tool_calls": [{"name": "write_file", "input": {"path": "a.txt", "content": "hello\n"}}]}
    child = _spawn(tmp_path, [write, {"text": "Done."}])
    try:
        child.expect(PROMPT)
        child.sendline("write it")
        child.expect(r"(\d)\) Allow once")
        allow = child.match.group(1).decode()
        child.expect_exact("choose 1-")
        child.sendline(allow)
        child.expect_exact("Done.")
        child.expect(PROMPT)
        _end(child)
    finally:
        child.close(force=True)
    lines = _screen(child)
    assert len([ln for ln in lines if ln == "+hello"]) == 1, lines
    assert len([ln for ln in lines if "Write a.txt" in ln and "[edit]" in ln]) == 1, lines


@pytest.mark.process
def test_help_lists_mode_and_model_once(tmp_path: Path) -> None:
    child = _spawn(tmp_path, [{"text": "ok"}])
    try:
        child.expect(PROMPT)
        child.sendline("hi")  # by the end of a turn the agent's commands have come
        child.expect_exact("ok")
        child.expect(PROMPT)
        child.sendline("/help")
        child.expect_exact("Ctrl-C during a reply cancels it.")
        child.expect(PROMPT)
        _end(child)
    finally:
        child.close(force=True)
    lines = _screen(child)
    assert len([ln for ln in lines if ln.startswith("/mode ")]) == 1, lines
    assert len([ln for ln in lines if ln.startswith("/model ")]) == 1, lines
    assert any(ln.startswith("/undo") for ln in lines)  # the agent's own commands are still listed


@pytest.mark.process
def test_a_failed_turn_is_one_error_line_without_the_agents_log_line(tmp_path: Path) -> None:
    child = _spawn(tmp_path, [{"error": "overloaded"}])
    try:
        child.expect(PROMPT)
        child.sendline("hi")
        child.expect_exact("error:")
        child.expect(PROMPT)
        _end(child)
    finally:
        child.close(force=True)
    lines = _screen(child)
    assert len([ln for ln in lines if "error:" in ln]) == 1, lines
    assert not any("WARNING" in ln or ln.startswith("agent:") for ln in lines), lines


@pytest.mark.process
def test_up_recalls_the_last_prompt_and_the_history_outlives_the_chat(tmp_path: Path) -> None:
    replies = [{"text": "First."}, {"text": "Again."}, {"text": "Third."}]
    child = _spawn(tmp_path, replies)
    try:
        child.expect(PROMPT)
        child.sendline("say something")
        child.expect_exact("First.")
        child.expect(PROMPT)
        child.send(UP)
        child.send("\r")
        child.expect_exact("Again.")
        child.expect(PROMPT)
        _end(child)
    finally:
        child.close(force=True)
    history = (tmp_path / "home" / "chat-history").read_text()
    assert "+say something" in history
    assert oct((tmp_path / "home" / "chat-history").stat().st_mode & 0o777) == "0o600"
    second = _spawn(tmp_path, replies[2:])  # a new chat: the history is there
    try:
        second.expect(PROMPT)
        second.send(UP)
        second.send("\r")
        second.expect_exact("Third.")
        second.expect(PROMPT)
        _end(second)
    finally:
        second.close(force=True)
