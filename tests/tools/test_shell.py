"""shell: streaming, exit codes, timeouts and cancellation that kill the whole process group, output caps."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import Call, ToolCall
from harness.testing import call_tool
from harness.tools import CommandRequest, CommandRunner, Root, Shell
from harness.tools.shell import OutputSink

pytestmark = pytest.mark.anyio


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")  # a zombie is dead, awaiting its reaper


async def _wait_dead(*pids: int) -> None:
    with anyio.fail_after(10):
        while any(_alive(p) for p in pids):  # noqa: ASYNC110 (process death offers no event to wait on)
            await anyio.sleep(0.02)


# Prints the pids of bash and of a background grandchild, then blocks in a foreground sleep.
SPAWN = "sleep 300 & echo bg=$!; echo sh=$$; echo ready; sleep 300"


def _pids(output: str) -> tuple[int, int]:
    vals = dict(line.split("=") for line in output.splitlines() if "=" in line)
    return int(vals["sh"]), int(vals["bg"])


class _Host:
    """A call host that signals when the command printed ``ready``, and can raise the cancel flag."""

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.ready = anyio.Event()
        self.cancelled = False

    async def emit_progress(self, call_id: str, value: Any) -> None:
        self.chunks.append(value["output"])
        if "ready" in "".join(self.chunks):
            self.ready.set()

    async def emit_event(self, event: Any) -> None:
        pass

    def is_cancelled(self) -> bool:
        return self.cancelled


def _call(shell: Shell, host: _Host, command: str) -> Call:
    return Call(ToolCall("c1", "shell", {"command": command}), host=host, spec=shell.spec())


@pytest.mark.process
async def test_output_streams_as_progress_and_the_result_has_the_exit_code(tmp_path: Path) -> None:
    out = await call_tool(Shell(Root([tmp_path])), {"command": "echo one; echo two >&2; exit 3"})
    assert "".join(p["output"] for p in out.progress) == "one\ntwo\n"
    r = out.result
    assert not r.error and r.as_text() == "one\ntwo\n\n[exit code 3]"
    assert r.value["exit_code"] == 3 and r.value["output"] == "one\ntwo\n"
    assert r.value["timed_out"] is False and r.value["cancelled"] is False


@pytest.mark.process
async def test_stdin_is_empty_so_reading_commands_do_not_hang(tmp_path: Path) -> None:
    with anyio.fail_after(10):
        out = await call_tool(Shell(Root([tmp_path])), {"command": "cat; read x; echo done"})
    assert out.result.value["output"] == "done\n"


@pytest.mark.process
async def test_cwd_is_confined_to_the_root(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    shell = Shell(Root([tmp_path]))
    ok = await call_tool(shell, {"command": "pwd", "cwd": "sub"})
    assert ok.result.value["output"].strip() == os.path.realpath(tmp_path / "sub")  # noqa: ASYNC240
    bad = await call_tool(shell, {"command": "pwd", "cwd": "/"})
    assert bad.result.error and "outside" in bad.result.as_text()
    assert (await call_tool(shell, {"command": "pwd", "cwd": "../.."})).result.error


@pytest.mark.parametrize(
    "inp",
    [
        {},
        {"command": ""},
        {"command": 5},
        {"command": "ls", "timeout_s": 0},
        {"command": "ls", "timeout_s": "1"},
    ],
)
async def test_bad_input_gives_an_error_result(tmp_path: Path, inp: dict[str, Any]) -> None:
    r = (await call_tool(Shell(Root([tmp_path])), inp)).result
    assert r.error and "invalid input" in r.as_text()


async def test_blank_command_is_an_error_result(tmp_path: Path) -> None:
    assert (await call_tool(Shell(Root([tmp_path])), {"command": "   "})).result.error


@pytest.mark.process
async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    shell = Shell(Root([tmp_path]))
    with anyio.fail_after(20):
        out = await call_tool(shell, {"command": SPAWN, "timeout_s": 0.5})
    r = out.result
    assert r.error and r.value["timed_out"] and "[timed out after 0.5 s" in r.as_text()
    await _wait_dead(*_pids(r.value["output"]))


@pytest.mark.process
async def test_timeout_is_capped(tmp_path: Path) -> None:
    shell = Shell(Root([tmp_path]), max_timeout_s=30)
    r = (await call_tool(shell, {"command": "true", "timeout_s": 1000})).result
    assert "[timeout_s capped at 30]" in r.as_text() and r.value["exit_code"] == 0


@pytest.mark.process
async def test_cancelling_the_task_kills_the_whole_process_group(tmp_path: Path) -> None:
    shell = Shell(Root([tmp_path]))
    host = _Host()
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(shell.call, {"command": SPAWN}, _call(shell, host, SPAWN))
            await host.ready.wait()
            tg.cancel_scope.cancel()
    await _wait_dead(*_pids("".join(host.chunks)))


@pytest.mark.process
async def test_the_run_cancel_flag_kills_the_group_and_ends_cancelled(tmp_path: Path) -> None:
    shell = Shell(Root([tmp_path]), cancel_poll_s=0.01)
    host = _Host()
    result = None

    async def go() -> None:
        nonlocal result
        result = await shell.call({"command": SPAWN}, _call(shell, host, SPAWN))

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(go)
            await host.ready.wait()
            host.cancelled = True
    assert result is not None and result.error and result.value["cancelled"]
    assert "[cancelled;" in result.as_text()
    await _wait_dead(*_pids("".join(host.chunks)))


@pytest.mark.process
async def test_background_jobs_do_not_outlive_the_command(tmp_path: Path) -> None:
    with anyio.fail_after(20):
        out = await call_tool(Shell(Root([tmp_path])), {"command": "sleep 300 & echo bg=$!"})
    assert out.result.value["exit_code"] == 0
    await _wait_dead(int(out.result.value["output"].split("=")[1]))


@pytest.mark.process
async def test_output_is_capped_keeping_head_and_tail(tmp_path: Path) -> None:
    shell = Shell(Root([tmp_path]), max_output_chars=1000)
    r = (await call_tool(shell, {"command": "seq 1 100000"})).result
    text = r.value["output"]
    assert text.startswith("1\n2\n3\n") and text.endswith("99999\n100000\n")
    assert "characters cut ...]" in text and len(text) < 1100 and r.value["truncated"]
    total = len("".join(f"{i}\n" for i in range(1, 100001)))
    assert f"[... {total - 1000} characters cut ...]" in text


async def test_a_command_runner_seam_replaces_local_execution(tmp_path: Path) -> None:
    seen: list[CommandRequest] = []
    real = Path(os.path.realpath(tmp_path))  # noqa: ASYNC240

    class Editor:
        async def run(self, request: CommandRequest, output: OutputSink) -> int | None:
            seen.append(request)
            await output("from the editor\n")
            return 7

    runner = Editor()
    assert isinstance(runner, CommandRunner)
    out = await call_tool(Shell(Root([tmp_path]), runner=runner), {"command": "make test"}, call_id="x9")
    assert out.progress == [{"output": "from the editor\n"}]
    assert out.result.value["exit_code"] == 7
    assert seen == [CommandRequest("make test", real, "x9")]


async def test_a_runner_that_cannot_start_gives_an_error_result(tmp_path: Path) -> None:
    class Broken:
        async def run(self, request: CommandRequest, output: OutputSink) -> int | None:
            raise FileNotFoundError("bash")

    r = (await call_tool(Shell(Root([tmp_path]), runner=Broken()), {"command": "ls"})).result
    assert r.error and "cannot run the command" in r.as_text()


def test_shell_hints() -> None:
    h = Shell(Root([Path("/")])).spec().hints
    assert not h.read_only and h.open_world


@pytest.mark.process
@pytest.mark.parametrize("entry", ["", ".", "bin"])
async def test_a_bash_the_project_supplies_never_runs_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str
) -> None:
    """An empty or relative PATH entry names a folder of the project (the command's cwd): a ``bash`` file a
    clone ships there must not be what runs a command the user allowed (unsandboxed, here)."""
    marker = tmp_path / "marker"
    for folder in (tmp_path, tmp_path / "bin"):
        folder.mkdir(exist_ok=True)
        (folder / "bash").write_text(f"#!/bin/sh\ntouch {marker}\n")
        (folder / "bash").chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([entry, "/usr/bin", "/bin"]))
    with anyio.fail_after(30):
        out = await call_tool(Shell(Root([tmp_path])), {"command": "echo from-the-real-bash"})
    assert "from-the-real-bash" in out.result.as_text()
    assert not marker.exists()


@pytest.mark.process
async def test_a_program_the_command_names_is_not_taken_from_the_project_either(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``git status`` under an allow rule must run the system's git, not a ``git`` file in the project that
    a relative PATH entry would reach from the command's own lookup."""
    marker = tmp_path / "marker"
    (tmp_path / "git").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (tmp_path / "git").chmod(0o755)
    monkeypatch.setenv("PATH", os.pathsep.join([".", "/usr/bin", "/bin"]))
    with anyio.fail_after(30):
        out = await call_tool(Shell(Root([tmp_path])), {"command": "git --version; echo PATH=$PATH"})
    text = out.result.as_text()
    assert "git version" in text and "PATH=/usr/bin:/bin\n" in text, text
    assert not marker.exists()
