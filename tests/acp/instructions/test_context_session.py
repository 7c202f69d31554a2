"""The project context in a session (real factory, in-memory editor, fake model): prompt hooks, the
session-start and stop hooks, a hook that asks, the hooks' environment, /init and the user's prompt file."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from acp_agent.session._content import user_text
from harness.testing import FakeModel, Reply
from tests.acp.coding._support import calls, editor_agent, fake, final, prompt, select, text_of

pytestmark = pytest.mark.anyio

KEY = "sk-context-test-key-0001"


def _environ(tmp: Path, toml: str = "", **extra: str) -> dict[str, str]:
    config = tmp / "user" / ".config" / "acp-agent"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(toml)
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ACP_AGENT_API_KEY": KEY, **extra}


def _out(tmp: Path) -> Path:
    """A folder inside the session's project: hooks run sandboxed, and the sandbox lets them write under
    the project's folders."""
    out = tmp / "project" / "out"
    out.mkdir(parents=True, exist_ok=True)
    return out


def _system(model: FakeModel, i: int = 0) -> str:
    return model.prompts[i].system or ""


def _user_texts(model: FakeModel, i: int = 0) -> list[str]:
    """The user messages' words (without the context the agent tells in front of a prompt)."""
    return [user_text(m) for m in model.prompts[i].messages if m.role == "user"]


def _hook_entries(editor: Any) -> list[dict[str, Any]]:
    return [
        u
        for u in editor.updates()
        if u["sessionUpdate"] == "tool_call" and str(u["toolCallId"]).startswith("hook_")
    ]


@pytest.mark.process
async def test_a_user_prompt_hook_that_blocks_keeps_the_prompt_from_the_model_which_is_told_why(
    tmp_path: Path,
) -> None:
    toml = """
[[hooks.user_prompt_submit]]
command = "grep -q 'password' && { echo 'the prompt holds a password' >&2; exit 2; } || exit 0"
"""
    model = fake(Reply(text="Your prompt was blocked."), Reply(text="fine"))
    async with editor_agent(tmp_path, model, environ=_environ(tmp_path, toml)) as (editor, sid, _):
        assert (await prompt(editor, sid, "my password is hunter2"))["stopReason"] == "end_turn"
        await prompt(editor, sid, "hello")
    sent = "\n".join(_user_texts(model, 0))
    assert "hunter2" not in sent
    assert "blocked before it reached you" in sent and "the prompt holds a password" in sent
    assert "hunter2" not in "\n".join(_user_texts(model, 1)), "not in later turns either"
    [entry] = _hook_entries(editor)
    assert entry["status"] == "failed" and entry["title"].startswith("Prompt blocked by hook: grep -q")


@pytest.mark.process
async def test_prompt_and_session_start_hooks_add_context_and_the_stop_hook_sees_the_reply(
    tmp_path: Path,
) -> None:
    seen = _out(tmp_path) / "stop.json"
    toml = f"""
[[hooks.session_start]]
command = "echo 'The staging server is down today.'"

[[hooks.user_prompt_submit]]
command = "echo '{{\\"context\\": \\"The user is on call.\\"}}'"

[[hooks.stop]]
command = "cat > {seen}"
"""
    model = fake(Reply(text="first reply"), Reply(text="second reply"))
    async with editor_agent(tmp_path, model, environ=_environ(tmp_path, toml)) as (editor, sid, _):
        await prompt(editor, sid, "one")
        await prompt(editor, sid, "two")
    assert "The staging server is down today." in _system(model, 0)
    assert "The staging server is down today." in _system(model, 1), "session-wide"
    assert any("The user is on call." in t for t in _user_texts(model, 1))
    stop = json.loads(seen.read_text())
    assert stop["event"] == "stop" and stop["last_message"] == "second reply"
    titles = [e["title"] for e in _hook_entries(editor)]
    assert titles.count("Hook session_start: echo 'The staging server is down today.'") == 1


@pytest.mark.process
async def test_a_pre_tool_hook_that_asks_puts_the_question_to_the_user_where_the_mode_would_not(
    tmp_path: Path,
) -> None:
    toml = """
[[hooks.pre_tool_use]]
matcher = "write_file"
command = "echo '{\\"decision\\": \\"ask\\", \\"reason\\": \\"generated files need a review\\"}'"
"""
    model = fake(calls(("write_file", {"path": "gen.txt", "content": "x"})), Reply(text="ok"))
    environ = _environ(tmp_path, toml, ACP_AGENT_DEFAULT_MODE="accept-edits")
    async with editor_agent(tmp_path, model, environ=environ) as (editor, sid, project):
        editor.permission = select("reject_once")
        await prompt(editor, sid, "write it")
        assert not (project / "gen.txt").exists()
        [asked] = editor.requests_of("session/request_permission")
        assert asked["toolCall"]["toolCallId"] == "call_0_write_file"
        assert final(editor, "call_0_write_file")["status"] == "failed"
        [entry] = _hook_entries(editor)
        assert "generated files need a review" in text_of(entry)


def _halting(tmp: Path) -> str:
    """A hook command (TOML-escaped) that says ``"continue": false``; its reason is not in the command,
    which the model may see as the hook's label."""
    said = _out(tmp) / "halt.json"
    said.write_text(json.dumps({"continue": False, "stopReason": "the build is frozen"}))
    return f"cat {said}"


@pytest.mark.process
@pytest.mark.parametrize(("event", "ran"), [("pre_tool_use", False), ("post_tool_use", True)])
async def test_a_tool_hook_saying_continue_false_ends_the_turn_after_its_step_telling_only_the_user(
    tmp_path: Path, event: str, ran: bool
) -> None:
    toml = f'[[hooks.{event}]]\nmatcher = "write_file"\ncommand = "{_halting(tmp_path)}"\n'
    model = fake(calls(("write_file", {"path": "gen.txt", "content": "x"})), Reply(text="ok"))
    environ = _environ(tmp_path, toml, ACP_AGENT_DEFAULT_MODE="accept-edits")
    async with editor_agent(tmp_path, model, environ=environ) as (editor, sid, project):
        assert (await prompt(editor, sid, "write it"))["stopReason"] == "end_turn"
        assert (project / "gen.txt").exists() is ran and model.calls == 1, "no step after the call's"
        assert final(editor, "call_0_write_file")["status"] == ("completed" if ran else "failed")
        [entry] = _hook_entries(editor)
        assert "The turn ends: the build is frozen" in text_of(entry)
        await prompt(editor, sid, "and now?")
    told = json.dumps([m.to_dict() for m in model.prompts[1].messages])
    assert "frozen" not in told  # (the reason is the user's)
    assert ran or "ended the turn before this call" in told


@pytest.mark.process
async def test_a_prompt_hook_saying_continue_false_ends_the_turn_before_any_model_request(
    tmp_path: Path,
) -> None:
    toml = f'[[hooks.user_prompt_submit]]\ncommand = "{_halting(tmp_path)}"\n'
    model = fake()  # a request would fail the turn: the fake has no reply
    async with editor_agent(tmp_path, model, environ=_environ(tmp_path, toml)) as (editor, sid, _):
        assert (await prompt(editor, sid, "deploy the secret plan"))["stopReason"] == "end_turn"
        [entry] = _hook_entries(editor)
        assert "The turn ends: the build is frozen" in text_of(entry)
        listed = await editor.call("session/list", {})
    assert model.calls == 0
    (session,) = [s for s in listed["sessions"] if s["sessionId"] == sid]
    assert "secret plan" not in json.dumps(session)  # (not its title either: nothing of it is saved)


@pytest.mark.process
async def test_hooks_run_in_the_project_without_the_agents_credentials(tmp_path: Path) -> None:
    dump = _out(tmp_path) / "env.txt"
    toml = f'[[hooks.pre_tool_use]]\ncommand = "env > {dump}; pwd >> {dump}"\n'
    model = fake(calls(("list_dir", {"path": "."})), Reply(text="ok"))
    environ = _environ(tmp_path, toml, OPENAI_API_KEY=KEY)
    async with editor_agent(tmp_path, model, environ=environ) as (editor, sid, project):
        await prompt(editor, sid, "list")
    seen = dump.read_text()
    assert KEY not in seen and "ACP_AGENT_API_KEY" not in seen
    assert f"ACP_AGENT_PROJECT_DIR={project}" in seen and "ACP_AGENT_HOOK_EVENT=pre_tool_use" in seen
    assert seen.strip().endswith(str(project))


async def test_init_asks_the_agent_to_write_agents_md_with_the_normal_tools(tmp_path: Path) -> None:
    model = fake(Reply(text="exploring"))
    async with editor_agent(tmp_path, model, environ=_environ(tmp_path)) as (editor, sid, _):
        await prompt(editor, sid, "/init the test layout")
    sent = _user_texts(model)[0]
    assert sent.startswith("Explore this project and write an AGENTS.md")
    assert sent.endswith("pay particular attention to: the test layout")


async def test_the_users_prompt_file_replaces_the_default_prompt(tmp_path: Path) -> None:
    (tmp_path / "mine.md").write_text("You are a pirate.\n")
    toml = f'system_prompt_file = "{tmp_path / "mine.md"}"\n'
    model = fake(Reply(text="arr"))
    async with editor_agent(tmp_path, model, environ=_environ(tmp_path, toml)) as (editor, sid, _):
        await prompt(editor, sid, "hi")
    system = _system(model)
    assert system == "You are a pirate.", "the environment goes in front of the first prompt, not here"
    assert model.prompts[0].messages[0].text.startswith("<context>\n")


async def test_an_unreadable_prompt_file_fails_session_new_with_a_clear_error(tmp_path: Path) -> None:
    mine = tmp_path / "mine.md"
    mine.write_text("You are a pirate.\n")
    toml = f'system_prompt_file = "{mine}"\n'
    async with editor_agent(tmp_path, fake(), environ=_environ(tmp_path, toml)) as (editor, _, project):
        mine.unlink()
        answer = await editor.response(
            await editor.send_request("session/new", {"cwd": str(project), "mcpServers": []})
        )
    error = answer["error"]
    assert error["data"]["errorKind"] == "configuration_error"
    assert f"system_prompt_file {mine} cannot be read" in error["message"]


@pytest.mark.process
async def test_a_hung_prompt_hook_is_killed_when_the_prompt_is_cancelled(tmp_path: Path) -> None:
    fifo = _out(tmp_path) / "hook.pid"
    os.mkfifo(fifo)
    toml = f'[[hooks.user_prompt_submit]]\ncommand = "echo $$ > {fifo}; sleep 60"\ntimeout_s = 120\n'
    model = fake(Reply(text="never"))
    async with editor_agent(tmp_path, model, environ=_environ(tmp_path, toml)) as (editor, sid, _):
        request = await editor.send_request("session/prompt", editor.prompt_params(sid, "hello"))
        with anyio.fail_after(10):
            pid = int(await anyio.to_thread.run_sync(fifo.read_text, abandon_on_cancel=True))
        await editor.notify("session/cancel", {"sessionId": sid})
        answer = await editor.response(request)
    assert answer["result"] == {"stopReason": "cancelled"}
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert model.calls == 0


@pytest.mark.process
async def test_the_users_hooks_run_as_the_user_unless_one_asks_for_the_sandbox(tmp_path: Path) -> None:
    from tests.sandbox.conftest import require_landlock

    require_landlock()
    home = tmp_path / "user"
    boxed, log = tmp_path / "boxed.txt", home / "hook.log"
    config = home / ".config" / "acp-agent"
    toml = f"""
[[hooks.pre_tool_use]]
command = "echo boxed > {boxed}"
sandbox = true

[[hooks.pre_tool_use]]
command = "cat {config}/script.txt >> ~/hook.log && echo logged >> ~/hook.log"
"""
    environ = _environ(tmp_path, toml, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    (config / "script.txt").write_text("from the config folder\n")
    model = fake(calls(("list_dir", {"path": "."})), Reply(text="ok"))
    async with editor_agent(tmp_path, model, environ=environ) as (editor, sid, _):
        await prompt(editor, sid, "list")
        [failed] = _hook_entries(editor)
    assert not boxed.exists(), "outside the project: the sandbox it asked for refused the write"
    assert log.read_text() == "from the config folder\nlogged\n", (
        "the user's own hook reads and logs as the user"
    )
    assert any(m in text_of(failed) for m in ("Permission denied", "Read-only file system"))
    assert failed["title"].startswith("Hook pre_tool_use failed: echo boxed")


def test_a_projects_hook_cannot_leave_the_sandbox(tmp_path: Path) -> None:
    from acp_agent.config import load_config

    project = tmp_path / "project"
    (project / ".acp-agent").mkdir(parents=True)
    (project / ".acp-agent" / "config.toml").write_text('[[hooks.stop]]\ncommand = "x"\nsandbox = false\n')
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert load_config(project, {}, env).hooks == (), "an untrusted project's hooks are dropped"
    [hook] = load_config(project, {}, env, trust=True).hooks
    assert hook.project and hook.sandbox


def _is_update(message: dict[str, Any], kind: str, text: str) -> bool:
    update: dict[str, Any] = message.get("params", {}).get("update", {})
    return update.get("sessionUpdate") == kind and text in json.dumps(update)


@pytest.mark.process
async def test_a_stop_hook_that_blocks_keeps_the_turn_going_until_it_passes(tmp_path: Path) -> None:
    log = _out(tmp_path) / "stop.jsonl"
    # Claude Code's idiom: block (exit 2, stderr the reason) unless the turn already goes on for a stop hook.
    toml = f"""
[[hooks.stop]]
command = "input=$(cat); echo \\"$input\\" >> {log}; echo \\"$input\\" | grep -q '\\"stop_hook_active\\": true' || {{ echo 'test_x fails' >&2; exit 2; }}"
"""
    model = fake(Reply(text="All done."), Reply(text="Fixed test_x."))
    async with editor_agent(tmp_path, model, environ=_environ(tmp_path, toml)) as (editor, sid, _):
        assert (await prompt(editor, sid, "fix it"))["stopReason"] == "end_turn"
        [entry] = _hook_entries(editor)
        chunks = [u for u in editor.updates() if u["sessionUpdate"] == "agent_message_chunk"]
    assert entry["title"].startswith("Hook stop: input=$(cat)") and entry["status"] == "completed"
    assert text_of(entry) == "The turn goes on: test_x fails"
    assert "Fixed test_x." in "".join(c["content"]["text"] for c in chunks), "the further reply streams"
    told = model.prompts[1].messages[-1].text
    assert told.startswith("Stop hook feedback:\n[input=$(cat)") and told.endswith("]: test_x fails")
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(s["stop_hook_active"], s["last_message"]) for s in seen] == [
        (False, "All done."),
        (True, "Fixed test_x."),
    ]
    assert seen[0]["hook_event_name"] == "Stop"


@pytest.mark.process
async def test_cancel_while_the_continuation_streams_ends_the_turn_cancelled(tmp_path: Path) -> None:
    toml = """
[[hooks.stop]]
command = "echo 'not yet' >&2; exit 2"
"""
    model = fake(Reply(text="All done."), Reply(text="Working on it", hang=True))
    async with editor_agent(tmp_path, model, environ=_environ(tmp_path, toml)) as (editor, sid, _):
        async with anyio.create_task_group() as tg:

            async def cancel_when_streaming() -> None:
                await editor.wait_for(lambda m: _is_update(m, "agent_message_chunk", "Working on it"))
                await editor.notify("session/cancel", {"sessionId": sid})

            tg.start_soon(cancel_when_streaming)
            with anyio.fail_after(10):
                assert (await prompt(editor, sid, "fix it"))["stopReason"] == "cancelled"
        assert model.calls == 2


@pytest.mark.process
async def test_cancel_while_a_stop_hook_runs_kills_it_and_ends_the_turn_cancelled(tmp_path: Path) -> None:
    from tests.sandbox.test_namespaces import running, wait_gone

    fifo = _out(tmp_path) / "started"
    os.mkfifo(fifo)
    marker = f"acpstophook{os.getpid()}"
    sleeper = _out(tmp_path) / marker  # a copy of sleep named for this test: found by name after
    shutil.copy(shutil.which("sleep") or "/bin/sleep", sleeper)
    toml = f"""
[[hooks.stop]]
command = "echo started > {fifo}; {sleeper} 60; exit 2"
timeout_s = 120
"""
    model = fake(Reply(text="All done."))
    async with editor_agent(tmp_path, model, environ=_environ(tmp_path, toml)) as (editor, sid, _):
        async with anyio.create_task_group() as tg:

            async def cancel_when_running() -> None:
                await anyio.to_thread.run_sync(fifo.read_text, abandon_on_cancel=True)
                await editor.notify("session/cancel", {"sessionId": sid})

            tg.start_soon(cancel_when_running)
            with anyio.fail_after(10):
                assert (await prompt(editor, sid, "fix it"))["stopReason"] == "cancelled"
        assert model.calls == 1
    await wait_gone(marker)
    assert not running(marker)


@pytest.mark.process
async def test_a_stop_hooks_reason_reaches_the_model_without_the_agents_credentials(tmp_path: Path) -> None:
    toml = f"""
[[hooks.stop]]
command = "grep -q '\\"stop_hook_active\\": true' && exit 0; echo 'the key is {KEY}, use it' >&2; exit 2"
"""
    model = fake(Reply(text="done"), Reply(text="ok"))
    async with editor_agent(tmp_path, model, environ=_environ(tmp_path, toml)) as (editor, sid, _):
        await prompt(editor, sid, "go")
        shown = json.dumps(_hook_entries(editor))
    told = model.prompts[1].messages[-1].text
    assert told.startswith("Stop hook feedback:") and told.endswith(", use it")
    assert KEY not in told and KEY not in shown
