"""apply_patch reads the ``*** Begin Patch`` envelope GPT models write for a tool of that name: files added,
updated (moved), deleted; hunks placed by their lines, after an ``@@`` anchor line, or at the file's end;
leniently where models slip, and refused with the line where it cannot be read."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from harness import Result
from harness.testing import call_tool
from harness.tools import ApplyPatch, PatchError, Root, parse_patch

pytestmark = pytest.mark.anyio

APP = 'import os\n\n\ndef greet():\n    print("Hi")\n    return 1\n\n\ndef other():\n    print("Hi")\n    pass\n'


async def patch(proj: Path, text: str) -> Result:
    return (await call_tool(ApplyPatch(Root([proj])), {"patch": text})).result


def envelope(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch", ""])


async def test_an_envelope_adds_updates_moves_and_deletes_files_all_at_once(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    (tmp_path / "old.txt").write_text("bye\n")
    (tmp_path / "notes.md").write_text("# Notes\nfirst\n")
    r = await patch(
        tmp_path,
        envelope(
            "*** Add File: docs/hello.txt",
            "+Hello",
            "+world",
            "*** Update File: app.py",
            "@@ def greet():",
            '-    print("Hi")',
            '+    print("Hello")',
            "*** Update File: notes.md",
            "*** Move to: NOTES.md",
            "@@",
            " # Notes",
            "-first",
            "+second",
            "*** Delete File: old.txt",
        ),
    )
    assert not r.error, r.as_text()
    assert (tmp_path / "docs" / "hello.txt").read_text() == "Hello\nworld\n"
    assert (tmp_path / "app.py").read_text() == APP.replace('print("Hi")', 'print("Hello")', 1)
    assert (tmp_path / "NOTES.md").read_text() == "# Notes\nsecond\n" and not (tmp_path / "notes.md").exists()
    assert not (tmp_path / "old.txt").exists()
    assert "A docs/hello.txt" in r.as_text() and "D old.txt" in r.as_text()


async def test_an_anchor_places_a_hunk_whose_lines_occur_earlier_too(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    r = await patch(
        tmp_path,
        envelope("*** Update File: app.py", "@@ def other():", '-    print("Hi")', '+    print("Bye")'),
    )
    assert not r.error, r.as_text()
    assert (tmp_path / "app.py").read_text() == APP.replace(
        '    print("Hi")\n    pass', '    print("Bye")\n    pass'
    )


async def test_hunks_are_placed_in_order_each_after_the_one_before(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    r = await patch(
        tmp_path,
        envelope(
            "*** Update File: app.py",
            "@@",
            '-    print("Hi")',
            '+    print("one")',
            "@@",
            '-    print("Hi")',
            '+    print("two")',
        ),
    )
    assert not r.error, r.as_text()
    text = (tmp_path / "app.py").read_text()
    assert text.index('print("one")') < text.index('print("two")') and 'print("Hi")' not in text


async def test_end_of_file_places_a_hunk_at_the_end_and_a_pure_addition_goes_after_its_anchor(
    tmp_path: Path,
) -> None:
    (tmp_path / "f.txt").write_text("x\nmid\nx\n")
    r = await patch(tmp_path, envelope("*** Update File: f.txt", "@@", "-x", "+last", "*** End of File"))
    assert not r.error, r.as_text()
    assert (tmp_path / "f.txt").read_text() == "x\nmid\nlast\n"
    r = await patch(tmp_path, envelope("*** Update File: f.txt", "@@ mid", "+after mid"))
    assert not r.error, r.as_text()
    assert (tmp_path / "f.txt").read_text() == "x\nmid\nafter mid\nlast\n"


async def test_a_shell_heredoc_around_it_no_end_line_and_a_first_hunk_without_header_are_read(
    tmp_path: Path,
) -> None:
    (tmp_path / "f.txt").write_text("a\nb\n\nc\n")
    text = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: f.txt\n a\n-b\n+B\n\n c\n"
    r = await patch(tmp_path, text)  # (an empty line inside a hunk: an empty context line)
    assert not r.error, r.as_text()
    assert (tmp_path / "f.txt").read_text() == "a\nB\n\nc\n"


async def test_an_anchor_not_in_the_file_is_refused_naming_the_nearest_line_and_nothing_changes(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text(APP)
    r = await patch(
        tmp_path, envelope("*** Update File: app.py", "@@ def great():", "-    return 1", "+    return 2")
    )
    assert r.error and "no line 'def great():'" in r.as_text() and "def greet():" in r.as_text()
    assert (tmp_path / "app.py").read_text() == APP


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (("*** Update File: app.py", "@@", "oops"), "line 4: a hunk line of app.py"),
        (("*** Add File: n.txt", "no plus"), "line 3: a line of an added file starts with '+'"),
        (("*** Rename File: app.py",), "line 2: expected '*** Add File: <path>'"),
        (("*** Update File: app.py", "@@", " import os"), "changes no line"),
        (("*** Update File:",), "names no path"),
        ((), "changes no file"),
    ],
)
def test_what_cannot_be_read_is_refused_saying_where(body: tuple[str, ...], said: str) -> None:
    with pytest.raises(PatchError, match=re.escape(said)):
        parse_patch(envelope(*body))


def test_the_files_an_envelope_names_are_the_ones_it_writes() -> None:
    # The permission policy and the session's confinement read a patch's files with this parser too.
    fps = parse_patch(
        envelope("*** Update File: a.py", "*** Move to: b/a.py", "@@", "-x", "+y", "*** Delete File: c")
    )
    named: list[Any] = [(fp.old_path, fp.new_path) for fp in fps]
    assert named == [("a.py", "b/a.py"), ("c", None)]
