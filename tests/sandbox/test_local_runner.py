"""The local shell runner under the sandbox, through real processes (asyncio and trio): writes inside the
project pass, everything else is refused, children inherit it, TCP is refused unless allowed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_agent.coding.permissions._protected import AGENT_PROTECTED, AGENT_ROOT_PATHS
from harness.sandbox import SandboxPolicy, probe
from harness.testing import call_tool
from harness.tools import Root, Shell

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("landlock")]


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    project = tmp_path / "project"
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / ".git" / "config").write_text("[core]\n")
    (project / "src").mkdir()
    temp = tmp_path / "session-tmp"
    temp.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    return {"project": project.resolve(), "temp": temp.resolve(), "outside": outside.resolve()}


async def run(world: dict[str, Path], command: str, make_dirs: list[str] | None = None, **policy: Any) -> Any:
    # the agent's protected list, as the agent passes it (the harness's own names no application)
    policy.setdefault("protected", AGENT_ROOT_PATHS)
    chosen = SandboxPolicy(roots=(world["project"],), temp=world["temp"], **policy)
    shell = Shell(Root([world["project"]]), sandbox=lambda _input: chosen, protected=AGENT_PROTECTED)
    extra = {"make_dirs": make_dirs} if make_dirs is not None else {}
    return (await call_tool(shell, {"command": command, **extra})).result


@pytest.mark.process
async def test_a_sandboxed_command_writes_in_the_project_and_its_temp_but_nowhere_else(
    world: dict[str, Path],
) -> None:
    out = world["outside"]
    result = await run(
        world,
        f"echo in > src/in.txt && echo tmp > $TMPDIR/t.txt && echo ok; echo x > {out}/x.txt; "
        f"echo y > /tmp/acp-sandbox-test-$$.txt",
    )
    assert (world["project"] / "src" / "in.txt").read_text() == "in\n"
    assert (world["temp"] / "t.txt").read_text() == "tmp\n"
    assert not (out / "x.txt").exists()
    assert "Permission denied" in result.as_text()
    assert not list(Path("/tmp").glob("acp-sandbox-test-*.txt"))  # noqa: ASYNC240 (a test)
    assert 'sandbox: "off"' in result.as_text()  # the note tells the model how to ask


@pytest.mark.process
async def test_protected_paths_cannot_be_written_nor_created(world: dict[str, Path]) -> None:
    project = world["project"]
    await run(
        world,
        "echo '[core] fsmonitor=evil' >> .git/config; echo evil > .git/hooks/pre-commit; "
        "mkdir -p .acp-agent && echo x > .acp-agent/permissions.jsonl; echo x > .envrc; "
        "mv src moved",
    )
    assert (project / ".git" / "config").read_text() == "[core]\n"
    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    assert not (project / ".acp-agent").exists() and not (project / ".envrc").exists()
    assert (project / "src").is_dir() and not (project / "moved").exists()


@pytest.mark.process
async def test_a_child_of_the_command_inherits_the_sandbox(world: dict[str, Path]) -> None:
    out = world["outside"]
    await run(
        world,
        f"(echo bg > {out}/bg.txt) & wait; "
        f"python3 -c \"import subprocess; subprocess.run(['sh', '-c', 'echo c > {out}/child.txt'])\"; "
        f"nohup sh -c 'echo n > {out}/nohup.txt' >/dev/null 2>&1; true",
    )
    assert list(out.iterdir()) == []


_CONNECT = (
    'python3 -c "import socket,sys; s=socket.socket(); s.settimeout(3); '
    "r=s.connect_ex(('127.0.0.1', {port})); print('connect', r); sys.exit(r)\""
)


@pytest.mark.process
async def test_tcp_to_a_local_listener_is_refused_with_network_off(
    world: dict[str, Path], listener: int
) -> None:
    result = await run(world, _CONNECT.format(port=listener))
    assert "connect 0" not in result.as_text() and result.value["exit_code"] != 0


@pytest.mark.process
async def test_tcp_to_a_local_listener_connects_with_network_on(
    world: dict[str, Path], listener: int
) -> None:
    result = await run(world, _CONNECT.format(port=listener), network=True)
    assert "connect 0" in result.as_text() and result.value["exit_code"] == 0


@pytest.mark.process
async def test_udp_leaves_only_where_a_network_namespace_closes_the_gap(world: dict[str, Path]) -> None:
    if not probe().netns:
        pytest.skip("no network namespace here: UDP is not covered by Landlock ABI < 10")
    command = (
        'python3 -c "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); '
        "s.sendto(b'x', ('192.0.2.1', 53)); print('sent')\""
    )
    result = await run(world, command)
    assert "sent" not in result.as_text() and "unreachable" in result.as_text()


@pytest.mark.process
async def test_the_same_command_unsandboxed_writes_outside(world: dict[str, Path]) -> None:
    out = world["outside"]
    shell = Shell(Root([world["project"]]), sandbox=lambda _input: None)
    result = (await call_tool(shell, {"command": f"echo x > {out}/x.txt"})).result
    assert result.value["exit_code"] == 0 and (out / "x.txt").exists()
    assert result.value["sandbox"] == "off"


@pytest.mark.process
async def test_a_new_top_level_folder_is_refused_to_the_command_and_made_for_it_through_make_dirs(
    world: dict[str, Path],
) -> None:
    project = world["project"]
    denied = await run(world, "mkdir build && echo o > build/out.o")
    assert not (project / "build").exists()
    assert "make_dirs" in denied.as_text()  # the note names the way that stays in the sandbox
    made = await run(world, "echo o > build/out.o && mkdir -p build/deeper/still", make_dirs=["build"])
    assert not made.error, made.as_text()
    assert (project / "build" / "out.o").read_text() == "o\n"
    assert (project / "build" / "deeper" / "still").is_dir()
    again = await run(world, "test -d build", make_dirs=["build"])  # an existing folder is fine
    assert not again.error


@pytest.mark.parametrize(
    "name", [".git", ".VSCode", ".acp-agent", "my.code-workspace", "src/inner", "../sibling", "/etc"]
)
async def test_make_dirs_refuses_protected_names_deeper_folders_and_places_outside(
    world: dict[str, Path], name: str
) -> None:
    result = await run(world, "touch ran", make_dirs=[name])
    assert result.error and "the command did not run" in result.as_text()
    assert not (world["project"] / "ran").exists()
    assert not (world["project"] / ".vscode").exists() and not (world["project"] / ".acp-agent").exists()


async def test_make_dirs_is_refused_in_the_read_only_sandbox(world: dict[str, Path]) -> None:
    result = await run(world, "true", make_dirs=["build"], mode="read-only")
    assert result.error and "read-only" in result.as_text()
    assert not (world["project"] / "build").exists()
