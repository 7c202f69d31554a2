"""Issue 16's hooks through the real process: a pre-tool hook that blocks, a post-tool hook's context, a
project hook in an untrusted project, hung hooks killed by their timeout and by cancel, and a stop hook
that keeps the turn going (its entry in the editor and on session/load; cancel and kill -9 while it runs)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.acp.instructions._support import LIMIT_S, calls, project_agent, text, tool_messages, user_messages

pytestmark = [pytest.mark.anyio, pytest.mark.process]


def _user_config(tmp: Path, toml: str) -> None:
    path = tmp / "user" / ".config" / "acp-agent" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(toml)


def _out(tmp: Path) -> Path:
    """Where a test's hooks write: a folder inside the project (hooks run in the session's sandbox, which
    lets commands write under the project's folders)."""
    out = tmp / "project" / "out"
    out.mkdir(parents=True, exist_ok=True)
    return out


def _final(updates: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    ends = [
        u for u in updates if u.get("toolCallId") == call_id and u.get("status") in ("completed", "failed")
    ]
    assert ends, f"call {call_id} never ended"
    return ends[-1]


def _hook_entries(updates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        u for u in updates if u["sessionUpdate"] == "tool_call" and str(u["toolCallId"]).startswith("hook_")
    ]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _pid_from(fifo: Path) -> int:
    """The pid the hook writes into ``fifo`` (the read waits for the writer: no polling)."""
    with anyio.fail_after(LIMIT_S):
        return int(await anyio.to_thread.run_sync(fifo.read_text, abandon_on_cancel=True))


async def test_a_pre_tool_hook_exit_2_blocks_a_shell_command_and_the_model_sees_why(tmp_path: Path) -> None:
    seen = _out(tmp_path) / "hook-input.json"
    _user_config(
        tmp_path,
        f"""
[[hooks.pre_tool_use]]
matcher = "shell"
command = "cat > {seen}; echo 'touching files is not allowed here' >&2; exit 2"
""",
    )
    replies = [calls(("shell", {"command": "touch canary"}), id="sh"), text("understood")]
    async with project_agent(tmp_path, replies) as p:
        assert (await p.prompt("make a canary"))["result"] == {"stopReason": "end_turn"}
        bodies, updates = p.bodies(), p.updates()
    assert not (tmp_path / "project" / "canary").exists(), "the command did not run"
    assert p.asked == [], "the hook decided before any permission question"
    [result] = tool_messages(bodies[1])
    assert result.removeprefix("Error: ").startswith("Blocked by hook `cat > ")
    assert result.endswith(": touching files is not allowed here")
    assert _final(updates, "sh_0")["status"] == "failed"
    payload = json.loads(seen.read_text())
    assert payload["event"] == "pre_tool_use" and payload["tool"] == "shell"
    assert payload["input"] == {"command": "touch canary"} and payload["cwd"] == str(tmp_path / "project")
    assert payload["tool_name"] == "shell" and payload["hook_event_name"] == "PreToolUse"


async def test_a_pre_tool_hook_saying_continue_false_stops_a_shell_command_and_ends_the_turn(
    tmp_path: Path,
) -> None:
    said = _out(tmp_path) / "halt.json"
    said.write_text(json.dumps({"continue": False, "stopReason": "deploys are frozen today"}))
    _user_config(tmp_path, f'[[hooks.pre_tool_use]]\nmatcher = "shell"\ncommand = "cat {said}"\n')
    replies = [calls(("shell", {"command": "touch canary"}), id="sh"), text("never asked")]
    async with project_agent(tmp_path, replies) as p:
        assert (await p.prompt("deploy"))["result"] == {"stopReason": "end_turn"}
        bodies, updates = p.bodies(), p.updates()
    assert not (tmp_path / "project" / "canary").exists(), "the command did not run"
    assert len(bodies) == 1 and p.asked == [], "no step after the call, and nothing asked"
    assert _final(updates, "sh_0")["status"] == "failed"
    [entry] = _hook_entries(updates)
    assert "The turn ends: deploys are frozen today" in json.dumps(entry)


async def test_a_prompt_hook_saying_continue_false_ends_the_turn_with_no_model_request(
    tmp_path: Path,
) -> None:
    said = _out(tmp_path) / "halt.json"
    said.write_text(json.dumps({"continue": False, "stopReason": "deploys are frozen today"}))
    _user_config(tmp_path, f'[[hooks.user_prompt_submit]]\ncommand = "cat {said}"\n')
    async with project_agent(tmp_path, [text("never asked")]) as p:
        assert (await p.prompt("deploy the release"))["result"] == {"stopReason": "end_turn"}
        bodies, updates = p.bodies(), p.updates()
    assert bodies == [], "the prompt never reached the model"
    [entry] = _hook_entries(updates)
    assert "The turn ends: deploys are frozen today" in json.dumps(entry)


async def test_a_post_tool_hook_context_reaches_the_model_with_the_result(tmp_path: Path) -> None:
    _user_config(
        tmp_path,
        """
[[hooks.post_tool_use]]
matcher = "read_.*"
command = "echo '{\\"context\\": \\"Remember: this file is generated.\\"}'"
""",
    )
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "a.txt").write_text("alpha\n")
    replies = [calls(("read_file", {"path": "a.txt"}), id="rd"), text("noted")]
    async with project_agent(tmp_path, replies) as p:
        await p.prompt("read a.txt")
        bodies = p.bodies()
    [result] = tool_messages(bodies[1])
    assert "alpha" in result
    assert "(post_tool_use): Remember: this file is generated." in result


def _trust_choice(answer: str) -> Any:
    """Answers the trust question with ``answer``, any other permission request with allow once."""

    def choose(params: dict[str, Any]) -> str:
        return answer if str(params["toolCall"]["toolCallId"]).startswith("trust_") else "allow_once"

    return choose


@pytest.mark.parametrize("answer", ["reject_once", "allow_once"])
async def test_a_project_hook_runs_only_in_a_trusted_project_and_the_users_hook_always(
    tmp_path: Path, answer: str
) -> None:
    project = tmp_path / "project"
    (project / ".acp-agent").mkdir(parents=True)
    (project / ".acp-agent" / "config.toml").write_text(
        f'[[hooks.pre_tool_use]]\ncommand = "touch {_out(tmp_path) / "project-hook-ran"}"\n'
    )
    _user_config(tmp_path, f'[[hooks.pre_tool_use]]\ncommand = "touch {_out(tmp_path) / "user-hook-ran"}"\n')
    (project / "a.txt").write_text("alpha\n")
    replies = [calls(("read_file", {"path": "a.txt"}), id="rd"), text("ok")]
    async with project_agent(tmp_path, replies) as p:
        p.choose = _trust_choice(answer)
        await p.prompt("read a.txt")
        updates = p.updates()
    [asked] = [a for a in p.asked if a["toolCall"]["toolCallId"].startswith("trust_")]
    listed = asked["toolCall"]["content"][0]["content"]["text"]
    assert f"runs hook commands: `touch {_out(tmp_path) / 'project-hook-ran'}` at pre_tool_use" in listed
    assert (_out(tmp_path) / "project-hook-ran").exists() == (answer == "allow_once")
    assert (_out(tmp_path) / "user-hook-ran").exists()
    assert _final(updates, "rd_0")["status"] == "completed"


async def test_a_hung_hook_is_killed_at_its_timeout_and_does_not_block(tmp_path: Path) -> None:
    pid_file = _out(tmp_path) / "hook.pid"
    _user_config(
        tmp_path,
        f'[[hooks.pre_tool_use]]\nmatcher = "shell"\ncommand = "echo $$ > {pid_file}; sleep 60"\ntimeout_s = 1\n',
    )
    replies = [calls(("shell", {"command": "touch out/ran"}), id="sh"), text("ok")]
    async with project_agent(tmp_path, replies) as p:
        await p.prompt("run it")
        updates = p.updates()
        pid = int(pid_file.read_text())
        assert not _alive(pid), "the hook was killed"
    assert (_out(tmp_path) / "ran").exists(), "a failing hook does not block"
    [entry] = _hook_entries(updates)
    assert entry["title"].startswith("Hook pre_tool_use failed: echo $$")
    assert "timed out after 1 s and was killed" in entry["content"][0]["content"]["text"]


async def test_a_hung_hook_is_killed_when_the_turn_is_cancelled(tmp_path: Path) -> None:
    pid_file = _out(tmp_path) / "hook.pid"
    os.mkfifo(pid_file)
    _user_config(
        tmp_path,
        f'[[hooks.pre_tool_use]]\nmatcher = "shell"\ncommand = "echo $$ > {pid_file}; sleep 60"\ntimeout_s = 120\n',
    )
    replies = [calls(("shell", {"command": "touch out/ran"}), id="sh"), text("never")]
    async with project_agent(tmp_path, replies) as p:
        request = await p.agent.request(
            "session/prompt", {"sessionId": p.session, "prompt": [{"type": "text", "text": "run it"}]}
        )
        pid = await _pid_from(pid_file)
        assert _alive(pid)
        await p.agent.notify("session/cancel", {"sessionId": p.session})
        with anyio.fail_after(10):
            answer = await p.agent.response(request)
        assert answer["result"] == {"stopReason": "cancelled"}
        assert not _alive(pid), "the hook was killed with the turn"
    assert not (_out(tmp_path) / "ran").exists()


async def test_a_trusted_projects_hook_runs_sandboxed_and_the_users_hook_runs_as_the_user(
    tmp_path: Path,
) -> None:
    from tests.sandbox.conftest import require_landlock

    require_landlock()
    home = tmp_path / "user"
    project = tmp_path / "project"
    (project / ".acp-agent").mkdir(parents=True)
    (project / ".acp-agent" / "config.toml").write_text(
        '[[hooks.pre_tool_use]]\ncommand = "echo project >> ~/project-hook.log; echo x >> ~/.bashrc; '
        f'touch {_out(tmp_path) / "project-hook-ran"}"\nsandbox = false\n'
    )
    _user_config(
        tmp_path,
        '[[hooks.pre_tool_use]]\ncommand = "bash ~/.config/acp-agent/script.sh && echo user >> ~/hook.log"\n',
    )
    (home / ".config" / "acp-agent" / "script.sh").write_text("echo from-config >> ~/hook.log\n")
    (project / "a.txt").write_text("alpha\n")
    replies = [calls(("read_file", {"path": "a.txt"}), id="rd"), text("ok")]
    async with project_agent(tmp_path, replies, mode="accept-edits") as p:
        p.choose = _trust_choice("allow_once")
        await p.prompt("read a.txt")
    assert (_out(tmp_path) / "project-hook-ran").exists(), "the trusted project's hook ran, in the project"
    assert not (home / "project-hook.log").exists() and not (home / ".bashrc").exists()
    assert (home / "hook.log").read_text() == "from-config\nuser\n"


_STOP_SCRIPT = """#!/usr/bin/env bash
# "Don't stop until the tests pass", as written for Claude Code: block once, then let the turn end.
input=$(cat)
printf '%s\\n' "$input" >> {log}
if printf '%s' "$input" | grep -q '"stop_hook_active": true'; then
  exit 0
fi
echo '{{"decision": "block", "reason": "the tests fail: run them and fix test_parse"}}'
"""


async def test_a_stop_hook_script_that_blocks_makes_the_real_agent_take_another_step(tmp_path: Path) -> None:
    log = _out(tmp_path) / "stop.jsonl"
    script = tmp_path / "user" / ".config" / "acp-agent" / "check-tests.sh"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(_STOP_SCRIPT.format(log=log))
    script.chmod(0o755)
    _user_config(tmp_path, f'[[hooks.stop]]\ncommand = "{script}"\n')
    replies = [text("All done."), text("Fixed test_parse; the tests pass.")]
    async with project_agent(tmp_path, replies) as p:
        assert (await p.prompt("fix the parser"))["result"] == {"stopReason": "end_turn"}
        bodies, updates = p.bodies(), p.updates()
    assert len(bodies) == 2
    feedback = f"Stop hook feedback:\n[{script}]: the tests fail: run them and fix test_parse"
    assert user_messages(bodies[1])[-1] == feedback
    assert [m["role"] for m in bodies[1]["messages"][-3:]] == ["user", "assistant", "user"]
    [entry] = _hook_entries(updates)
    assert entry["title"] == f"Hook stop: {script}" and entry["kind"] == "execute"
    assert entry["status"] == "completed"
    assert entry["content"][0]["content"]["text"] == (
        "The turn goes on: the tests fail: run them and fix test_parse"
    )
    streamed = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
    assert streamed == "All done.Fixed test_parse; the tests pass."
    at_entry = updates.index(entry)
    second = next(i for i, u in enumerate(updates) if "Fixed" in json.dumps(u))
    assert at_entry < second, "the hook's effect shows before the reply it asked for"
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(s["hook_event_name"], s["stop_hook_active"]) for s in seen] == [("Stop", False), ("Stop", True)]
    assert seen[1]["last_assistant_message"] == "Fixed test_parse; the tests pass."
    async with project_agent(tmp_path, []) as q:  # session/load shows the hook's entry, not a prompt
        with anyio.fail_after(LIMIT_S):
            await q.agent.call("session/load", {"sessionId": p.session, "cwd": str(p.cwd), "mcpServers": []})
        replayed = [u for u in q.updates() if u["sessionUpdate"] != "available_commands_update"]
    kinds = [(u["sessionUpdate"], u.get("title")) for u in replayed if u["sessionUpdate"] != "usage_update"]
    assert kinds[:4] == [
        ("user_message_chunk", None),
        ("agent_message_chunk", None),
        ("tool_call", f"Hook stop: {script}"),
        ("agent_message_chunk", None),
    ]
    assert "Stop hook feedback" not in json.dumps(replayed)


async def test_a_kill_9_while_the_stop_hook_runs_keeps_the_reply_for_session_load(tmp_path: Path) -> None:
    fifo = _out(tmp_path) / "hook.pid"
    os.mkfifo(fifo)
    _user_config(
        tmp_path, f'[[hooks.stop]]\ncommand = "echo $$ > {fifo}; sleep 60; exit 2"\ntimeout_s = 120\n'
    )
    pid = 0
    try:
        async with project_agent(tmp_path, [text("All done.")]) as p:
            await p.agent.request(
                "session/prompt", {"sessionId": p.session, "prompt": [{"type": "text", "text": "fix it"}]}
            )
            pid = await _pid_from(fifo)
            p.agent.kill_hard()
            session = p.session
        async with project_agent(tmp_path, []) as q:
            cwd = str(tmp_path / "project")
            with anyio.fail_after(LIMIT_S):
                await q.agent.call("session/load", {"sessionId": session, "cwd": cwd, "mcpServers": []})
            replayed = [u for u in q.updates() if "All done." in json.dumps(u)]
        assert [u["sessionUpdate"] for u in replayed] == ["agent_message_chunk"], "the complete reply"
    finally:
        if pid and _alive(pid):  # the killed agent could not end its hook: the test does
            os.killpg(pid, signal.SIGKILL)


async def test_cancel_while_a_stop_hook_runs_kills_it_and_the_turn_ends_cancelled(tmp_path: Path) -> None:
    pid_file = _out(tmp_path) / "hook.pid"
    os.mkfifo(pid_file)
    _user_config(
        tmp_path, f'[[hooks.stop]]\ncommand = "echo $$ > {pid_file}; sleep 60; exit 2"\ntimeout_s = 120\n'
    )
    async with project_agent(tmp_path, [text("All done."), text("never")]) as p:
        request = await p.agent.request(
            "session/prompt", {"sessionId": p.session, "prompt": [{"type": "text", "text": "fix it"}]}
        )
        pid = await _pid_from(pid_file)
        await p.agent.notify("session/cancel", {"sessionId": p.session})
        with anyio.fail_after(10):
            answer = await p.agent.response(request)
        assert answer["result"] == {"stopReason": "cancelled"}
        assert not _alive(pid), "the hook was killed with the turn"
        assert len(p.bodies()) == 1, "no step after the cancel"
