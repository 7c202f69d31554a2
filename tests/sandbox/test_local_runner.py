"""The local shell runner under the sandbox, through real processes (asyncio and trio): writes inside the
project pass, everything else is refused, children inherit it, TCP is refused unless allowed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

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


async def run(world: dict[str, Path], command: str, **policy: Any) -> Any:
    chosen = SandboxPolicy(roots=(world["project"],), temp=world["temp"], **policy)
    shell = Shell(Root([world["project"]]), sandbox=lambda _input: chosen)
    return (await call_tool(shell, {"command": command})).result


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


async def test_tcp_to_a_local_listener_is_refused_with_network_off(
    world: dict[str, Path], listener: int
) -> None:
    result = await run(world, _CONNECT.format(port=listener))
    assert "connect 0" not in result.as_text() and result.value["exit_code"] != 0


async def test_tcp_to_a_local_listener_connects_with_network_on(
    world: dict[str, Path], listener: int
) -> None:
    result = await run(world, _CONNECT.format(port=listener), network=True)
    assert "connect 0" in result.as_text() and result.value["exit_code"] == 0


async def test_udp_leaves_only_where_a_network_namespace_closes_the_gap(world: dict[str, Path]) -> None:
    if not probe().netns:
        pytest.skip("no network namespace here: UDP is not covered by Landlock ABI < 10")
    command = (
        'python3 -c "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); '
        "s.sendto(b'x', ('192.0.2.1', 53)); print('sent')\""
    )
    result = await run(world, command)
    assert "sent" not in result.as_text() and "unreachable" in result.as_text()


async def test_the_same_command_unsandboxed_writes_outside(world: dict[str, Path]) -> None:
    out = world["outside"]
    shell = Shell(Root([world["project"]]), sandbox=lambda _input: None)
    result = (await call_tool(shell, {"command": f"echo x > {out}/x.txt"})).result
    assert result.value["exit_code"] == 0 and (out / "x.txt").exists()
    assert result.value["sandbox"] == "off"
