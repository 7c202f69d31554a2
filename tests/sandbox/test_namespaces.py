"""What Landlock alone left open, closed by the launcher's namespaces (real processes): metadata outside
the writable roots (chmod, chown, utimes, xattrs), processes that outlive their command, the user's uid
inside the sandbox, nested repositories' ``.git``."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness.sandbox import SandboxPolicy
from harness.testing import call_tool
from harness.tools import Root, Shell

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("landlock")]


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "config").write_text("[core]\n")
    (project / "src").mkdir()
    (project / "src" / "main.sh").write_text("echo hi\n")
    temp = tmp_path / "session-tmp"
    temp.mkdir()
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("secret\n")
    (home / ".ssh" / "id_rsa").chmod(0o600)
    (home / "key.txt").write_text("sk-test\n")
    (home / "key.txt").chmod(0o600)
    return {"project": project.resolve(), "temp": temp.resolve(), "home": home.resolve()}


async def run(world: dict[str, Path], command: str, **inp: Any) -> Any:
    chosen = SandboxPolicy(roots=(world["project"],), temp=world["temp"])
    shell = Shell(Root([world["project"]]), sandbox=lambda _input: chosen)
    return (await call_tool(shell, {"command": command, **inp})).result


def _meta(path: Path) -> tuple[int, int, int, int]:
    st = path.lstat()
    return (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid, st.st_mtime_ns)


_METADATA_VARIANTS = [
    "chmod 0644 {f}",
    "chmod a+rwx {f}",
    "python3 -c 'import os,sys; os.chmod(sys.argv[1], 0o666)' {f}",
    "python3 -c 'import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fchmod(fd, 0o666)' {f}",
    "chown $(id -u):$(id -g) {f}; chown 12345 {f}",
    "touch -d 2001-01-01 {f}",
    "touch -m -t 200001010000 {f}",
    "python3 -c 'import os,sys; os.utime(sys.argv[1], (1, 1))' {f}",
    'python3 -c \'import os,sys; os.setxattr(sys.argv[1], "user.evil", b"1")\' {f}',
    "cd $(dirname {f}) && chmod 0666 $(basename {f})",
    "ln -s {f} $TMPDIR/link && chmod 0666 $TMPDIR/link",
]


@pytest.mark.process
@pytest.mark.parametrize("variant", _METADATA_VARIANTS)
async def test_a_sandboxed_command_cannot_change_metadata_outside_the_project(
    world: dict[str, Path], variant: str
) -> None:
    for target in (
        world["home"] / "key.txt",
        world["home"] / ".ssh" / "id_rsa",
        world["project"] / ".git" / "config",
    ):
        before = _meta(target)
        await run(world, variant.format(f=target))
        assert _meta(target) == before, f"{variant} changed {target}"
        if hasattr(os, "getxattr"):
            assert "user.evil" not in os.listxattr(target)


@pytest.mark.process
async def test_metadata_inside_the_project_and_temp_still_changes(world: dict[str, Path]) -> None:
    result = await run(
        world,
        "mkdir -p build && cp src/main.sh build/x && chmod +x build/x && ./build/x && "
        "touch -d 2001-01-01 src/main.sh && chmod 0700 $TMPDIR && echo done",
        make_dirs=["build"],
    )
    assert "hi" in result.as_text() and "done" in result.as_text(), result.as_text()
    assert os.access(world["project"] / "build" / "x", os.X_OK)
    assert (world["project"] / "src" / "main.sh").stat().st_mtime < 1e9


@pytest.mark.process
async def test_files_made_in_the_sandbox_belong_to_the_user_who_also_sees_their_own_uid(
    world: dict[str, Path],
) -> None:
    result = await run(world, "touch src/made && id -u && id -g && stat -c %U src/made")
    lines = result.as_text().splitlines()
    assert lines[:2] == [str(os.getuid()), str(os.getgid())], result.as_text()
    assert "nobody" not in result.as_text()
    made = (world["project"] / "src" / "made").stat()
    assert (made.st_uid, made.st_gid) == (os.getuid(), os.getgid())


def running(marker: str) -> list[int]:
    """Processes whose command line holds ``marker`` (from outside any namespace)."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
        except OSError:
            continue
        if marker.encode() in cmdline:
            found.append(int(entry))
    return found


async def wait_gone(marker: str) -> None:
    """Until no process holds ``marker`` (5 s at most)."""
    with anyio.fail_after(5):
        for _ in range(1000):
            if not running(marker):
                return
            await anyio.sleep(0.02)


@pytest.fixture
def marker(tmp_path: Path) -> Iterator[str]:
    name = f"acpbg{os.getpid()}x{abs(hash(tmp_path)) % 10**8}"
    yield name
    for pid in running(name):  # never leave one behind, whatever the test found
        try:
            os.kill(pid, 9)
        except OSError:
            pass


def _sleeper(world: dict[str, Path], marker: str) -> Path:
    """A copy of ``sleep`` named after the marker, so its processes can be found from outside."""
    path = world["temp"] / marker
    shutil.copy(shutil.which("sleep") or "/bin/sleep", path)
    path.chmod(0o755)
    return path


_BACKGROUND_VARIANTS = [
    "setsid {s} 300 > /dev/null 2>&1 &",
    "nohup {s} 300 > /dev/null 2>&1 &",
    "( {s} 300 > /dev/null 2>&1 & ) ",
    "{s} 300 > /dev/null 2>&1 & disown",
    "setsid bash -c '{s} 300 & {s} 301' > /dev/null 2>&1 < /dev/null &",
    'python3 -c \'import os,subprocess; os.fork() or (os.setsid(), subprocess.Popen(["{s}", "300"]))\'',
]


@pytest.mark.process
@pytest.mark.parametrize("variant", _BACKGROUND_VARIANTS)
async def test_nothing_a_command_started_outlives_it(
    world: dict[str, Path], marker: str, variant: str
) -> None:
    sleeper = _sleeper(world, marker)
    result = await run(world, variant.format(s=sleeper) + "; sleep 0.3; echo started")
    assert "started" in result.as_text(), result.as_text()
    await wait_gone(marker)


@pytest.mark.process
async def test_nothing_a_command_started_outlives_its_cancellation(
    world: dict[str, Path], marker: str
) -> None:
    sleeper = _sleeper(world, marker)
    shell = Shell(
        Root([world["project"]]),
        sandbox=lambda _input: SandboxPolicy(roots=(world["project"],), temp=world["temp"]),
    )
    with anyio.move_on_after(1.5):
        await call_tool(shell, {"command": f"setsid {sleeper} 300 > /dev/null 2>&1 & {sleeper} 301"})
    await wait_gone(marker)


@pytest.mark.process
async def test_a_command_sees_only_its_own_processes(world: dict[str, Path]) -> None:
    result = await run(world, "ls /proc | grep -c '^[0-9]'; echo $$")
    count, pid = result.as_text().splitlines()[:2]
    assert int(count) <= 5 and int(pid) <= 3, result.as_text()


@pytest.mark.process
async def test_a_nested_repository_s_git_is_read_only_in_the_sandbox(world: dict[str, Path]) -> None:
    nested = world["project"] / "vendor" / "lib"
    (nested / ".git" / "hooks").mkdir(parents=True)
    (nested / ".git" / "config").write_text("[core]\n")
    (world["project"] / "a" / "b").mkdir(parents=True)
    (world["project"] / "a" / "b" / ".git").write_text("gitdir: ../../.git/modules/b\n")
    result = await run(
        world,
        "echo '[core] fsmonitor = evil' >> vendor/lib/.git/config; touch vendor/lib/.git/hooks/pre-commit; "
        "chmod 0777 vendor/lib/.git/config; echo 'gitdir: /tmp/evil' > a/b/.git; rm -rf vendor/lib/.git; "
        "mv vendor/lib/.git vendor/lib/g; echo ok > vendor/lib/file.txt",
    )
    assert (nested / ".git" / "config").read_text() == "[core]\n", result.as_text()
    assert not (nested / ".git" / "hooks" / "pre-commit").exists()
    assert stat.S_IMODE((nested / ".git" / "config").stat().st_mode) != 0o777
    assert (world["project"] / "a" / "b" / ".git").read_text() == "gitdir: ../../.git/modules/b\n"
    assert (nested / "file.txt").read_text() == "ok\n", "the nested repository's work tree stays writable"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_command_is_tied_to_the_agent_only_where_the_loop_spawns_from_its_own_thread(backend: str) -> None:
    # trio starts processes from a worker thread that ends when idle: the kernel's parent-death signal
    # follows that thread, so a tie there would kill a long command after ten idle seconds.
    from harness.sandbox import spawns_in_this_thread

    async def main() -> bool:
        return spawns_in_this_thread()

    assert anyio.run(main, backend=backend) is (backend == "asyncio")


def test_landlock_without_user_namespaces_is_no_sandbox_so_commands_ask(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Half a sandbox (Landlock alone) would leave metadata open and let background processes live on:
    # the machine then reports none, and every mode asks as without a sandbox.
    import harness.sandbox as sandbox

    def refused(abi: int) -> str:
        return f"Landlock ABI {abi} is here, but no namespaces"

    monkeypatch.setattr(sandbox, "_namespaces", refused)
    # The probe itself, past its cache: clearing that would make the next test to ask run the launcher.
    found = sandbox.probe.__wrapped__()
    assert not found.available and "namespaces" in found.reason
    assert not found.network_enforced


@pytest.mark.process
def test_the_launcher_never_runs_a_command_it_cannot_confine(tmp_path: Path) -> None:
    import subprocess
    import sys

    from harness.sandbox import LAUNCHER

    bad = tmp_path / "spec.txt"
    bad.write_text("acp-agent-sandbox 1\nruleset 1 0 0 0\nrule notanumber /\n")
    marker = tmp_path / "ran"
    done = subprocess.run(
        [sys.executable, "-I", "-S", str(LAUNCHER), str(bad), "--", "touch", str(marker)],
        capture_output=True,
        check=False,
    )
    assert done.returncode == 126 and not marker.exists(), done.stderr


@pytest.mark.process
async def test_dev_shm_is_the_command_s_own_so_the_user_s_shared_memory_is_out_of_reach(
    world: dict[str, Path],
) -> None:
    """The host's /dev/shm holds the user's other programs' shared memory and semaphores: a command gets an
    empty one of its own (POSIX semaphores still work), and nothing it leaves there outlives it."""
    name = f"acp-redteam-{os.getpid()}"
    result = await run(
        world,
        f"ls -A /dev/shm | wc -l; echo x > /dev/shm/{name} && "
        "python3 -c 'import multiprocessing as m; l = m.Lock(); l.acquire(); print(\"semaphore\")'",
    )
    lines = result.as_text().splitlines()
    assert lines[0].strip() == "0" and "semaphore" in lines, result.as_text()
    assert not await anyio.Path("/dev/shm", name).exists()
