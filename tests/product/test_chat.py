"""`acp-agent chat` driven through a pseudo-terminal against the script provider, and the renderer."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_agent.chat.render import Renderer, Style
from tests.product.pty_screen import Screen

pexpect = pytest.importorskip("pexpect", reason="pexpect (dev extra) drives the chat through a pty")

ACP_AGENT = Path(sys.executable).parent / "acp-harness-agent"
# The chat's prompt as prompt_toolkit draws it: "> ", or ">" and the cursor moved past the space.
PROMPT = r">(?: |\x08\x1b\[2C)"
TIMEOUT = 20


def chat_env(tmp_path: Path, replies: list[dict[str, object]]) -> dict[str, str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(replies), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_AGENT_")}
    env.update(
        ACP_AGENT_PROVIDER="script",
        ACP_AGENT_SCRIPT=str(script),
        ACP_AGENT_HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "xdg"),
        NO_COLOR="1",
        TERM="xterm",  # a terminal that redraws: the reply streams in place, Markdown rendered
    )
    return env


def spawn_chat(tmp_path: Path, env: dict[str, str]) -> Any:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    child = pexpect.spawn(
        str(ACP_AGENT), ["chat", "--cwd", str(project)], env=env, encoding="utf-8", timeout=TIMEOUT
    )
    child.logfile_read = io.StringIO()  # everything read, for ``Screen``
    return child


def screen(child: Any) -> Screen:
    return Screen(child, lambda: child.logfile_read.getvalue())


@pytest.mark.process
def test_chat_streams_replies_cancels_a_slow_one_with_ctrl_c_and_exits(tmp_path: Path) -> None:
    env = chat_env(
        tmp_path,
        [
            {"text": "Hello there, friend.", "chunks": 3},
            {"text": "Second answer."},
            # 40 chunks half a second apart: the reply is still streaming when Ctrl-C arrives.
            {"text": "Pondering at length about everything there is", "chunks": 40, "delay_ms": 500},
            {"text": "Back after the cancel."},
        ],
    )
    child = spawn_chat(tmp_path, env)
    try:
        child.expect(PROMPT)
        child.sendline("hi")
        child.expect_exact("Hello there, friend.")
        child.expect(PROMPT)
        child.sendline("and again")
        child.expect_exact("Second answer.")
        child.expect(PROMPT)
        child.sendline("take your time")
        screen(child).expect("Pond")  # the slow reply has started streaming
        child.sendintr()
        child.expect_exact("(cancelled)")
        child.expect(PROMPT)
        child.sendline("still there?")
        child.expect_exact("Back after the cancel.")
        child.expect(PROMPT)
        child.sendline("/sessions")
        child.expect_exact("hi")  # the session, titled by its first prompt
        child.expect(PROMPT)
        child.sendintr()  # Ctrl-C at an idle prompt leaves
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert "Traceback" not in (child.before or "")


@pytest.mark.process
@pytest.mark.parametrize(
    "steer", ["/steer mind the tests too\r", "mind the tests too\x1b\r"], ids=["slash", "alt-enter"]
)
def test_a_line_typed_during_a_turn_is_queued_and_a_steer_lands_in_the_running_turn(
    tmp_path: Path, steer: str
) -> None:
    env = chat_env(
        tmp_path,
        [
            {"text": "Working through the first request slowly.", "chunks": 20, "delay_ms": 150},
            {"text": "Also handled the steer."},  # the step the steered message adds to the turn
            {"text": "Answer to the queued line."},
        ],
    )
    child = spawn_chat(tmp_path, env)
    try:
        child.expect(PROMPT)
        child.sendline("first")
        screen(child).expect("Work")  # streaming
        child.send(steer)
        child.expect_exact("(sent")
        child.sendline("then this")
        child.expect_exact("(queued")
        child.sendeof()  # the end of input: the running and the queued turn still end
        child.expect(pexpect.EOF, timeout=40)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert "Traceback" not in (child.before or "")
    (transcript,) = (tmp_path / "home" / "sessions").glob("*/messages.jsonl")
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    said = [(m["role"], "".join(p.get("text", "") for p in m["content"])) for m in lines]
    said = [(role, text.rpartition("</context>")[2].strip()) for role, text in said]  # the user's words
    assert said == [
        ("user", "first"),
        ("assistant", "Working through the first request slowly."),
        ("user", "mind the tests too"),  # landed after the step, in the same turn
        ("assistant", "Also handled the steer."),
        ("user", "then this"),  # its own turn, after the first ended
        ("assistant", "Answer to the queued line."),
    ]


BUSY = "…"
"""The chat's prompt while a turn runs."""


@pytest.mark.process
def test_a_steer_the_turn_ends_without_reading_runs_next_shown_as_running_and_ctrl_c_cancels_it(
    tmp_path: Path,
) -> None:
    """Steered, then cancelled before its step ends: the turn ends without reading the steer, which is
    the agent's next turn, no prompt's. The chat shows it running (the busy prompt) until it ends, so
    Ctrl-C cancels it rather than leaving the chat, and is idle again after."""
    env = chat_env(
        tmp_path,
        [
            {"text": "Working through the first request slowly.", "chunks": 20, "delay_ms": 300},
            {"text": "Handling the steer at length, slowly and with care", "chunks": 40, "delay_ms": 300},
            {"text": "Fresh answer."},
        ],
    )
    child = spawn_chat(tmp_path, env)
    shown = screen(child)
    try:
        child.expect(PROMPT)
        child.sendline("first")
        shown.expect("Work")  # streaming
        child.send("/steer mind the tests too\r")
        child.expect_exact("(sent")
        child.sendintr()  # the turn ends before its step does: the steer was not read
        child.expect_exact("(cancelled)")
        shown.expect("Handl")  # the steer's own turn streams
        assert shown.lines()[-1].strip() == BUSY, shown.lines()  # running, not the idle prompt
        child.sendintr()
        child.expect_exact("cancelling")
        child.expect_exact("(cancelled)")
        child.expect(PROMPT)  # idle again
        child.sendline("and now")
        child.expect_exact("Fresh answer.")
        child.expect(PROMPT)
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert "bye" not in child.logfile_read.getvalue()  # the second Ctrl-C did not leave the chat
    (transcript,) = (tmp_path / "home" / "sessions").glob("*/messages.jsonl")
    users = [json.loads(line) for line in transcript.read_text().splitlines()]
    users = [m for m in users if m["role"] == "user"]
    said = [
        "".join(p.get("text", "") for p in m["content"]).rpartition("</context>")[2].strip() for m in users
    ]
    assert said == ["first", "mind the tests too", "and now"]  # the steer, its own turn


@pytest.mark.process
def test_ctrl_c_during_a_reply_cancels_it_and_its_text_shows_once(tmp_path: Path) -> None:
    env = chat_env(
        tmp_path,
        [
            {"text": "Pondering at length about everything there is", "chunks": 40, "delay_ms": 300},
            {"text": "Next answer."},
        ],
    )
    child = spawn_chat(tmp_path, env)
    shown_now = screen(child)
    try:
        child.expect(PROMPT)
        child.sendline("take your time")
        shown_now.expect("Pond")
        child.sendintr()  # a key to the edited line (raw mode): no SIGINT, no echo
        child.expect_exact("(cancelled)")
        child.expect(PROMPT)
        shown = shown_now.lines()
        assert sum("Pond" in line for line in shown) == 1, shown  # the partial reply, once
        assert sum("cancelling" in line for line in shown) == 1, shown
        assert not any("^C" in line and "cancelling" not in line for line in shown), shown
        child.sendline("go on")  # the chat goes on after the cancel
        child.expect_exact("Next answer.")
        child.expect(PROMPT)
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert "Traceback" not in child.logfile_read.getvalue()


@pytest.mark.process
def test_ctrl_d_after_a_turn_exits_and_ctrl_c_on_a_typed_line_clears_it(tmp_path: Path) -> None:
    child = spawn_chat(tmp_path, chat_env(tmp_path, [{"text": "Done here."}]))
    try:
        child.expect(PROMPT)
        child.sendline("hi")
        child.expect_exact("Done here.")
        child.expect(PROMPT)
        child.send("half a thought")
        child.expect_exact("thought")
        child.sendintr()  # clears the line: the chat stays
        child.sendeof()  # on the now empty line: leaves
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert "bye" not in child.logfile_read.getvalue()  # it left by Ctrl-D, not by a Ctrl-C on an empty line


@pytest.mark.process
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="finds the agent through /proc")
def test_the_agent_dying_during_a_turn_ends_the_chat_with_one_sentence(tmp_path: Path) -> None:
    import signal

    env = chat_env(tmp_path, [{"text": "Slow reply on its way", "chunks": 40, "delay_ms": 300}])
    child = spawn_chat(tmp_path, env)
    try:
        child.expect(PROMPT)
        child.sendline("go")
        screen(child).expect("Slo")  # streaming, the line being edited at the same time
        children = Path(f"/proc/{child.pid}/task/{child.pid}/children").read_text().split()
        for pid in children:  # the agent: the chat's only child
            os.kill(int(pid), signal.SIGKILL)
        child.expect_exact("the agent exited")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 1
    assert "Traceback" not in child.logfile_read.getvalue()


@pytest.mark.process
def test_ctrl_d_at_the_prompt_exits_cleanly(tmp_path: Path) -> None:
    child = spawn_chat(tmp_path, chat_env(tmp_path, []))
    try:
        child.expect(PROMPT)
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


@pytest.mark.process
def test_a_second_ctrl_c_during_a_turn_exits(tmp_path: Path) -> None:
    env = chat_env(tmp_path, [{"text": "Dawdling through a very long answer", "chunks": 40, "delay_ms": 500}])
    child = spawn_chat(tmp_path, env)
    try:
        child.expect(PROMPT)
        child.sendline("go")
        screen(child).expect("Daw")
        child.sendintr()
        child.expect_exact("cancelling")
        child.sendintr()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus in (0, 1)


@pytest.mark.process
def test_a_broken_config_file_is_one_sentence_and_no_traceback(tmp_path: Path) -> None:
    env = chat_env(tmp_path, [])
    config = tmp_path / "xdg" / "acp-agent" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('default_mode = "yolo"\n', encoding="utf-8")
    child = spawn_chat(tmp_path, env)
    child.expect(pexpect.EOF)
    child.close()
    output = child.before or ""
    assert f"{config}: default_mode: 'yolo' is not allowed; use one of: read-only" in output
    assert "Traceback" not in output
    assert child.exitstatus == 2


@pytest.mark.process
def test_a_missing_api_key_is_named_with_its_fix_and_leads_into_the_setup(tmp_path: Path) -> None:
    env = chat_env(tmp_path, [])
    env.update(ACP_AGENT_PROVIDER="anthropic", ACP_AGENT_MODEL="claude-x")
    env.pop("ANTHROPIC_API_KEY", None)
    child = spawn_chat(tmp_path, env)
    try:
        child.expect_exact("has no API key: set ACP_AGENT_API_KEY (or ANTHROPIC_API_KEY)")
        child.expect_exact("Provider [1]: ")  # the set-up, at once
        child.sendeof()
        child.expect_exact("run `acp-harness-agent setup` when you are ready")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert "Traceback" not in (child.before or "")
    assert child.exitstatus == 1


# --- the renderer ---------------------------------------------------------------------------------


def render(color: bool = False) -> tuple[Renderer, list[str]]:
    out: list[str] = []
    return Renderer(out.append, Style(color)), out


def test_streamed_text_thoughts_and_tool_calls_render_in_order() -> None:
    r, out = render()
    r.update({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})
    r.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hel"}})
    r.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "lo"}})
    r.update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "c1",
            "title": "Read a.py",
            "kind": "read",
            "status": "pending",
        }
    )
    r.update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "line one"}}],
        }
    )
    text = "".join(out)
    assert text == (
        "thinking:\nhmm\nHello\n✓ Read a.py [read] completed\n  │ line one\n"  # one line per call
    )


def test_diffs_are_unified_and_coloured_on_a_terminal() -> None:
    r, out = render(color=True)
    r.update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "c2",
            "title": "Edit",
            "kind": "edit",
            "status": "completed",
            "content": [{"type": "diff", "path": "/p/a.txt", "oldText": "one\ntwo\n", "newText": "one\n2\n"}],
        }
    )
    text = "".join(out)
    assert "\x1b[31m-two\x1b[0m" in text
    assert "\x1b[32m+2\x1b[0m" in text
    assert "\x1b[1m--- a/p/a.txt\x1b[0m" in text


def test_plans_and_usage_render() -> None:
    r, out = render()
    r.update(
        {
            "sessionUpdate": "plan",
            "entries": [
                {"content": "read", "priority": "high", "status": "completed"},
                {"content": "write", "priority": "high", "status": "in_progress"},
                {"content": "test", "priority": "low", "status": "pending"},
            ],
        }
    )
    assert "".join(out) == "Plan:\n  [x] read\n  [~] write\n  [ ] test\n"
    r.update(
        {
            "sessionUpdate": "usage_update",
            "used": 500,
            "size": 1000,
            "cost": {"amount": 0.25, "currency": "USD"},
        }
    )
    assert r.usage_line() == "context 500/1000 tokens (50%), cost 0.2500 USD"
    turn = {"totalTokens": 12420, "inputTokens": 12300, "outputTokens": 120, "cachedReadTokens": 11000}
    assert (
        r.usage_line(turn)
        == "turn 12.3k in (11.0k cached), 120 out; context 500/1000 tokens (50%), cost 0.2500 USD"
    )


@pytest.mark.process
def test_an_unreachable_endpoint_is_one_error_line_and_the_chat_goes_on(
    tmp_path: Path, refused_port: int
) -> None:
    import subprocess

    port = refused_port
    env = chat_env(tmp_path, [])
    env.update(
        ACP_AGENT_PROVIDER="openai", ACP_AGENT_MODEL="m", ACP_AGENT_BASE_URL=f"http://127.0.0.1:{port}/v1"
    )
    project = tmp_path / "project"
    project.mkdir()
    result = subprocess.run(
        [str(ACP_AGENT), "chat", "--cwd", str(project)],
        input="hi\n/quit\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0
    errors = [line for line in result.stdout.splitlines() if "error:" in line]
    assert len(errors) == 1 and f"127.0.0.1:{port}" in errors[0]
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.process
def test_chat_asks_a_permission_inline_shows_the_diff_and_writes_the_file_when_allowed(
    tmp_path: Path,
) -> None:
    env = chat_env(
        tmp_path,
        [
            {"tool_calls": [{"name": "write_file", "input": {"path": "notes.txt", "content": "green\n"}}]},
            {"text": "Saved your note."},
            {"tool_calls": [{"name": "write_file", "input": {"path": "other.txt", "content": "red\n"}}]},
            {"text": "Understood, not saved."},
        ],
    )
    child = spawn_chat(tmp_path, env)
    project = tmp_path / "project"
    try:
        child.expect(PROMPT)
        child.sendline("remember green")
        child.expect_exact("? Allow")
        child.expect_exact("+green")  # the diff of the new file, shown before the choice
        child.expect(r"(\d)\) Allow once")
        allow = child.match.group(1)
        child.expect_exact("choose 1-")
        child.sendline(allow)
        child.expect_exact("Saved your note.")
        child.expect(PROMPT)
        child.sendline("remember red")
        child.expect_exact("? Allow")
        child.expect(r"(\d)\) Reject\r")
        reject = child.match.group(1)
        child.expect_exact("choose 1-")
        child.sendline(reject)
        child.expect_exact("Understood, not saved.")
        child.expect(PROMPT)
        child.sendintr()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert (project / "notes.txt").read_text() == "green\n"
    assert not (project / "other.txt").exists()


# --- Markdown and tool output (issue 14, item 11) ---------------------------------------------------------


def _progress(r: Renderer, call_id: str, text: str, status: str = "in_progress") -> None:
    block = {"type": "content", "content": {"type": "text", "text": text}}
    r.update(
        {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status, "content": [block]}
    )


def test_markdown_is_rendered_block_by_block_not_printed_raw() -> None:
    r, out = render()
    for piece in (
        "# Plan\n\nSome **bold** and `code`",
        " here.\n\n",
        "```python\nx = 1\n",
        "```\n",
        "- one\n- two",
    ):
        r.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": piece}})
    r.end_line()
    text = "".join(out)
    assert "**" not in text and "```" not in text and "# Plan" not in text
    assert "Some bold and code here." in text and "x = 1" in text and "• one" in text


def test_a_running_tools_output_is_printed_once_when_it_ends_and_long_output_collapses() -> None:
    r, out = render()
    r.update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "s",
            "title": "ls",
            "kind": "execute",
            "status": "pending",
        }
    )
    for n in range(1, 5):  # each update carries the whole output so far
        _progress(r, "s", "\n".join(f"row {i}" for i in range(1, n + 1)))
    _progress(r, "s", "\n".join(f"row {i}" for i in range(1, 5)) + "\n[exit code 0]", "completed")
    text = "".join(out)
    assert text.count("row 1") == 1 and text.count("row 4") == 1 and "[exit code 0]" in text
    r.update({"sessionUpdate": "tool_call", "toolCallId": "big", "title": "seq", "kind": "execute"})
    _progress(r, "big", "\n".join(str(i) for i in range(1, 201)), "completed")
    tail = "".join(out)[len(text) :]
    assert "│ 1\n" in tail and "│ 200\n" in tail and "… 188 more lines …" in tail and "│ 100\n" not in tail


def test_on_a_terminal_the_running_output_updates_in_place() -> None:
    pyte = pytest.importorskip("pyte", reason="pyte (dev extra) emulates the terminal screen")
    screen = pyte.Screen(80, 24)
    stream = pyte.Stream(screen)
    r = Renderer(lambda s: stream.feed(s.replace("\n", "\r\n")), Style(False), live=True, width=80)
    r.update({"sessionUpdate": "tool_call", "toolCallId": "s", "title": "build", "kind": "execute"})
    for n in range(1, 6):
        _progress(r, "s", "\n".join(f"step {i}" for i in range(1, n + 1)))
    shown = [line.rstrip() for line in screen.display if line.strip()]
    assert shown.count("  │ step 1") == 1 and "  │ step 5" in shown  # one copy, the latest lines
    _progress(r, "s", "step 1\nstep 2", "completed")
    r.end_line()
    shown = [line.rstrip() for line in screen.display if line.strip()]
    assert shown[-3:] == ["✓ build [execute] completed", "  │ step 1", "  │ step 2"]


def test_calls_the_user_rejected_or_cancelled_are_marked_by_the_chat() -> None:
    r, out = render()
    for cid in ("a", "b"):
        r.update(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": cid,
                "title": cid,
                "kind": "edit",
                "status": "pending",
            }
        )
    r.mark("a", "rejected")
    block = {"type": "content", "content": {"type": "text", "text": "Denied: the user rejected edit"}}
    r.update({"sessionUpdate": "tool_call_update", "toolCallId": "a", "content": [block]})
    r.mark_open("cancelled")
    text = "".join(out)
    assert "✗ a [edit] rejected" in text and "Denied: the user rejected edit" in text
    assert "⊘ b [edit] cancelled" in text and "failed" not in text


def test_the_block_stream_never_cuts_inside_a_code_fence() -> None:
    from acp_agent.chat._markdown import BlockStream

    blocks = BlockStream()
    assert blocks.feed("one\n\n```\na\n\nb\n") == ["one\n"]
    assert blocks.feed("```\nafter") == ["```\na\n\nb\n```\n"]
    assert blocks.flush() == "after"


@pytest.mark.process
def test_chat_shows_markdown_and_a_commands_output_once(tmp_path: Path) -> None:
    pyte = pytest.importorskip("pyte", reason="pyte (dev extra) emulates the terminal screen")
    import io

    command = "for i in 1 2 3 4; do echo row$i; sleep 0.2; done"
    env = chat_env(
        tmp_path,
        [
            {"tool_calls": [{"name": "shell", "input": {"command": command}}]},
            {"text": "All **four** rows printed:\n\n- first\n- last\n"},
        ],
    )
    child = spawn_chat(tmp_path, env)
    child.logfile_read = log = io.StringIO()
    try:
        child.expect(PROMPT)
        child.sendline("count")
        child.expect(r"(\d)\) Allow once")
        allow = child.match.group(1)
        child.expect_exact("choose 1-")
        child.sendline(allow)
        child.expect_exact("All four rows printed:")
        child.expect(PROMPT)
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    screen = pyte.Screen(200, 300)  # what the terminal shows in the end, redraws applied
    pyte.Stream(screen).feed(log.getvalue())
    shown = [line.rstrip() for line in screen.display if line.strip()]
    assert sum("row1" in line for line in shown) == 1 and sum("row4" in line for line in shown) == 1
    assert not any("**" in line for line in shown) and any("• first" in line for line in shown)


def test_a_steer_line_is_slash_steer_and_its_text_only() -> None:
    from acp_agent.chat._typing import _steered  # pyright: ignore[reportPrivateUsage]

    assert _steered("/steer mind the tests") == "mind the tests"
    assert _steered("/steer") == ""  # told its usage, never sent as a prompt
    assert _steered("/steering wheel") is None and _steered("steer this") is None
