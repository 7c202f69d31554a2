"""Walks and reads that cannot hang or grow: FIFOs and devices never opened, RE2 globs, typed inputs,
the journal bounded in bytes."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from harness.testing import call_tool
from harness.tools import FileChange, Glob, Journal, ListDir, LocalFileSystem, ReadFile, Root, file_tools
from harness.tools._fs import NotRegularFileError, open_regular
from harness.tools._inputs import input_schema
from harness.tools._read import ReadInput
from harness.tools._walk import glob_regex, walk_files

pytestmark = pytest.mark.anyio


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("a\n")
    os.mkfifo(tmp_path / "fifo")
    os.mkfifo(tmp_path / "d" / "fifo2")
    return tmp_path


def test_a_walk_yields_regular_files_only(tree: Path) -> None:
    assert [rel for _, rel, _ in walk_files(Root([tree]), tree, lambda: False)] == ["d/a.txt"]


async def test_a_fifo_is_refused_without_being_opened(tree: Path) -> None:
    with pytest.raises(NotRegularFileError):
        open_regular(Root([tree]).place(tree / "fifo"))
    with anyio.fail_after(10):
        with pytest.raises(NotRegularFileError):
            await LocalFileSystem().read_text(tree / "fifo")
        r = (await call_tool(ReadFile(Root([tree])), {"path": "fifo"})).result
        assert r.error and "not a regular file" in r.as_text()
        listing = (await call_tool(ListDir(Root([tree])), {"path": "."})).result
        assert {e["name"]: e["type"] for e in listing.value["entries"]}["fifo"] == "other"
        found = (await call_tool(Glob(Root([tree])), {"pattern": "**/*"})).result
        assert [Path(p).name for p in found.value["files"]] == ["a.txt"]
        with pytest.raises(NotRegularFileError):
            await LocalFileSystem().write_text(tree / "fifo", "x")  # opening it to write would block
        for name, inp in (
            ("write_file", {"content": "x"}),
            ("edit_file", {"old_text": "a", "new_text": "b"}),
        ):
            tool = {t.spec().name: t for t in file_tools(Root([tree]))}[name]
            assert (await call_tool(tool, {"path": "fifo", **inp})).result.error


def test_a_glob_that_would_backtrack_is_linear() -> None:
    rx = glob_regex("*a*a*a*a*a*a*a*a*a*a*a*a*b")
    assert rx.fullmatch("a" * 5000) is None
    assert rx.fullmatch("a" * 12 + "b") is not None
    assert glob_regex("src/**/*.py").fullmatch("src/x/y/z.py") is not None


def test_schemas_come_from_the_typed_inputs() -> None:
    schema = input_schema(ReadInput)
    assert schema["required"] == ["path"] and schema["additionalProperties"] is False
    assert schema["properties"]["offset"] == {
        "type": "integer",
        "minimum": 1,
        "description": "First line to read, 1-based",
        "default": 1,
    }
    for t in file_tools(Root([Path("/")])):
        s = t.spec().schema
        assert s["type"] == "object" and set(s["required"]) <= set(s["properties"])


def test_the_journal_forgets_the_oldest_calls_past_its_byte_budget(tmp_path: Path) -> None:
    journal = Journal(max_bytes=1000)
    for i in range(5):
        journal.record([FileChange(tmp_path / f"{i}.txt", None, "x" * 400)], f"write {i}")
    assert [label for label, _ in journal.entries()] == ["write 3", "write 4"]
    journal.record([FileChange(tmp_path / "big.txt", None, "y" * 5000)], "big")
    assert [label for label, _ in journal.entries()] == ["big"]  # the newest is always kept
