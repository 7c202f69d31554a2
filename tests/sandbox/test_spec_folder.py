"""The folder the sandbox's specs and the terminals' runners are written to is the user's alone.

Whoever can write a spec decides what the next sandboxed command may do and which variables it gets (an
``LD_PRELOAD`` is code run as the user); whoever can write a runner decides what an editor's terminal runs.
The shared folder's name in the temp folder is guessable (``acp-agent-sandbox-<uid>``), so another user of
the machine could make it first: it is checked at every write, and the launcher refuses a spec someone else
could have written."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from harness.sandbox import LAUNCHER, SandboxPolicy, SandboxUnavailable, spec_folder, write_runner, write_spec
from harness.sandbox._specs import KEEP_S, own_folder, sweep_folder

_SPEC = {"handled_fs": 1, "rules": [["/usr", 1]], "env": {"LANG": "C"}}


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp folder of the test's own, standing for /tmp; the sweep's once-per-process memory reset."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr("harness.sandbox._specs._swept", set[Path]())
    return tmp_path


def _shared(temp: Path) -> Path:
    return temp / f"acp-agent-sandbox-{os.getuid()}"


def test_the_shared_folder_is_made_the_users_alone(temp: Path) -> None:
    path = write_spec(_SPEC, spec_folder(SandboxPolicy(roots=(temp,))))
    folder = _shared(temp)
    assert path.parent == folder
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in folder.iterdir()] == [path.name]  # no half-written file left


def test_a_folder_someone_else_made_first_is_refused_and_nothing_is_written_there(temp: Path) -> None:
    folder = _shared(temp)
    folder.mkdir(mode=0o777)
    with pytest.raises(SandboxUnavailable, match="belongs to another user"):
        own_folder(folder, uid=os.getuid() + 1)  # as seen by a user who is not its owner
    assert list(folder.iterdir()) == []


@pytest.mark.skipif(os.getuid() != 0, reason="giving a folder to another user needs root")
def test_as_root_a_folder_owned_by_another_user_stops_the_spec_and_the_runner(temp: Path) -> None:
    folder = _shared(temp)
    folder.mkdir(mode=0o777)
    os.chown(folder, 65534, 65534)
    with pytest.raises(SandboxUnavailable, match="belongs to another user"):
        write_spec(_SPEC, folder)
    with pytest.raises(SandboxUnavailable, match="belongs to another user"):
        write_runner(SandboxPolicy(roots=(temp,)))
    assert list(folder.iterdir()) == []


def test_a_link_in_the_folders_place_is_refused_and_nothing_is_written_through_it(temp: Path) -> None:
    elsewhere = temp / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    _shared(temp).symlink_to(elsewhere)
    with pytest.raises(SandboxUnavailable, match="not a folder"):
        write_spec(_SPEC, _shared(temp))
    assert list(elsewhere.iterdir()) == []


def test_a_file_in_the_folders_place_is_refused(temp: Path) -> None:
    _shared(temp).write_text("x")
    with pytest.raises(SandboxUnavailable, match="not a folder"):
        write_spec(_SPEC, _shared(temp))


def test_the_users_own_folder_open_to_others_is_closed_and_what_it_held_dropped(temp: Path) -> None:
    folder = _shared(temp)
    folder.mkdir()
    os.chmod(folder, 0o777)
    planted = folder / "spec-planted.txt"
    planted.write_text("anyone's")
    path = write_spec(_SPEC, folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert sorted(folder.iterdir()) == [path]


def test_a_spec_with_the_right_text_that_others_can_write_is_written_again_not_reused(temp: Path) -> None:
    folder = own_folder(_shared(temp))
    path = write_spec(_SPEC, folder)
    os.chmod(path, 0o666)  # the text is right, but it could be changed between the check and the launch
    assert write_spec(_SPEC, folder) == path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_spec_file_that_is_a_link_is_written_again_not_followed(temp: Path) -> None:
    folder = own_folder(_shared(temp))
    path = write_spec(_SPEC, folder)
    target = temp / "target.txt"
    target.write_text(path.read_text())
    path.unlink()
    path.symlink_to(target)
    assert write_spec(_SPEC, folder) == path
    assert not path.is_symlink()


def test_specs_and_runners_untouched_for_a_week_are_swept_and_reused_ones_are_kept(temp: Path) -> None:
    folder = own_folder(_shared(temp))
    old = time.time() - KEEP_S - 60
    stale = folder / "spec-0000000000000000.txt"
    stale.write_text("x")
    half = folder / ".run-abc.x1y2z3"
    half.write_text("x")
    other = folder / "notes.txt"
    other.write_text("x")
    for p in (stale, half, other):
        os.utime(p, (old, old))
    reused = write_spec(_SPEC, folder)  # the first write of this process sweeps
    os.utime(reused, (old, old))
    assert sorted(p.name for p in folder.iterdir()) == sorted([reused.name, "notes.txt"])
    assert write_spec(_SPEC, folder) == reused  # reused: touched, so the next sweep keeps it
    assert reused.stat().st_mtime > old + KEEP_S
    assert sweep_folder(folder) == []


def _launch(spec: Path, marker: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-S", str(LAUNCHER), str(spec), "--", "touch", str(marker)],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.process
def test_the_launcher_refuses_a_spec_others_could_write_and_does_not_run_the_command(temp: Path) -> None:
    spec = write_spec(_SPEC, own_folder(_shared(temp)))
    os.chmod(spec, 0o666)
    marker = temp / "ran"
    done = _launch(spec, marker)
    assert done.returncode == 126 and "not the user's own file" in done.stderr, done.stderr
    assert not marker.exists()


@pytest.mark.process
def test_the_launcher_refuses_a_spec_reached_through_a_link(temp: Path) -> None:
    spec = write_spec(_SPEC, own_folder(_shared(temp)))
    link = temp / "link.txt"
    link.symlink_to(spec)
    marker = temp / "ran"
    done = _launch(link, marker)
    assert done.returncode == 126 and "cannot apply the sandbox" in done.stderr, done.stderr
    assert not marker.exists()
