"""The coding agent through an in-memory editor: tools through the editor, permissions, modes, rich tool
calls, commands, plans, escapes and bad input. Real factory, fake model, both anyio backends."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from harness.testing import Reply
from tests.acp.coding._support import (
    calls,
    cancelled,
    contents,
    editor_agent,
    fake,
    final,
    last,
    prompt,
    select,
    text_of,
    tool_updates,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


# --- session responses, modes, options, commands --------------------------------------------------


@pytest.mark.process
async def test_session_new_offers_modes_config_options_and_then_commands(tmp_path: Path) -> None:
    async with editor_agent(tmp_path, fake()) as (editor, sid, _):
        answer = next(m for m in editor.messages if m.get("result", {}).get("sessionId") == sid)
        modes = answer["result"]["modes"]
        assert modes["currentModeId"] == "default"
        offered = [m["id"] for m in modes["availableModes"]]
        assert offered[:4] == ["read-only", "default", "accept-edits", "plan"]
        assert ("full-access" in offered) == (os.geteuid() != 0)
        options = {o["id"]: o for o in answer["result"]["configOptions"]}
        assert options["mode"]["currentValue"] == "default" and options["mode"]["category"] == "mode"
        assert options["model"]["category"] == "model"
        update = await editor.wait_for(
            lambda m: (
                m.get("method") == "session/update"
                and m["params"]["update"]["sessionUpdate"] == "available_commands_update"
            )
        )
        assert editor.messages.index(update) > editor.messages.index(answer)
        names = [c["name"] for c in update["params"]["update"]["availableCommands"]]
        assert {"mode", "model", "undo"} <= set(names)


async def test_default_mode_comes_from_the_configuration(tmp_path: Path) -> None:
    async with editor_agent(tmp_path, fake(), mode="accept-edits") as (editor, sid, _):
        answer = next(m for m in editor.messages if m.get("result", {}).get("sessionId") == sid)
        assert answer["result"]["modes"]["currentModeId"] == "accept-edits"


async def test_set_mode_sends_current_mode_update_and_rejects_unknown_modes(tmp_path: Path) -> None:
    async with editor_agent(tmp_path, fake()) as (editor, sid, _):
        assert await editor.call("session/set_mode", {"sessionId": sid, "modeId": "plan"}) == {}
        await editor.wait_for(
            lambda m: (
                m.get("method") == "session/update" and m["params"]["update"].get("currentModeId") == "plan"
            )
        )
        bad = await editor.response(
            await editor.send_request("session/set_mode", {"sessionId": sid, "modeId": "yolo"})
        )
        assert bad["error"]["code"] == -32602
        result = await editor.call(
            "session/set_config_option", {"sessionId": sid, "configId": "mode", "value": "read-only"}
        )
        mode = next(o for o in result["configOptions"] if o["id"] == "mode")
        assert mode["currentValue"] == "read-only"
        await editor.wait_for(
            lambda m: (
                m.get("method") == "session/update"
                and m["params"]["update"].get("currentModeId") == "read-only"
            )
        )


async def test_an_error_in_the_users_config_fails_session_new_but_initialize_answers(tmp_path: Path) -> None:
    cfg = tmp_path / "user" / ".config" / "acp-agent"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text('default_mode = "yolo"\nbogus = 1\n')
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / ".git").mkdir()
    with pytest.raises(BaseExceptionGroup) as failure:
        async with editor_agent(tmp_path, fake()):
            pass
    text = str(_first_leaf(failure.value))
    assert "default_mode" in text and "bogus" in text and "configuration_error" in text


async def test_an_error_in_a_projects_config_skips_its_values_and_the_session_works(tmp_path: Path) -> None:
    cfg = tmp_path / "project" / ".acp-agent"
    cfg.mkdir(parents=True)
    (cfg / "config.toml").write_text('default_mode = "yolo"\nbogus = 1\n')
    (tmp_path / "project" / ".git").mkdir()
    async with editor_agent(tmp_path, fake()) as (_editor, sid, _project):
        assert sid


def _first_leaf(error: BaseException) -> BaseException:
    while isinstance(error, BaseExceptionGroup):
        error = cast(BaseExceptionGroup[BaseException], error).exceptions[0]
    return error


# --- tools through the editor -----------------------------------------------------------------------


async def test_edit_in_default_mode_asks_with_the_diff_and_writes_through_the_editor(tmp_path: Path) -> None:
    model = fake(
        calls(("edit_file", {"path": "app.py", "old_text": "x = 1", "new_text": "x = 2"})),
        Reply(text="done"),
    )
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "app.py").write_text("x = 1\n")
    async with editor_agent(tmp_path, model) as (editor, sid, project):
        assert (await prompt(editor, sid, "edit"))["stopReason"] == "end_turn"
        asked = editor.requests_of("session/request_permission")
        assert len(asked) == 1
        tool_call = asked[0]["toolCall"]
        assert tool_call["title"] == "Edit app.py" and tool_call["kind"] == "edit"
        assert tool_call["content"][0] == {
            "type": "diff",
            "path": str(project.resolve() / "app.py"),
            "oldText": "x = 1\n",
            "newText": "x = 2\n",
        }
        assert {o["kind"] for o in asked[0]["options"]} == {
            "allow_once",
            "allow_always",
            "reject_once",
            "reject_always",
        }
        assert editor.requests_of("fs/write_text_file")[0]["content"] == "x = 2\n"
        assert (project / "app.py").read_text() == "x = 2\n"
        ups = tool_updates(editor, "call_0_edit_file")
        statuses = [u.get("status") for u in ups if u.get("status")]
        assert statuses == ["pending", "in_progress", "completed"]
        # in_progress only after the permission was answered
        perm_at = next(
            i for i, m in enumerate(editor.messages) if m.get("method") == "session/request_permission"
        )
        running_at = next(
            i
            for i, m in enumerate(editor.messages)
            if m.get("method") == "session/update" and m["params"]["update"].get("status") == "in_progress"
        )
        assert running_at > perm_at
        end = final(editor, "call_0_edit_file")
        assert end["content"][0]["type"] == "diff" and end["content"][0]["newText"] == "x = 2\n"
        assert end["locations"] == [{"path": str(project.resolve() / "app.py"), "line": 1}]
        ready = next(u for u in ups if u.get("rawInput"))
        assert ready["rawInput"]["path"] == "app.py" and ready["title"] == "Edit app.py"


async def test_accept_edits_without_a_sandbox_runs_the_edit_without_asking_but_asks_for_shell(
    tmp_path: Path,
) -> None:
    model = fake(
        calls(("write_file", {"path": "new.txt", "content": "hi\n"})),
        calls(("shell", {"command": "echo ran > ran.txt"})),
        Reply(text="done"),
    )
    no_sandbox = {"ACP_AGENT_SANDBOX_UNAVAILABLE": "1"}
    async with editor_agent(tmp_path, model, mode="accept-edits", environ=no_sandbox) as (
        editor,
        sid,
        project,
    ):
        editor.permission = select("reject_once")
        await prompt(editor, sid, "go")
        asked = editor.requests_of("session/request_permission")
        assert [a["toolCall"]["kind"] for a in asked] == ["execute"]
        assert (project / "new.txt").read_text() == "hi\n"
        assert not (project / "ran.txt").exists()
        new_diff = final(editor, "call_0_write_file")["content"][0]
        assert new_diff["oldText"] is None and new_diff["newText"] == "hi\n"
        shell_end = last(editor, "call_0_shell")  # rejected: failed (only Zed marks it itself)
        assert shell_end["status"] == "failed" and "rejected" in text_of(shell_end)
        assert not any(u.get("status") == "in_progress" for u in tool_updates(editor, "call_0_shell"))


async def test_read_sees_the_unsaved_buffer_through_the_editor(tmp_path: Path) -> None:
    model = fake(calls(("read_file", {"path": "a.py"})), Reply(text="ok"))
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "a.py").write_text("on disk\n")
    async with editor_agent(tmp_path, model) as (editor, sid, project):
        editor.buffers[str(project.resolve() / "a.py")] = "unsaved buffer\n"
        await prompt(editor, sid, "read")
        assert editor.requests_of("session/request_permission") == []
        end = final(editor, "call_0_read_file")
        assert "unsaved buffer" in text_of(end) and end["status"] == "completed"
        assert end["locations"][0]["path"] == str(project.resolve() / "a.py")


async def test_a_refused_write_falls_back_to_the_disk(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    model = fake(calls(("write_file", {"path": str(other / "x.txt"), "content": "y"})), Reply(text="ok"))
    async with editor_agent(tmp_path, model, mode="accept-edits") as (editor, sid, project):
        await editor.call("session/close", {"sessionId": sid})
        result = await editor.call(
            "session/new",
            {"cwd": str(project), "mcpServers": [], "additionalDirectories": [str(other)]},
        )
        await prompt(editor, result["sessionId"], "write")
        assert (other / "x.txt").read_text() == "y"
        assert len(editor.requests_of("fs/write_text_file")) == 1  # asked, refused (-32002), then disk


async def test_without_fs_capability_the_disk_is_used(tmp_path: Path) -> None:
    model = fake(calls(("write_file", {"path": "d.txt", "content": "z"})), Reply(text="ok"))
    async with editor_agent(tmp_path, model, mode="accept-edits", capabilities={}) as (editor, sid, project):
        await prompt(editor, sid, "write")
        assert (project / "d.txt").read_text() == "z"
        assert editor.requests_of("fs/write_text_file") == []


# --- permissions -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "client_info",
    [None, {"name": "toad", "version": "0.5"}, {"name": "acpx"}],
    ids=["unnamed", "toad", "acpx"],
)
async def test_reject_once_leaves_the_file_and_ends_the_call_failed(
    tmp_path: Path, client_info: dict[str, Any] | None
) -> None:
    model = fake(calls(("write_file", {"path": "f.txt", "content": "new"})), Reply(text="ok"))
    async with editor_agent(tmp_path, model, client_info=client_info) as (editor, sid, project):
        editor.permission = select("reject_once")
        await prompt(editor, sid, "go")
        assert not (project / "f.txt").exists()
        end = last(editor, "call_0_write_file")
        assert end["status"] == "failed" and "rejected" in text_of(end)


@pytest.mark.parametrize("name", ["Zed", "zed"])
async def test_in_zed_reject_once_sends_no_status_over_zeds_own_mark(tmp_path: Path, name: str) -> None:
    model = fake(calls(("write_file", {"path": "f.txt", "content": "new"})), Reply(text="ok"))
    async with editor_agent(tmp_path, model, client_info={"name": name}) as (editor, sid, project):
        editor.permission = select("reject_once")
        await prompt(editor, sid, "go")
        assert not (project / "f.txt").exists()
        end = last(editor, "call_0_write_file")
        assert "status" not in end and "rejected" in text_of(end)
        assert all(u.get("status") != "failed" for u in tool_updates(editor, "call_0_write_file"))


@pytest.mark.process
async def test_allow_always_is_remembered_in_the_project_file_across_restarts(tmp_path: Path) -> None:
    first = fake(calls(("shell", {"command": "git status"})), Reply(text="ok"))
    (tmp_path / "project").mkdir()
    async with editor_agent(tmp_path, first) as (editor, sid, _):
        editor.permission = select("allow_always")
        await prompt(editor, sid, "go")
        assert len(editor.requests_of("session/request_permission")) == 1
    stored = (tmp_path / "project" / ".acp-agent" / "permissions.jsonl").read_text()
    rules = [json.loads(line) for line in stored.splitlines() if line and not line.startswith("#")]
    assert rules == [{"verdict": "allow", "kind": "command", "tool": "shell", "command": "git status"}]
    second = fake(
        calls(("shell", {"command": "git status --short"}), ("shell", {"command": "ls"})), Reply(text="ok")
    )
    async with editor_agent(tmp_path, second) as (editor, sid, _):
        editor.permission = select("reject_once")
        await prompt(editor, sid, "go")
        asked = editor.requests_of("session/request_permission")
        assert [a["toolCall"]["title"] for a in asked] == ["ls"]  # git status ran without asking


async def test_reject_always_is_remembered_too(tmp_path: Path) -> None:
    model = fake(
        calls(("shell", {"command": "rm -rf build"})),
        calls(("shell", {"command": "rm -rf dist"})),
        Reply(text="ok"),
    )
    async with editor_agent(tmp_path, model) as (editor, sid, _):
        editor.permission = select("reject_always")
        await prompt(editor, sid, "go")
        assert len(editor.requests_of("session/request_permission")) == 1
        second = final(editor, "call_0_shell")
        assert "Denied" in text_of(second)


async def test_cancelled_permission_ends_the_turn_cancelled_without_running(tmp_path: Path) -> None:
    model = fake(calls(("write_file", {"path": "c.txt", "content": "x"})), Reply(text="never"))
    async with editor_agent(tmp_path, model) as (editor, sid, project):
        editor.permission = cancelled
        assert (await prompt(editor, sid, "go"))["stopReason"] == "cancelled"
        assert not (project / "c.txt").exists()
        assert model.calls == 1


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"outcome": {"outcome": "allow"}}, "outcome 'allow' is neither"),
        ({"outcome": "selected"}, "no outcome object"),
        ({}, "no outcome object"),
        ({"outcome": {"outcome": "selected", "optionId": "yes_please"}}, "optionId 'yes_please' is not one"),
        ({"outcome": {"outcome": "selected"}}, "optionId None is not one"),
    ],
    ids=["unknown outcome", "outcome a string", "empty", "unknown option", "no option"],
)
async def test_a_malformed_permission_answer_is_logged_told_to_the_model_and_the_turn_goes_on(
    tmp_path: Path, answer: dict[str, Any], says: str, caplog: pytest.LogCaptureFixture
) -> None:
    model = fake(calls(("write_file", {"path": "m.txt", "content": "x"})), Reply(text="understood"))
    async with editor_agent(tmp_path, model) as (editor, sid, project):
        editor.permission = lambda _params: answer
        with caplog.at_level("WARNING"):
            assert (await prompt(editor, sid, "go"))["stopReason"] == "end_turn"
        assert not (project / "m.txt").exists()
        assert model.calls == 2  # the turn went on after the call
        told = repr(model.prompts[-1].messages)
        assert "malformed" in told and says in told
        assert any(
            "malformed session/request_permission answer" in r.message and says in r.message
            for r in caplog.records
        )
        assert final(editor, "call_0_write_file")["status"] == "failed"


async def test_the_shell_permission_shows_the_command_once_and_a_long_one_whole_in_a_block(
    tmp_path: Path,
) -> None:
    long = "echo " + "x" * 1200
    model = fake(
        calls(("shell", {"command": "git status"})), calls(("shell", {"command": long})), Reply(text="ok")
    )
    async with editor_agent(tmp_path, model) as (editor, sid, _project):
        editor.permission = select("reject_once")
        await prompt(editor, sid, "go")
        short_ask, long_ask = [a["toolCall"] for a in editor.requests_of("session/request_permission")]
        assert short_ask["title"] == "git status"
        assert "git status" not in json.dumps(short_ask.get("content") or [])
        assert long_ask["title"].endswith("…") and long in json.dumps(long_ask["content"])


async def test_a_cancelled_permission_leaves_no_awaiting_input_placeholder_and_the_next_turn_runs(
    tmp_path: Path,
) -> None:
    model = fake(
        calls(("write_file", {"path": "c.txt", "content": "x"})),
        Reply(text="next turn"),
    )
    async with editor_agent(tmp_path, model) as (editor, sid, project):
        editor.permission = cancelled
        assert (await prompt(editor, sid, "go"))["stopReason"] == "cancelled"
        shown = json.dumps(tool_updates(editor, "call_0_write_file"))
        assert "awaiting input" not in shown and "Cancelled" in text_of(last(editor, "call_0_write_file"))
        assert (await prompt(editor, sid, "again"))["stopReason"] == "end_turn"
        assert not (project / "c.txt").exists()


@pytest.mark.process
async def test_mode_switch_mid_turn_applies_to_the_next_call(tmp_path: Path) -> None:
    model = fake(
        calls(("shell", {"command": "echo one"})),
        calls(("write_file", {"path": "w.txt", "content": "w"})),
        Reply(text="ok"),
    )
    async with editor_agent(tmp_path, model) as (editor, sid, project):

        def allow_and_switch(p: dict[str, Any]) -> dict[str, Any]:
            return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

        editor.permission = allow_and_switch
        async with anyio.create_task_group() as tg:

            async def switch() -> None:
                await editor.permission_asked.wait()
                await editor.call("session/set_mode", {"sessionId": sid, "modeId": "read-only"})

            tg.start_soon(switch)
            await prompt(editor, sid, "go")
        end = final(editor, "call_0_write_file")
        assert end["status"] == "failed" and "read-only" in text_of(end)
        assert not (project / "w.txt").exists()


# --- escapes and bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["../outside.txt", "/etc/passwd", "link/secret.txt", "sub/../../outside.txt"],
    ids=["dotdot", "absolute", "symlink", "nested-dotdot"],
)
async def test_escape_attempts_are_refused_with_a_clear_error(tmp_path: Path, path: str) -> None:
    (tmp_path / "outside.txt").write_text("secret")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret.txt").write_text("secret")
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "link").symlink_to(tmp_path / "elsewhere")
    model = fake(calls(("read_file", {"path": path})), Reply(text="ok"))
    async with editor_agent(tmp_path, model) as (editor, sid, _):
        await prompt(editor, sid, "read")
        end = final(editor, "call_0_read_file")
        assert end["status"] == "failed"
        assert "outside" in text_of(end) or "leads out" in text_of(end)
        assert "secret" not in text_of(end).replace("secret.txt", "")
        assert editor.requests_of("fs/read_text_file") == []


async def test_a_write_outside_the_roots_is_refused_without_asking_even_in_accept_edits(
    tmp_path: Path,
) -> None:
    target = tmp_path / "outside.txt"
    model = fake(calls(("write_file", {"path": str(target), "content": "x"})), Reply(text="ok"))
    async with editor_agent(tmp_path, model, mode="accept-edits") as (editor, sid, _):
        editor.permission = select("allow_once")  # were it asked, it would be allowed: it is not asked
        await prompt(editor, sid, "go")
        assert editor.requests_of("session/request_permission") == []
        end = final(editor, "call_0_write_file")
        assert end["status"] == "failed" and "outside" in text_of(end)
        assert not target.exists()


@pytest.mark.parametrize(
    ("name", "tool_input", "expected"),
    [
        ("edit_file", {"path": "a.txt", "new_text": "x"}, "invalid input"),
        ("edit_file", {"path": "a.txt", "old_text": "missing", "new_text": "x"}, "not found"),
        ("edit_file", {"path": "a.txt", "old_text": "dup", "new_text": "x"}, "2"),
        ("shell", {"command": ""}, "invalid input"),
        ("read_file", {"path": ""}, "empty path"),
        ("apply_patch", {"patch": "not a patch"}, "apply_patch"),
    ],
    ids=[
        "missing-field",
        "old-text-missing",
        "old-text-ambiguous",
        "empty-command",
        "empty-path",
        "bad-patch",
    ],
)
async def test_bad_tool_input_fails_the_call_clearly(
    tmp_path: Path, name: str, tool_input: dict[str, Any], expected: str
) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "a.txt").write_text("dup\ndup\n")
    model = fake(calls((name, tool_input)), Reply(text="ok"))
    async with editor_agent(tmp_path, model, mode="accept-edits") as (editor, sid, project):
        editor.permission = select("allow_once")
        assert (await prompt(editor, sid, "go"))["stopReason"] == "end_turn"
        end = final(editor, f"call_0_{name}")
        assert end["status"] == "failed"
        assert expected in text_of(end), text_of(end)
        assert (project / "a.txt").read_text() == "dup\ndup\n"


# --- shell ----------------------------------------------------------------------------------------------


@pytest.mark.process
async def test_shell_runs_in_the_editor_terminal_embedded_in_the_call(tmp_path: Path) -> None:
    model = fake(calls(("shell", {"command": "echo hello; exit 3"})), Reply(text="ok"))
    caps = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}
    no_sandbox = {"ACP_AGENT_SANDBOX_UNAVAILABLE": "1"}  # the command line as given (tests/sandbox: wrapped)
    async with editor_agent(tmp_path, model, capabilities=caps, environ=no_sandbox) as (editor, sid, _):
        await prompt(editor, sid, "run")
        created = editor.requests_of("terminal/create")
        assert created[0]["command"] == "echo hello; exit 3" and "args" not in created[0]
        assert "outputByteLimit" not in created[0]  # Zed keeps the start over a limit: the tail would be lost
        tid = next(iter(editor.terminals))
        assert editor.terminals[tid]["released"]
        ups = tool_updates(editor, "call_0_shell")
        assert any(c == {"type": "terminal", "terminalId": tid} for u in ups for c in contents(u))
        end = final(editor, "call_0_shell")
        assert "content" not in end  # released before it: naming the terminal would make Zed drop the update
        assert end["rawOutput"]["exit_code"] == 3 and "hello" in end["rawOutput"]["output"]
        assert ups[0]["title"] == "shell" or any(u.get("title") == "echo hello; exit 3" for u in ups)


@pytest.mark.process
async def test_cancel_during_an_editor_terminal_kills_then_releases(tmp_path: Path) -> None:
    model = fake(calls(("shell", {"command": "sleep 60"})), Reply(text="never"))
    caps = {"terminal": True}
    async with editor_agent(tmp_path, model, capabilities=caps, mode="accept-edits") as (editor, sid, _):
        editor.permission = select("allow_once")
        async with anyio.create_task_group() as tg:

            async def cancel_when_running() -> None:
                await editor.terminal_created.wait()
                await editor.notify("session/cancel", {"sessionId": sid})

            tg.start_soon(cancel_when_running)
            with anyio.fail_after(10):
                assert (await prompt(editor, sid, "run"))["stopReason"] == "cancelled"
        t = next(iter(editor.terminals.values()))
        with anyio.fail_after(10):
            await t["done"].wait()
        assert t["killed"] and t["released"]
        methods = [r["method"] for r in editor.requests if r["method"].startswith("terminal/")]
        assert methods.index("terminal/kill") < methods.index("terminal/release")


@pytest.mark.process
async def test_a_cancel_that_comes_while_the_editor_starts_the_terminal_still_kills_and_releases_it(
    tmp_path: Path,
) -> None:
    # The editor starts the command before it answers terminal/create: a cancel read before the answer
    # must not lose the terminal's id (its command, and what it left in the background, would run on).
    model = fake(calls(("shell", {"command": "sleep 60"})), Reply(text="never"))
    caps = {"terminal": True}
    async with editor_agent(tmp_path, model, capabilities=caps, mode="accept-edits") as (editor, sid, _):
        answer = editor.handle

        async def cancel_before_answering(method: str, p: dict[str, Any], /) -> Any:
            result = await answer(method, p)
            if method == "terminal/create":
                await editor.notify("session/cancel", {"sessionId": sid})
                # An agent that dropped the create ends the turn now; one that waits for the id does not.
                with anyio.move_on_after(1):
                    await editor.wait_for(lambda m: "stopReason" in (m.get("result") or {}))
            return result

        editor.handle = cancel_before_answering
        with anyio.fail_after(10):
            assert (await prompt(editor, sid, "run"))["stopReason"] == "cancelled"
        t = next(iter(editor.terminals.values()))
        with anyio.fail_after(10):
            await t["done"].wait()
        assert t["killed"] and t["released"]


@pytest.mark.process
async def test_cancel_during_a_local_shell_kills_its_process_group(tmp_path: Path) -> None:
    from tests.sandbox.test_namespaces import running, wait_gone

    (tmp_path / "project" / "run").mkdir(parents=True)
    pidfile = tmp_path / "project" / "run" / "pid"  # inside the project: the sandbox allows it
    # A copy of sleep named for this test: a sandboxed command's $! is its PID namespace's, so the
    # process is found by name from outside.
    marker = f"acpcancel{os.getpid()}"
    sleeper = tmp_path / "project" / "run" / marker
    shutil.copy(shutil.which("sleep") or "/bin/sleep", sleeper)
    command = f"{sleeper} 60 & echo $! > {pidfile}; wait"
    model = fake(calls(("shell", {"command": command})), Reply(text="never"))
    async with editor_agent(tmp_path, model, capabilities={}) as (editor, sid, _):
        editor.permission = select("allow_once")
        async with anyio.create_task_group() as tg:

            async def cancel_when_started() -> None:
                with anyio.fail_after(10):
                    while not pidfile.exists() or not pidfile.read_text().strip():  # noqa: ASYNC110
                        await anyio.sleep(0.02)  # a file written by another process: no event
                assert running(marker)
                await editor.notify("session/cancel", {"sessionId": sid})

            tg.start_soon(cancel_when_started)
            assert (await prompt(editor, sid, "run"))["stopReason"] == "cancelled"
        await wait_gone(marker)


@pytest.mark.process
@pytest.mark.parametrize("key", ["terminal_output", "terminal_output_delta"])  # Zed's, JetBrains'
async def test_local_shell_streams_with_the_terminal_meta_the_client_advertised(
    tmp_path: Path, key: str
) -> None:
    model = fake(calls(("shell", {"command": "echo streamed"})), Reply(text="ok"))
    caps = {"_meta": {key: True}}
    async with editor_agent(tmp_path, model, capabilities=caps, mode="accept-edits") as (
        editor,
        sid,
        _,
    ):
        editor.permission = select("allow_once")
        await prompt(editor, sid, "run")
        ups = tool_updates(editor, "call_0_shell")
        metas: list[dict[str, Any]] = [u.get("_meta") or {} for u in ups]
        assert any("terminal_info" in m for m in metas)
        assert "".join(m[key]["data"] for m in metas if key in m) == "streamed\n"
        other = "terminal_output_delta" if key == "terminal_output" else "terminal_output"
        assert not any(other in m for m in metas)
        assert metas[-1]["terminal_exit"] == {"terminal_id": "call_0_shell", "exit_code": 0, "signal": None}
        assert final(editor, "call_0_shell")["content"] == [
            {"type": "terminal", "terminalId": "call_0_shell"}
        ]


@pytest.mark.process
async def test_local_shell_output_is_text_content_without_terminal_support(tmp_path: Path) -> None:
    model = fake(calls(("shell", {"command": "echo plain"})), Reply(text="ok"))
    async with editor_agent(tmp_path, model, capabilities={}) as (editor, sid, _):
        await prompt(editor, sid, "run")
        ups = tool_updates(editor, "call_0_shell")
        assert any("plain" in text_of(u) for u in ups if u.get("status") is None)
        assert "plain" in text_of(final(editor, "call_0_shell"))


# --- commands, plan, usage, questions, prompt content ---------------------------------------------------


async def test_slash_undo_reverts_the_last_edit_without_calling_the_model(tmp_path: Path) -> None:
    model = fake(calls(("write_file", {"path": "u.txt", "content": "after"})), Reply(text="ok"))
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "u.txt").write_text("before")
    async with editor_agent(tmp_path, model, mode="accept-edits") as (editor, sid, project):
        await prompt(editor, sid, "write")
        assert (project / "u.txt").read_text() == "after"
        assert (await prompt(editor, sid, "/undo"))["stopReason"] == "end_turn"
        assert (project / "u.txt").read_text() == "before"
        assert model.calls == 2
        reply = [u for u in editor.updates(sid) if u["sessionUpdate"] == "agent_message_chunk"][-1]
        assert "Undid write_file u.txt" in reply["content"]["text"]


async def test_slash_mode_switches_the_mode(tmp_path: Path) -> None:
    async with editor_agent(tmp_path, fake()) as (editor, sid, _):
        await prompt(editor, sid, "/mode plan")
        await editor.wait_for(
            lambda m: (
                m.get("method") == "session/update" and m["params"]["update"].get("currentModeId") == "plan"
            )
        )
        await prompt(editor, sid, "/mode nonsense")
        reply = [u for u in editor.updates(sid) if u["sessionUpdate"] == "agent_message_chunk"][-1]
        assert "unknown mode" in reply["content"]["text"]


async def test_plan_tools_send_plan_updates(tmp_path: Path) -> None:
    model = fake(
        calls(("plan_set", {"items": [{"content": "read"}, {"content": "fix", "priority": "high"}]})),
        calls(("plan_update", {"index": 1, "status": "completed"})),
        Reply(text="ok"),
    )
    async with editor_agent(tmp_path, model, mode="read-only") as (editor, sid, _):
        await prompt(editor, sid, "plan")
        plans = [u["entries"] for u in editor.updates(sid) if u["sessionUpdate"] == "plan"]
        assert plans[0] == [
            {"content": "read", "status": "pending", "priority": "medium"},
            {"content": "fix", "status": "pending", "priority": "high"},
        ]
        assert plans[-1][0]["status"] == "completed"


async def test_usage_update_after_each_step_when_the_window_is_known(tmp_path: Path) -> None:
    from harness import Usage

    model = fake(
        Reply(tool_calls=[("list_dir", {"path": "."}, "c1")], usage=Usage(100, 20)),
        Reply(text="ok", usage=Usage(150, 10)),
    )
    async with editor_agent(tmp_path, model, flags={"model": "claude-test"}) as (editor, sid, _):
        await prompt(editor, sid, "go")
        usage = [u for u in editor.updates(sid) if u["sessionUpdate"] == "usage_update"]
        assert [(u["used"], u["size"]) for u in usage] == [(120, 200_000), (160, 200_000)]


async def test_plan_exit_asks_through_elicitation_and_switches_mode(tmp_path: Path) -> None:
    model = fake(calls(("plan_exit", {"summary": "1. fix"})), Reply(text="ok"))
    caps: dict[str, Any] = {"elicitation": {"form": {}}}
    async with editor_agent(tmp_path, model, capabilities=caps, mode="plan") as (editor, sid, _):
        editor.elicit = lambda p: {"action": "accept", "content": {"answer": "accept-edits"}}
        await prompt(editor, sid, "plan")
        asked = editor.requests_of("elicitation/create")
        assert asked[0]["mode"] == "form" and asked[0]["toolCallId"] == "call_0_plan_exit"
        assert asked[0]["requestedSchema"]["properties"]["answer"]["enum"][0] == "accept-edits"
        assert any(u.get("currentModeId") == "accept-edits" for u in editor.updates(sid))


async def test_a_question_without_elicitation_is_a_permission_request_per_choice(tmp_path: Path) -> None:
    model = fake(calls(("plan_exit", {})), Reply(text="ok"))
    async with editor_agent(tmp_path, model, capabilities={}, mode="plan") as (editor, sid, _):
        editor.permission = select("choice_1")
        await prompt(editor, sid, "plan")
        asked = editor.requests_of("session/request_permission")
        assert [o["name"] for o in asked[0]["options"]][:3] == ["accept-edits", "default", "plan"]
        assert any(u.get("currentModeId") == "default" for u in editor.updates(sid))


async def test_resource_links_are_read_into_the_prompt_within_the_roots(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "notes.md").write_text("linked text")
    (tmp_path / "secret.md").write_text("never")
    model = fake(Reply(text="ok"))
    async with editor_agent(tmp_path, model) as (editor, sid, project):
        links = [
            {"type": "resource_link", "name": "notes", "uri": f"file://{project / 'notes.md'}"},
            {"type": "resource_link", "name": "secret", "uri": f"file://{tmp_path / 'secret.md'}"},
        ]
        await prompt(editor, sid, "see", links)
        sent = model.prompts[0].messages[-1].text
        assert "linked text" in sent and "never" not in sent
