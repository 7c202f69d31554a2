"""File tools: confinement, reads, writes, edits, patches, search, journal undo."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness import Result
from harness.testing import call_tool
from harness.tools import (
    ApplyPatch,
    EditFile,
    FileSystem,
    Glob,
    Grep,
    Journal,
    ListDir,
    LocalFileSystem,
    ReadFile,
    Root,
    WriteFile,
    file_tools,
)
from harness.tools import _read as read_mod
from harness.tools import _search as search_mod

pytestmark = pytest.mark.anyio


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    p = tmp_path / "proj"
    p.mkdir()
    (p / "src").mkdir()
    (p / "src" / "app.py").write_text("one\ntwo\nthree\n")
    return p


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    o = tmp_path / "outside"
    o.mkdir()
    (o / "secret.txt").write_text("TOP SECRET\n")
    return o


async def run(tool: Any, **inp: Any) -> Result:
    return (await call_tool(tool, inp)).result


# --- confinement ---------------------------------------------------------------------------------


@pytest.mark.parametrize("tool_cls", [ReadFile, WriteFile, EditFile, ListDir])
async def test_dotdot_escape_is_refused_with_an_error_result(
    proj: Path, outside: Path, tool_cls: Any
) -> None:
    tool = tool_cls(Root([proj]))
    inp: dict[str, Any] = {"path": "../outside/secret.txt"}
    if tool_cls is WriteFile:
        inp["content"] = "x"
    if tool_cls is EditFile:
        inp.update(old_text="TOP", new_text="NOT")
    r = await run(tool, **inp)
    assert r.error and "outside the allowed directories" in r.as_text()
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


async def test_absolute_path_outside_is_refused(proj: Path, outside: Path) -> None:
    r = await run(ReadFile(Root([proj])), path=str(outside / "secret.txt"))
    assert r.error and "outside" in r.as_text() and "TOP SECRET" not in r.as_text()


async def test_absolute_path_inside_is_read(proj: Path) -> None:
    r = await run(ReadFile(Root([proj])), path=str(proj / "src" / "app.py"))
    assert not r.error and "two" in r.as_text()


async def test_symlinked_file_leading_out_is_refused(proj: Path, outside: Path) -> None:
    (proj / "link.txt").symlink_to(outside / "secret.txt")
    r = await run(ReadFile(Root([proj])), path="link.txt")
    assert r.error and "symlink" in r.as_text() and "TOP SECRET" not in r.as_text()
    w = await run(WriteFile(Root([proj])), path="link.txt", content="pwned")
    assert w.error
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


async def test_symlinked_directory_leading_out_is_refused(proj: Path, outside: Path) -> None:
    (proj / "out").symlink_to(outside, target_is_directory=True)
    assert (await run(ReadFile(Root([proj])), path="out/secret.txt")).error
    assert (await run(WriteFile(Root([proj])), path="out/new.txt", content="x")).error
    assert (await run(ListDir(Root([proj])), path="out")).error
    assert not (outside / "new.txt").exists()


async def test_symlink_that_stays_inside_is_followed(proj: Path) -> None:
    (proj / "alias.py").symlink_to(proj / "src" / "app.py")
    r = await run(ReadFile(Root([proj])), path="alias.py")
    assert not r.error and "three" in r.as_text()


async def test_additional_root_is_allowed_and_relative_paths_use_the_first(proj: Path, outside: Path) -> None:
    root = Root([proj, outside])
    assert "TOP SECRET" in (await run(ReadFile(root), path=str(outside / "secret.txt"))).as_text()
    assert (await run(ReadFile(root), path="secret.txt")).error  # relative: against proj


async def test_glob_and_grep_do_not_leak_outside(proj: Path, outside: Path) -> None:
    (proj / "out").symlink_to(outside, target_is_directory=True)
    (proj / "leak.txt").symlink_to(outside / "secret.txt")
    root = Root([proj])
    g = await run(Glob(root), pattern="**/*.txt")
    assert "secret" not in g.as_text() and "leak" not in g.as_text()
    s = await run(Grep(root), pattern="SECRET")
    assert "SECRET" not in s.as_text() and s.value["matches"] == []
    assert (await run(Glob(root), pattern="../outside/*")).error
    assert (await run(Glob(root), pattern="/etc/*")).error
    assert (await run(Grep(root), pattern="x", path="../outside")).error
    assert (await run(Grep(root), pattern="x", glob="../*")).error


def test_root_rejects_relative_roots() -> None:
    from harness import HarnessUsageError

    with pytest.raises(HarnessUsageError):
        Root([Path("relative")])
    with pytest.raises(HarnessUsageError):
        Root([])


# --- bad input -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool_cls", "inp"),
    [
        (ReadFile, {}),
        (ReadFile, {"path": 3}),
        (ReadFile, {"path": "a", "offset": 0}),
        (ReadFile, {"path": "a", "limit": "ten"}),
        (WriteFile, {"path": "a"}),
        (EditFile, {"path": "a", "old_text": "", "new_text": "b"}),
        (EditFile, {"path": "a", "old_text": "x"}),
        (EditFile, {"path": "a", "old_text": "x", "new_text": "y", "replace_all": "yes"}),
        (ApplyPatch, {}),
        (ApplyPatch, {"patch": ""}),
        (ListDir, {}),
        (Glob, {"pattern": ""}),
        (Grep, {"pattern": "x", "case_sensitive": "no"}),
        (Grep, {"pattern": "x", "extra": 1}),
    ],
)
async def test_bad_input_gives_an_error_result(proj: Path, tool_cls: Any, inp: dict[str, Any]) -> None:
    r = (await call_tool(tool_cls(Root([proj])), inp)).result
    assert r.error and "invalid input" in r.as_text()


async def test_empty_path_and_nul_byte_are_refused(proj: Path) -> None:
    assert (await run(ReadFile(Root([proj])), path="   ")).error
    assert (await run(ReadFile(Root([proj])), path="a\x00b")).error


async def test_invalid_regex_is_an_error_result(proj: Path) -> None:
    r = await run(Grep(Root([proj])), pattern="(unclosed")
    assert r.error and "invalid regular expression" in r.as_text()


async def test_malformed_patch_is_an_error_result(proj: Path) -> None:
    r = await run(ApplyPatch(Root([proj])), patch="this is not a diff")
    assert r.error and "no file headers" in r.as_text()


# --- reads ---------------------------------------------------------------------------------------


async def test_read_numbers_lines_like_cat_n_and_reports_path_and_line(proj: Path) -> None:
    r = await run(ReadFile(Root([proj])), path="src/app.py")
    assert r.as_text() == "     1\tone\n     2\ttwo\n     3\tthree"
    assert r.value["path"] == str(proj / "src" / "app.py") and r.value["line"] == 1


async def test_read_offset_and_limit_select_lines_and_say_how_to_read_on(proj: Path) -> None:
    (proj / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    r = await run(ReadFile(Root([proj])), path="big.txt", offset=10, limit=5)
    assert r.as_text().splitlines()[0] == "    10\tline 10"
    assert "[lines 10-14 of 100; read on with offset=15]" in r.as_text()
    assert r.value["line"] == 10 and r.value["truncated"]


async def test_read_caps_lines_by_default(proj: Path) -> None:
    (proj / "huge.txt").write_text("x\n" * (read_mod.READ_LINES + 50))
    r = await run(ReadFile(Root([proj])), path="huge.txt")
    assert f"[lines 1-{read_mod.READ_LINES} of {read_mod.READ_LINES + 50}" in r.as_text()


async def test_read_cuts_long_lines_and_says_so(proj: Path) -> None:
    (proj / "min.js").write_text("a" * (read_mod.MAX_LINE_CHARS + 10) + "\n")
    r = await run(ReadFile(Root([proj])), path="min.js")
    assert "line cut, 10 more characters" in r.as_text() and "long line(s) cut" in r.as_text()


async def test_read_caps_total_output(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(read_mod, "MAX_READ_CHARS", 1000)
    (proj / "wide.txt").write_text(("y" * 100 + "\n") * 50)
    r = await run(ReadFile(Root([proj])), path="wide.txt")
    assert len(r.as_text()) < 1200 and "read on with offset=" in r.as_text()


async def test_read_of_a_big_file_streams_the_window(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(read_mod, "BIG_FILE_BYTES", 100)
    (proj / "log.txt").write_text("".join(f"entry {i}\r\n" for i in range(1, 1001)))
    r = await run(ReadFile(Root([proj])), path="log.txt", offset=500, limit=2)
    assert r.as_text().startswith("   500\tentry 500\n   501\tentry 501") and "of 1000" in r.as_text()


async def test_binary_file_is_described_not_dumped(proj: Path) -> None:
    (proj / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00\xff" * 500)
    r = await run(ReadFile(Root([proj])), path="img.png")
    assert not r.error and "binary file, image/png" in r.as_text() and "1008 bytes" in r.as_text()
    assert r.value["binary"] and r.value["size"] == 1008


async def test_read_missing_file_and_directory_are_errors(proj: Path) -> None:
    assert "does not exist" in (await run(ReadFile(Root([proj])), path="nope.txt")).as_text()
    assert "is a directory" in (await run(ReadFile(Root([proj])), path="src")).as_text()


async def test_read_past_the_end_is_an_error_and_empty_file_says_empty(proj: Path) -> None:
    assert (await run(ReadFile(Root([proj])), path="src/app.py", offset=9)).error
    (proj / "e.txt").write_text("")
    assert "is empty" in (await run(ReadFile(Root([proj])), path="e.txt")).as_text()


class _Buffers:
    """An editor-like FileSystem holding unsaved buffers."""

    def __init__(self, files: dict[Path, str]) -> None:
        self.files = files
        self.writes: list[Path] = []

    async def read_text(self, path: Path) -> str:
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path]

    async def write_text(self, path: Path, text: str) -> None:
        self.writes.append(path)
        self.files[path] = text


async def test_reads_and_writes_go_through_the_file_system_seam(proj: Path) -> None:
    app = proj / "src" / "app.py"
    fs = _Buffers({app: "unsaved buffer\n"})
    assert isinstance(fs, FileSystem)
    assert "unsaved buffer" in (await run(ReadFile(Root([proj]), fs=fs), path="src/app.py")).as_text()
    await run(EditFile(Root([proj]), fs=fs), path="src/app.py", old_text="unsaved", new_text="edited")
    assert fs.files[app] == "edited buffer\n" and fs.writes == [app]
    assert app.read_text() == "one\ntwo\nthree\n"  # the disk was not touched


# --- writes and edits ----------------------------------------------------------------------------


async def test_write_creates_file_and_parents_with_a_new_file_diff(proj: Path) -> None:
    r = await run(WriteFile(Root([proj])), path="pkg/new/mod.py", content="x = 1\n")
    target = proj / "pkg" / "new" / "mod.py"
    assert target.read_text() == "x = 1\n" and "Created" in r.as_text()
    assert r.value["diffs"] == [{"path": str(target), "old_text": None, "new_text": "x = 1\n"}]


async def test_a_write_of_one_line_full_of_escaped_line_breaks_is_written_as_sent_and_the_model_told(
    proj: Path,
) -> None:
    # What a model that escapes twice sends: the two characters \n where line breaks were meant.
    sent = "def f():\\n    return 1\\n"
    r = await run(WriteFile(Root([proj])), path="f.py", content=sent)
    assert (proj / "f.py").read_text() == sent  # (the intent is not certain: nothing is rewritten)
    assert "no line break but 2 times the two characters \\n" in r.as_text()
    plain = await run(WriteFile(Root([proj])), path="g.py", content='print("a\\nb")\n')
    assert "no line break" not in plain.as_text()  # a code's own escape, in a file with line breaks


async def test_write_replaces_and_keeps_crlf_endings(proj: Path) -> None:
    f = proj / "win.txt"
    f.write_bytes(b"a\r\nb\r\n")
    r = await run(WriteFile(Root([proj])), path="win.txt", content="c\nd\n")
    assert f.read_bytes() == b"c\r\nd\r\n"
    assert r.value["diffs"][0]["old_text"] == "a\r\nb\r\n"


async def test_edit_replaces_a_unique_match_and_reports_the_line(proj: Path) -> None:
    r = await run(EditFile(Root([proj])), path="src/app.py", old_text="two", new_text="TWO")
    assert (proj / "src" / "app.py").read_text() == "one\nTWO\nthree\n"
    assert r.value["line"] == 2 and r.value["locations"] == [
        {"path": str(proj / "src" / "app.py"), "line": 2}
    ]
    d = r.value["diffs"][0]
    assert d["old_text"] == "one\ntwo\nthree\n" and d["new_text"] == "one\nTWO\nthree\n"


async def test_edit_fails_clearly_when_old_text_is_missing(proj: Path) -> None:
    r = await run(EditFile(Root([proj])), path="src/app.py", old_text="four", new_text="4")
    assert r.error and "not found" in r.as_text()


async def test_edit_fails_with_the_count_when_old_text_is_ambiguous(proj: Path) -> None:
    (proj / "dup.txt").write_text("x = 1\ny = 2\nx = 1\nx = 1\n")
    r = await run(EditFile(Root([proj])), path="dup.txt", old_text="x = 1", new_text="x = 3")
    assert r.error and "occurs 3 times" in r.as_text() and "lines 1, 3, 4" in r.as_text()
    assert (proj / "dup.txt").read_text() == "x = 1\ny = 2\nx = 1\nx = 1\n"
    ok = await run(
        EditFile(Root([proj])), path="dup.txt", old_text="x = 1", new_text="x = 3", replace_all=True
    )
    assert not ok.error and (proj / "dup.txt").read_text() == "x = 3\ny = 2\nx = 3\nx = 3\n"


async def test_edit_preserves_crlf_line_endings(proj: Path) -> None:
    f = proj / "crlf.txt"
    f.write_bytes(b"alpha\r\nbeta\r\ngamma\r\n")
    r = await run(
        EditFile(Root([proj])), path="crlf.txt", old_text="alpha\nbeta", new_text="alpha\nBETA\nextra"
    )
    assert not r.error
    assert f.read_bytes() == b"alpha\r\nBETA\r\nextra\r\ngamma\r\n"


async def test_edit_of_a_missing_file_and_a_no_op_edit_are_errors(proj: Path) -> None:
    assert (
        "does not exist"
        in (await run(EditFile(Root([proj])), path="no.py", old_text="a", new_text="b")).as_text()
    )
    assert (await run(EditFile(Root([proj])), path="src/app.py", old_text="one", new_text="one")).error


# --- apply_patch ---------------------------------------------------------------------------------

MULTI = """\
diff --git a/src/app.py b/src/app.py
--- a/src/app.py
+++ b/src/app.py
@@ -1,3 +1,4 @@
 one
-two
+TWO
+two and a half
 three
--- /dev/null
+++ b/docs/new.md
@@ -0,0 +1,2 @@
+# New
+text
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-bye
"""


async def test_apply_patch_changes_creates_and_deletes_several_files(proj: Path) -> None:
    (proj / "old.txt").write_text("bye\n")
    r = await run(ApplyPatch(Root([proj])), patch=MULTI)
    assert not r.error, r.as_text()
    assert (proj / "src" / "app.py").read_text() == "one\nTWO\ntwo and a half\nthree\n"
    assert (proj / "docs" / "new.md").read_text() == "# New\ntext\n"
    assert not (proj / "old.txt").exists()
    diffs = {Path(d["path"]).name: d for d in r.value["diffs"]}
    assert diffs["new.md"]["old_text"] is None and diffs["old.txt"]["deleted"] is True
    assert (
        "M src/app.py (+2 -1)" in r.as_text()
        and "A docs/new.md" in r.as_text()
        and "D old.txt" in r.as_text()
    )


async def test_apply_patch_failure_leaves_every_file_unchanged(proj: Path) -> None:
    (proj / "old.txt").write_text("something else\n")
    (proj / "second.txt").write_text("keep\n")
    bad = MULTI + "--- a/second.txt\n+++ b/second.txt\n@@ -1 +1 @@\n-not what is there\n+x\n"
    r = await run(ApplyPatch(Root([proj])), patch=bad)
    assert r.error and "does not match" in r.as_text() and "no file was changed" in r.as_text()
    assert (proj / "src" / "app.py").read_text() == "one\ntwo\nthree\n"
    assert not (proj / "docs").exists()
    assert (proj / "old.txt").read_text() == "something else\n"
    assert (proj / "second.txt").read_text() == "keep\n"


async def test_apply_patch_outside_the_root_changes_nothing(proj: Path, outside: Path) -> None:
    patch = MULTI.replace("--- a/old.txt\n+++ /dev/null", "--- a/../outside/secret.txt\n+++ /dev/null")
    r = await run(ApplyPatch(Root([proj])), patch=patch)
    assert r.error and "outside" in r.as_text()
    assert (outside / "secret.txt").exists() and (proj / "src" / "app.py").read_text() == "one\ntwo\nthree\n"


async def test_apply_patch_finds_a_hunk_whose_line_numbers_drifted_and_keeps_crlf(proj: Path) -> None:
    f = proj / "w.txt"
    f.write_bytes(b"h1\r\nh2\r\na\r\nb\r\nc\r\n")
    patch = "--- a/w.txt\n+++ b/w.txt\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
    r = await run(ApplyPatch(Root([proj])), patch=patch)
    assert not r.error, r.as_text()
    assert f.read_bytes() == b"h1\r\nh2\r\na\r\nB\r\nc\r\n"


async def test_apply_patch_no_newline_marker(proj: Path) -> None:
    patch = "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+last\n\\ No newline at end of file\n"
    assert not (await run(ApplyPatch(Root([proj])), patch=patch)).error
    assert (proj / "n.txt").read_text() == "last"


async def test_apply_patch_refuses_to_create_an_existing_file(proj: Path) -> None:
    patch = "--- /dev/null\n+++ b/src/app.py\n@@ -0,0 +1 @@\n+x\n"
    r = await run(ApplyPatch(Root([proj])), patch=patch)
    assert r.error and "already exists" in r.as_text()


# --- list_dir, glob, grep ------------------------------------------------------------------------


async def test_list_dir_marks_directories_and_sizes(proj: Path, outside: Path) -> None:
    (proj / "a.txt").write_text("12345")
    (proj / "out").symlink_to(outside, target_is_directory=True)
    r = await run(ListDir(Root([proj])), path=".")
    lines = r.as_text().splitlines()
    assert "src/" in lines and "a.txt  (5 bytes)" in lines and "out -> (outside the project)" in lines
    assert str(outside) not in r.as_text()
    assert "not a directory" in (await run(ListDir(Root([proj])), path="a.txt")).as_text()


async def test_glob_matches_recursively_and_skips_vcs_dirs(proj: Path) -> None:
    (proj / "src" / "deep").mkdir()
    (proj / "src" / "deep" / "x.py").write_text("")
    (proj / ".git").mkdir()
    (proj / ".git" / "hook.py").write_text("")
    r = await run(Glob(Root([proj])), pattern="**/*.py")
    assert r.as_text().splitlines() == ["src/app.py", "src/deep/x.py"]
    assert (await run(Glob(Root([proj])), pattern="*.py", path="src")).value["files"] == [
        str(proj / "src" / "app.py")
    ]
    assert "No files match" in (await run(Glob(Root([proj])), pattern="*.rs")).as_text()


async def test_grep_finds_lines_with_glob_filter_and_case_option(proj: Path) -> None:
    (proj / "notes.md").write_text("Two things\n")
    (proj / "blob.bin").write_bytes(b"two\x00\x01")
    r = await run(Grep(Root([proj])), pattern="two")
    assert r.as_text().splitlines() == ["src/app.py:2: two"]
    r2 = await run(Grep(Root([proj])), pattern="two", case_sensitive=False)
    assert sorted(r2.as_text().splitlines()) == ["notes.md:1: Two things", "src/app.py:2: two"]
    r3 = await run(Grep(Root([proj])), pattern="two", case_sensitive=False, glob="*.md")
    assert r3.as_text().splitlines() == ["notes.md:1: Two things"]
    assert (await run(Grep(Root([proj])), pattern="zzz")).as_text() == "No matches."


async def test_grep_caps_matches_and_says_so(proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_mod, "MAX_GREP", 5)
    (proj / "many.txt").write_text("hit\n" * 20)
    r = await run(Grep(Root([proj])), pattern="hit", path="many.txt")
    assert len(r.value["matches"]) == 5 and r.value["truncated"] and "only the first 5" in r.as_text()


# --- journal -------------------------------------------------------------------------------------


async def test_journal_undo_restores_edits_and_deletes_created_files(proj: Path) -> None:
    journal = Journal()
    tools = {t.spec().name: t for t in file_tools(Root([proj]), journal=journal)}
    await run(tools["edit_file"], path="src/app.py", old_text="one", new_text="ONE")
    await run(tools["write_file"], path="made.txt", content="new\n")
    (proj / "gone.txt").write_text("bye\n")
    await run(tools["apply_patch"], patch="--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n")
    assert len(journal) == 3

    undone = await journal.undo()
    assert [(u.path.name, u.action) for u in undone] == [("gone.txt", "recreated")]
    assert (proj / "gone.txt").read_text() == "bye\n"

    undone = await journal.undo(2)
    assert [(u.path.name, u.action) for u in undone] == [("made.txt", "deleted"), ("app.py", "restored")]
    assert not (proj / "made.txt").exists()
    assert (proj / "src" / "app.py").read_text() == "one\ntwo\nthree\n"
    assert await journal.undo() == [] and len(journal) == 0


async def test_journal_undo_reports_overwriting_later_changes(proj: Path) -> None:
    journal = Journal()
    await run(EditFile(Root([proj]), journal=journal), path="src/app.py", old_text="one", new_text="1")
    (proj / "src" / "app.py").write_text("user changed it\n")
    [u] = await journal.undo()
    assert u.overwrote and (proj / "src" / "app.py").read_text() == "one\ntwo\nthree\n"


async def test_failed_patch_records_nothing_in_the_journal(proj: Path) -> None:
    journal = Journal()
    bad = "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-nope\n+x\n"
    assert (await run(ApplyPatch(Root([proj]), journal=journal), patch=bad)).error
    assert len(journal) == 0


def test_file_tools_hints_and_names(proj: Path) -> None:
    tools = file_tools(Root([proj]))
    specs = {t.spec().name: t.spec() for t in tools}
    assert set(specs) == {"read_file", "write_file", "edit_file", "apply_patch", "list_dir", "glob", "grep"}
    for n in ("read_file", "list_dir", "glob", "grep"):
        assert specs[n].hints.read_only
    for n in ("write_file", "edit_file", "apply_patch"):
        h = specs[n].hints
        assert not h.read_only and not h.destructive and not h.idempotent
    assert isinstance(LocalFileSystem(), FileSystem)
