"""A folder someone else removes while ``private_dir`` makes it, or while ``write_text_atomic`` writes into it
(a session deleted as it is resumed), is reported as gone (``FileNotFoundError``, which callers handle),
not as a file in the way; a file in the way is still refused as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.atomic import private_dir, write_text_atomic


def test_a_folder_removed_as_the_write_makes_sure_of_it_is_reported_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sess"
    folder.mkdir()
    mkdir = Path.mkdir

    def raced(self: Path, mode: int = 0o777, parents: bool = False, exist_ok: bool = False) -> None:
        if self == folder:  # it exists at the mkdir, and is removed before mkdir looks again
            folder.rmdir()
            raise FileExistsError(17, "File exists", str(folder))
        mkdir(self, mode, parents, exist_ok)

    monkeypatch.setattr(Path, "mkdir", raced)
    with pytest.raises(FileNotFoundError):
        write_text_atomic(folder / "meta.json", "{}", sync=False)


def test_a_folder_removed_as_private_dir_makes_it_is_reported_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sess"
    is_dir = Path.is_dir

    def raced(self: Path) -> bool:
        if self == folder and folder.exists():
            folder.rmdir()  # made, then removed before the check
        return is_dir(self)

    monkeypatch.setattr(Path, "is_dir", raced)
    with pytest.raises(FileNotFoundError):
        private_dir(folder)


def test_a_file_where_the_folder_should_be_is_still_refused(tmp_path: Path) -> None:
    in_the_way = tmp_path / "sess"
    in_the_way.write_text("not a folder")
    with pytest.raises(NotADirectoryError):
        private_dir(in_the_way)
    with pytest.raises(FileExistsError):
        write_text_atomic(in_the_way / "meta.json", "{}", sync=False)
