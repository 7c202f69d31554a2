"""The "open beneath the root" primitive (``harness.beneath``) and the disk operations over it:
no symlink is followed in any position, nothing outside the root is reached, on the ``openat2`` path and
on the component walk (forced), deterministically and against a thread that flips a symlink in a loop."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import harness.beneath as beneath_mod
import harness.tools._fs as fs_mod
from harness.beneath import BeneathError, Place, open_dir, openat2_works, split, use_openat2
from harness.tools._fs import (
    NotRegularFileError,
    make_dir,
    open_regular,
    remove_file,
    stat_place,
    write_bytes,
)
from tests.security._flip import flipping

HAS_OPENAT2 = openat2_works()


@pytest.fixture(params=["openat2", "walk"])
def way(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each test runs on both ways of opening: the kernel's ``openat2``, and the walk (forced)."""
    if request.param == "openat2" and not HAS_OPENAT2:
        pytest.skip("this kernel has no openat2 (or a filter refuses it)")
    before = use_openat2(request.param == "openat2")
    try:
        yield request.param
    finally:
        use_openat2(before)


@pytest.fixture
def top(tmp_path: Path) -> Path:
    """``top/a/b/c/f.txt``, and beside it ``outside/`` with the same shape (what a symlink would reach)."""
    for base in (tmp_path / "top", tmp_path / "outside"):
        (base / "a" / "b" / "c").mkdir(parents=True)
        (base / "a" / "b" / "c" / "f.txt").write_text(f"{base.name}\n")
    return tmp_path / "top"


def outside_of(top: Path) -> Path:
    return top.parent / "outside"


def snapshot(folder: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(folder).as_posix()
            out[rel] = p.read_bytes() if p.is_file() and not p.is_symlink() else "dir"
    return out


def at(top: Path, *parts: str) -> Place:
    return Place(top, parts)


FILE = ("a", "b", "c", "f.txt")


def test_a_path_of_real_directories_opens_on_either_way(top: Path, way: str) -> None:
    fd = open_dir(at(top, "a", "b"))
    try:
        assert sorted(os.listdir(fd)) == ["c"]
    finally:
        os.close(fd)
    with open_regular(at(top, *FILE)) as f:
        assert f.read() == b"top\n"


@pytest.mark.parametrize("position", range(len(FILE)))
def test_a_symlink_out_in_any_position_is_refused_and_nothing_outside_changes(
    top: Path, way: str, position: int
) -> None:
    outside = outside_of(top)
    swapped = top.joinpath(*FILE[: position + 1])
    target = outside.joinpath(*FILE[: position + 1])
    shutil.rmtree(swapped) if swapped.is_dir() else swapped.unlink()
    swapped.symlink_to(target, target_is_directory=target.is_dir())
    before = snapshot(outside)
    place = at(top, *FILE)
    with pytest.raises(BeneathError, match="symbolic link"):
        open_regular(place)
    with pytest.raises(BeneathError, match="symbolic link"):
        write_bytes(place, b"PWNED\n")
    with pytest.raises(BeneathError, match="symbolic link"):
        remove_file(place)
    if position < len(FILE) - 1:
        with pytest.raises(BeneathError):
            open_dir(at(top, *FILE[:-1]))
        with pytest.raises(BeneathError):
            write_bytes(at(top, *FILE[:-1], "new.txt"), b"PWNED\n")
    assert snapshot(outside) == before


def test_a_symlink_that_stays_inside_is_refused_too_the_caller_resolves_it_first(top: Path, way: str) -> None:
    # The primitive takes real paths: any link met is one swapped in after the check.
    (top / "alias").symlink_to(top / "a")
    with pytest.raises(BeneathError):
        open_regular(at(top, "alias", "b", "c", "f.txt"))


@pytest.mark.parametrize("rel", ["..", "a/../..", "../outside/a", "a/b/../../.."])
def test_dotdot_is_refused_not_interpreted(rel: str) -> None:
    with pytest.raises(BeneathError, match=r"'\.\.'"):
        split(rel)


def test_absolute_nul_and_outside_paths_are_refused(top: Path) -> None:
    with pytest.raises(BeneathError, match="absolute"):
        split("/etc/passwd")
    with pytest.raises(BeneathError, match="NUL"):
        split("a\x00b")
    with pytest.raises(BeneathError, match="outside"):
        Place.of(outside_of(top) / "a", [top])
    with pytest.raises(BeneathError, match="outside"):
        Place.of(top.parent / "top-sibling", [top])  # a name sharing the prefix is not inside
    with pytest.raises(BeneathError):
        Place.of(Path("a/b"), [top])
    with pytest.raises(BeneathError):
        at(top, "a").child("../../outside")
    assert Place.of(top / "a" / "b", [outside_of(top), top]) == Place(top, ("a", "b"))
    assert split("./a//b/.") == ("a", "b")


def test_the_kernel_refuses_dotdot_and_absolute_names_given_to_openat2_directly(top: Path) -> None:
    if not HAS_OPENAT2:
        pytest.skip("no openat2")
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(BeneathError):
            beneath_mod._openat2(fd, "../outside", os.O_RDONLY | os.O_DIRECTORY)  # pyright: ignore[reportPrivateUsage]
        with pytest.raises(BeneathError):
            beneath_mod._openat2(fd, str(outside_of(top)), os.O_RDONLY | os.O_DIRECTORY)  # pyright: ignore[reportPrivateUsage]
    finally:
        os.close(fd)


@pytest.mark.parametrize("shape", ["self", "pair"])
def test_a_symlink_loop_is_refused_at_once(top: Path, way: str, shape: str) -> None:
    if shape == "self":
        (top / "loop").symlink_to("loop")
    else:
        (top / "loop").symlink_to("other")
        (top / "other").symlink_to("loop")
    for place in (at(top, "loop"), at(top, "loop", "x.txt")):
        with pytest.raises(BeneathError):
            open_regular(place)
        with pytest.raises(BeneathError):
            write_bytes(place, b"x")
    with pytest.raises(BeneathError):
        open_dir(at(top, "loop"))


def test_a_fifo_is_never_opened_read_written_or_removed(top: Path, way: str) -> None:
    os.mkfifo(top / "a" / "fifo")
    place = at(top, "a", "fifo")
    with pytest.raises(NotRegularFileError):
        open_regular(place)
    with pytest.raises(NotRegularFileError):
        write_bytes(place, b"x")
    with pytest.raises(NotRegularFileError):
        remove_file(place)
    assert (top / "a" / "fifo").exists()


def test_a_write_makes_missing_folders_inside_and_keeps_the_mode(top: Path, way: str) -> None:
    made: list[Place] = []
    write_bytes(at(top, "n", "m", "new.txt"), b"hi\n", made=made)
    assert (top / "n" / "m" / "new.txt").read_bytes() == b"hi\n"
    assert [p.parts for p in made] == [("n",), ("n", "m")]
    (top / "a" / "b" / "c" / "f.txt").chmod(0o640)
    write_bytes(at(top, *FILE), b"new\n")
    assert (top / "a" / "b" / "c" / "f.txt").stat().st_mode & 0o777 == 0o640
    assert not [p for p in (top / "a" / "b" / "c").iterdir() if p.name.endswith(".tmp")]


def test_a_read_only_file_is_not_replaced(top: Path, way: str) -> None:
    if os.geteuid() == 0:
        pytest.skip("root may write anything")
    (top / "a" / "b" / "c" / "f.txt").chmod(0o444)
    with pytest.raises(PermissionError):
        write_bytes(at(top, *FILE), b"new\n")
    assert (top / "a" / "b" / "c" / "f.txt").read_text() == "top\n"


def test_a_hard_link_to_a_file_outside_is_replaced_not_written_through(top: Path, way: str) -> None:
    victim = outside_of(top) / "a" / "b" / "c" / "f.txt"
    (top / "hard.txt").hardlink_to(victim)
    write_bytes(at(top, "hard.txt"), b"mine\n")
    assert victim.read_text() == "outside\n"
    assert (top / "hard.txt").read_text() == "mine\n"


def test_another_users_file_is_written_in_place_keeping_its_owner(top: Path, way: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another user")
    target = top / "a" / "b" / "c" / "f.txt"
    os.chown(target, 12345, 12345)
    inode = target.stat().st_ino
    write_bytes(at(top, *FILE), b"shared\n")
    st = target.stat()
    assert (st.st_uid, st.st_ino, target.read_bytes()) == (12345, inode, b"shared\n")


def test_a_folder_closed_to_new_files_gets_the_write_in_place_but_never_through_a_hard_link(
    top: Path, way: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_new_files(*args: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(fs_mod, "_replace", no_new_files)
    write_bytes(at(top, *FILE), b"in place\n")
    assert (top / "a" / "b" / "c" / "f.txt").read_bytes() == b"in place\n"
    victim = outside_of(top) / "a" / "b" / "c" / "f.txt"
    (top / "hard.txt").hardlink_to(victim)
    with pytest.raises(PermissionError):
        write_bytes(at(top, "hard.txt"), b"PWNED\n")
    assert victim.read_text() == "outside\n"


def test_make_dir_and_remove_file_act_in_the_opened_parent(top: Path, way: str) -> None:
    assert make_dir(at(top, "build")) is True
    assert make_dir(at(top, "build")) is False
    (top / "ln").symlink_to(outside_of(top))
    with pytest.raises(FileExistsError):
        make_dir(at(top, "ln"))
    assert remove_file(at(top, *FILE)) is True
    assert remove_file(at(top, *FILE)) is False
    assert stat_place(at(top, *FILE)) is None


# --- the race, deterministic: the swap happens between two steps of one operation -------------------


def swap_to_link(path: Path, target: Path) -> None:
    shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
    path.symlink_to(target, target_is_directory=target.is_dir())


def test_a_file_swapped_for_a_symlink_after_its_check_is_not_read(
    top: Path, way: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_lstat = beneath_mod.lstat_in
    victim = outside_of(top) / "a" / "b" / "c" / "f.txt"

    def lstat_then_swap(dir_fd: int, name: str, shown: str) -> os.stat_result | None:
        st = real_lstat(dir_fd, name, shown)  # a regular file now...
        swap_to_link(top / "a" / "b" / "c" / "f.txt", victim)  # ...a link out before the open
        return st

    monkeypatch.setattr(beneath_mod, "lstat_in", lstat_then_swap)
    with pytest.raises(BeneathError, match="symbolic link"):
        open_regular(at(top, *FILE))


def test_a_file_swapped_for_a_symlink_before_the_rename_is_replaced_not_written_through(
    top: Path, way: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_lstat = fs_mod.lstat_in
    victim = outside_of(top) / "a" / "b" / "c" / "f.txt"

    def lstat_then_swap(dir_fd: int, name: str, shown: str) -> os.stat_result | None:
        st = real_lstat(dir_fd, name, shown)
        swap_to_link(top / "a" / "b" / "c" / "f.txt", victim)
        return st

    monkeypatch.setattr(fs_mod, "lstat_in", lstat_then_swap)
    write_bytes(at(top, *FILE), b"new\n")
    assert victim.read_text() == "outside\n"
    assert (top / "a" / "b" / "c" / "f.txt").read_text() == "new\n"  # the link itself was replaced


def test_a_folder_swapped_for_a_symlink_in_the_middle_of_the_walk_is_refused(
    top: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_openat2(False)
    try:
        real_step = beneath_mod._step  # pyright: ignore[reportPrivateUsage]
        steps: list[str] = []

        def step_then_swap(dir_fd: int, name: str, shown: str) -> int:
            fd = real_step(dir_fd, name, shown)
            steps.append(name)
            if name == "a":  # "a" is open; "b" turns into a link out before it is opened
                swap_to_link(top / "a" / "b", outside_of(top) / "a" / "b")
            return fd

        monkeypatch.setattr(beneath_mod, "_step", step_then_swap)
        before = snapshot(outside_of(top))
        with pytest.raises(BeneathError, match="symbolic link"):
            write_bytes(at(top, *FILE), b"PWNED\n")
        assert steps == ["a"]
        assert snapshot(outside_of(top)) == before
    finally:
        use_openat2(HAS_OPENAT2)


def test_a_folder_made_by_the_walk_then_swapped_for_a_symlink_is_not_entered(
    top: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_openat2(False)
    real_mkdir = os.mkdir

    def mkdir_then_swap(name: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        real_mkdir(name, mode, dir_fd=dir_fd)
        if name == "fresh":
            os.rmdir(top / "fresh")
            (top / "fresh").symlink_to(outside_of(top), target_is_directory=True)

    try:
        monkeypatch.setattr(beneath_mod.os, "mkdir", mkdir_then_swap)
        with pytest.raises(BeneathError):
            write_bytes(at(top, "fresh", "x.txt"), b"PWNED\n")
    finally:
        monkeypatch.undo()
        use_openat2(HAS_OPENAT2)
    assert not (outside_of(top) / "x.txt").exists()


# --- the race, for real: a thread flips a folder and a symlink out while writes and reads run -----------


def test_a_thread_flipping_a_folder_to_a_symlink_out_never_gets_a_write_or_read_outside(
    top: Path, way: str
) -> None:
    outside = outside_of(top)
    (outside / "secret.txt").write_text("SECRET\n")
    sub = top / "sub"
    sub.mkdir()
    (sub / "secret.txt").write_text("inside\n")
    refused = done = i = 0
    with flipping(sub, outside) as flips:
        # At least 300 rounds, and on until the thread has flipped 300 times too: how the two threads share
        # the CPU depends on the machine's load (other test workers included), not on the round count.
        deadline = time.monotonic() + 60
        while i < 300 or flips[0] < 300:
            assert time.monotonic() < deadline, f"{flips[0]} flips in {i} rounds after 60 s"
            try:
                write_bytes(at(top, "sub", f"w{i % 7}.txt"), b"mine\n")
                with open_regular(at(top, "sub", "secret.txt")) as f:
                    assert f.read() == b"inside\n"
                done += 1
            except (BeneathError, FileNotFoundError, NotADirectoryError):
                refused += 1
            i += 1
    assert sorted(p.name for p in outside.iterdir()) == ["a", "secret.txt"]
    assert (outside / "secret.txt").read_text() == "SECRET\n"
    assert done + refused == i >= 300
    assert refused > 0  # the race was met, and refused
