"""When a model's text matches nowhere, even loosely, edit_file and apply_patch name the file's nearest lines
(numbered as read_file shows them) so the next call can copy them instead of reading the whole file again."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from harness import Result
from harness.testing import call_tool
from harness.tools import ApplyPatch, EditFile, Root
from harness.tools._nearest import nearest, shown_lines

pytestmark = pytest.mark.anyio

SRC = (
    "import os\n"
    "\n"
    "\n"
    "def load(path):\n"
    '    """Read the settings file."""\n'
    "    with open(path) as handle:\n"
    "        text = handle.read()\n"
    "    return parse(text)\n"
    "\n"
    "\n"
    "def parse(text):\n"
    "    return dict(line.split('=', 1) for line in text.splitlines())\n"
)


async def run(tool: Any, **inp: Any) -> Result:
    return (await call_tool(tool, inp)).result


async def edit(proj: Path, old: str, new: str) -> Result:
    return await run(EditFile(Root([proj])), path="m.py", old_text=old, new_text=new)


def rows(message: str) -> list[tuple[int, str]]:
    """The numbered lines a message shows, as read_file writes them (``{n:6}\\t{text}``)."""
    return [(int(m.group(1)), m.group(2)) for m in re.finditer(r"^ {0,5}(\d+)\t(.*)$", message, re.M)]


async def test_a_block_with_a_renamed_name_is_refused_showing_the_files_lines_which_then_apply(
    tmp_path: Path,
) -> None:
    (tmp_path / "m.py").write_text(SRC)
    old = "    with open(path) as fh:\n        text = fh.read()\n    return parse(text)\n"
    r = await edit(tmp_path, old, "    return parse(open(path).read())\n")
    message = r.as_text()
    assert r.error and "not found" in message
    assert "the nearest text is at lines 6-8" in message and "% alike" in message
    shown = rows(message)
    assert shown == [
        (6, "    with open(path) as handle:"),
        (7, "        text = handle.read()"),
        (8, "    return parse(text)"),
    ]
    assert (tmp_path / "m.py").read_text() == SRC  # nothing applied from a near match
    # The lines as shown are what the next call needs.
    copied = "".join(text + "\n" for _, text in shown)
    again = await edit(tmp_path, copied, "    return parse(open(path).read())\n")
    assert not again.error, again.as_text()
    assert "open(path).read()" in (tmp_path / "m.py").read_text()


async def test_a_block_that_dropped_a_line_is_shown_with_the_line_it_lacks(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SRC)
    old = "def load(path):\n    with open(path) as handle:\n        text = handle.read()\n"  # no docstring
    r = await edit(tmp_path, old, "def load(path):\n    pass\n")
    assert r.error
    assert [n for n, _ in rows(r.as_text())] == [4, 5, 6, 7]


async def test_text_unlike_anything_in_the_file_gets_no_place_only_the_advice_to_read_it_again(
    tmp_path: Path,
) -> None:
    (tmp_path / "m.py").write_text(SRC)
    r = await edit(tmp_path, "class Settings(BaseModel):\n    debug: bool = False\n", "x = 1\n")
    assert r.error and "read the file again" in r.as_text()
    assert "nearest" not in r.as_text() and rows(r.as_text()) == []


async def test_apply_patch_names_the_nearest_lines_for_a_hunk_that_matches_nowhere(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SRC)
    patch = (
        "--- a/m.py\n+++ b/m.py\n@@ -11,2 +11,2 @@\n"
        " def parse(txt):\n"
        "-    return dict(line.split('=', 1) for line in txt.splitlines())\n"
        "+    return dict(line.split('=', 1) for line in txt.splitlines() if line)\n"
    )
    r = await run(ApplyPatch(Root([tmp_path])), patch=patch)
    message = r.as_text()
    assert r.error and "does not match the file" in message and "no file was changed" in message
    assert [n for n, _ in rows(message)] == [11, 12]
    assert (tmp_path / "m.py").read_text() == SRC


def test_the_nearest_place_is_looked_for_at_or_after_the_given_line_only() -> None:
    lines = ["def a():", "    return compute(1)", "", "def b():", "    return compute(2)"]
    block = ["    return compute(3)"]
    assert nearest(lines, block) is not None
    found = nearest(lines, block, start=2)
    assert found is not None and found.start == 4


def test_long_lines_and_long_places_are_cut_when_shown() -> None:
    lines = [f"value_{i} = {'x' * (400 if i == 3 else 10)}" for i in range(100)]
    block = [f"value_{i} = {'x' * (400 if i == 3 else 10)}!" for i in range(60)]  # each line drifted
    found = nearest(lines, block)
    assert found is not None and found.start == 0
    text = shown_lines(found)
    assert "[... line cut]" in text and re.search(r"\[\.\.\. \d+ more lines\]", text)
    assert len(text.splitlines()) == 41
