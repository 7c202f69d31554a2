"""edit_file and apply_patch place text that drifted from the file: the looseness ladder, level by level."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness import Result
from harness.testing import call_tool
from harness.tools import ApplyPatch, EditFile, Root

pytestmark = pytest.mark.anyio

PY = "class A:\n    def f(self):\n        if ready:\n            return 1\n        return 2\n"


async def run(tool: Any, **inp: Any) -> Result:
    return (await call_tool(tool, inp)).result


async def edit(proj: Path, name: str, old: str, new: str, **kw: Any) -> Result:
    return await run(EditFile(Root([proj])), path=name, old_text=old, new_text=new, **kw)


async def test_an_exact_match_is_still_applied_and_says_nothing_of_looseness(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(PY)
    r = await edit(tmp_path, "a.py", "return 2", "return 3")
    assert not r.error and "ignoring" not in r.as_text() and r.meta.get("match") is None
    assert (tmp_path / "a.py").read_text() == PY.replace("return 2", "return 3")


async def test_line_endings_level_matches_lf_text_in_a_crlf_file_and_keeps_crlf(tmp_path: Path) -> None:
    f = tmp_path / "w.txt"
    f.write_bytes(b"\xef\xbb\xbfalpha\r\nbeta\r\ngamma")  # a BOM, CRLF, and no final newline
    r = await edit(tmp_path, "w.txt", "alpha\r\nbeta\n", "alpha\nBETA\n")
    assert not r.error, r.as_text()
    assert "ignoring line endings" in r.as_text() and r.meta["match"] == "line endings"
    assert f.read_bytes() == b"\xef\xbb\xbfalpha\r\nBETA\r\ngamma"


async def test_trailing_whitespace_level_forgives_spaces_the_file_lacks(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(PY)
    r = await edit(
        tmp_path,
        "a.py",
        "        if ready:   \n            return 1  \n",
        "        if ready:\n            return 7\n",
    )
    assert not r.error and "ignoring trailing whitespace" in r.as_text()
    assert (tmp_path / "a.py").read_text() == PY.replace("return 1", "return 7")


async def test_indentation_level_reindents_the_new_text_to_the_files_four_spaces(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(PY)
    r = await edit(
        tmp_path,
        "a.py",
        "  def f(self):\n    if ready:\n      return 1\n",
        "  def f(self):\n    if ready:\n      log()\n      return 1\n",
    )
    assert not r.error and "ignoring indentation" in r.as_text() and "at line 2" in r.as_text()
    assert (tmp_path / "a.py").read_text() == (
        "class A:\n    def f(self):\n        if ready:\n            log()\n            return 1\n        return 2\n"
    )


async def test_indentation_level_writes_tabs_into_a_tab_indented_file(tmp_path: Path) -> None:
    (tmp_path / "m.go").write_text("func f() {\n\tif x {\n\t\treturn\n\t}\n}\n")
    r = await edit(
        tmp_path,
        "m.go",
        "    if x {\n        return\n    }\n",
        "    if x {\n        y()\n        return\n    }\n",
    )
    assert not r.error, r.as_text()
    assert (tmp_path / "m.go").read_text() == "func f() {\n\tif x {\n\t\ty()\n\t\treturn\n\t}\n}\n"


async def test_unicode_level_matches_curly_quotes_dashes_and_nbsp_and_writes_the_files_plain_ones(
    tmp_path: Path,
) -> None:
    (tmp_path / "s.py").write_text('msg = "it\'s done"  # a - b\nx = 1\n')
    r = await edit(
        tmp_path,
        "s.py",
        "msg = \u201cit\u2019s done\u201d\u00a0 # a \u2014 b\n",
        "msg = \u201cit\u2019s over\u201d\n",
    )
    assert not r.error and "ignoring unicode punctuation" in r.as_text()
    assert (tmp_path / "s.py").read_text() == 'msg = "it\'s over"\nx = 1\n'


async def test_a_file_that_uses_curly_quotes_keeps_the_models_curly_quotes(tmp_path: Path) -> None:
    (tmp_path / "t.md").write_text("Say \u201chi\u201d  \nend\n")
    r = await edit(tmp_path, "t.md", "Say \u201chi\u201d\n", "Say \u201chello\u201d\n")
    assert not r.error and "trailing whitespace" in r.as_text()
    assert (tmp_path / "t.md").read_text() == "Say \u201chello\u201d\nend\n"


async def test_an_ambiguous_loose_match_is_refused_naming_its_lines_and_nothing_changes(
    tmp_path: Path,
) -> None:
    body = "def a():\n    pass\n\ndef b():\n    pass\n"
    (tmp_path / "d.py").write_text(body)
    r = await edit(tmp_path, "d.py", "  pass  \n", "  return 1\n")
    assert r.error and "ignoring indentation" in r.as_text() and "lines 2, 5" in r.as_text()
    assert (tmp_path / "d.py").read_text() == body
    ok = await edit(tmp_path, "d.py", "  pass  \n", "  return 1\n", replace_all=True)
    assert not ok.error and (tmp_path / "d.py").read_text() == body.replace("pass", "return 1")


async def test_the_first_level_with_a_match_wins_even_when_a_looser_one_would_find_more(
    tmp_path: Path,
) -> None:
    # "x = 1  " matches line 1 ignoring trailing whitespace; line 3 needs indentation forgiven too.
    (tmp_path / "f.py").write_text("x = 1\ny = 2\n    x = 1\n")
    r = await edit(tmp_path, "f.py", "x = 1  \n", "x = 9\n")
    assert not r.error and "trailing whitespace" in r.as_text()
    assert (tmp_path / "f.py").read_text() == "x = 9\ny = 2\n    x = 1\n"


async def test_text_found_at_no_level_is_still_an_error_that_says_what_was_tried(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(PY)
    r = await edit(tmp_path, "a.py", "return 99\n", "return 1\n")
    assert r.error and "not found" in r.as_text() and "indentation" in r.as_text()
    assert (tmp_path / "a.py").read_text() == PY


async def test_apply_patch_places_a_hunk_whose_context_lost_its_indentation(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(PY)
    patch = "--- a/a.py\n+++ b/a.py\n@@ -2,3 +2,3 @@\n   def f(self):\n-    if ready:\n+    if not ready:\n       return 1\n"
    r = await run(ApplyPatch(Root([tmp_path])), patch=patch)
    assert not r.error, r.as_text()
    assert "matched at line 2 ignoring indentation" in r.as_text()
    assert (tmp_path / "a.py").read_text() == PY.replace("if ready", "if not ready")


async def test_apply_patch_refuses_a_loose_hunk_that_fits_two_places(tmp_path: Path) -> None:
    body = "def a():\n    pass\n\ndef b():\n    pass\n"
    (tmp_path / "d.py").write_text(body)
    patch = "--- a/d.py\n+++ b/d.py\n@@ -1,1 +1,1 @@\n-  pass\n+  return\n"
    r = await run(ApplyPatch(Root([tmp_path])), patch=patch)
    assert r.error and "lines 2, 5" in r.as_text() and "no file was changed" in r.as_text()
    assert (tmp_path / "d.py").read_text() == body


# --- text escaped twice: the two characters \n for each line break ---------------------------------------

ESC = 'def f():\n    return "a\\nb"\n\n\ndef g():\n    pass\n'  # the code has its own \n escape


async def test_an_old_text_escaped_twice_is_read_once_more_and_the_codes_own_escapes_survive(
    tmp_path: Path,
) -> None:
    (tmp_path / "e.py").write_text(ESC)
    # As the arguments arrive from a model that escaped twice: line breaks as \n, the code's \n as \\n.
    old = 'def f():\\n    return "a\\\\nb"'
    new = 'def f():\\n    return "a\\\\nc"'
    r = await edit(tmp_path, "e.py", old, new)
    assert not r.error, r.as_text()
    assert "escaped twice" in r.as_text() and "send plain text" in r.as_text()
    assert r.meta["match"] == "double escaping"
    assert (tmp_path / "e.py").read_text() == ESC.replace('"a\\nb"', '"a\\nc"')


async def test_text_escaped_twice_and_drifted_is_placed_by_the_ladder_after_reading_it_once_more(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.py").write_text(PY)
    r = await edit(tmp_path, "a.py", "  if ready:\\n    return 1", "  if ready:\\n    return 10")
    assert not r.error, r.as_text()
    assert r.meta["match"] == "double escaping, then indentation" and "ignoring indentation" in r.as_text()
    assert (tmp_path / "a.py").read_text() == PY.replace("return 1\n", "return 10\n")


async def test_text_with_a_real_line_break_is_never_read_as_escaped_twice(tmp_path: Path) -> None:
    (tmp_path / "e.py").write_text(ESC)
    r = await edit(tmp_path, "e.py", 'def f():\n    return "a\\\\nb"\n', "x\n")  # \\n: not the file's \n
    assert r.error and "not found" in r.as_text()
    assert (tmp_path / "e.py").read_text() == ESC


async def test_text_escaped_twice_that_matches_nowhere_is_refused_with_the_nearest_lines(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.py").write_text(PY)
    r = await edit(tmp_path, "a.py", "        if is_ready:\\n            return 1", "x")
    assert r.error and "the nearest text is at lines 3-4" in r.as_text()
    assert (tmp_path / "a.py").read_text() == PY


# --- hunk headers that miscount their lines ------------------------------------------------------------


async def test_a_hunk_whose_header_undercounts_applies_every_line_it_has_and_says_so(tmp_path: Path) -> None:
    # The header says 2 and 2; the hunk adds a third line. Read by the counts alone, that line was dropped
    # and the patch reported success.
    (tmp_path / "a.py").write_text("a\nb\nc\n")
    patch = "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n+B2\n"
    r = await run(ApplyPatch(Root([tmp_path])), patch=patch)
    assert not r.error, r.as_text()
    assert (tmp_path / "a.py").read_text() == "a\nB\nB2\nc\n"
    assert "has 2 old and 3 new lines: recounted" in r.as_text()


async def test_a_hunk_whose_header_overcounts_applies_as_its_lines_say(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a\nb\nc\n")
    patch = (
        "--- a/a.py\n+++ b/a.py\n@@ -1,7 +1,9 @@\n a\n-b\n+B\n\n--- a/c.py\n+++ b/c.py\n@@ -1 +1 @@\n-x\n+y\n"
    )
    (tmp_path / "c.py").write_text("x\n")
    r = await run(ApplyPatch(Root([tmp_path])), patch=patch)
    assert not r.error, r.as_text()
    assert (tmp_path / "a.py").read_text() == "a\nB\nc\n" and (tmp_path / "c.py").read_text() == "y\n"


async def test_a_removed_sql_comment_inside_the_counts_is_not_read_as_a_file_header(tmp_path: Path) -> None:
    (tmp_path / "q.sql").write_text("-- old\nselect 1;\n")
    patch = "--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,2 @@\n--- old\n+++ new\n select 1;\n"
    r = await run(ApplyPatch(Root([tmp_path])), patch=patch)
    assert not r.error, r.as_text()
    assert (tmp_path / "q.sql").read_text() == "++ new\nselect 1;\n" and "recounted" not in r.as_text()


async def test_a_hunk_line_without_its_prefix_inside_the_counts_is_refused_never_cut_short(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.py").write_text("a\nb\nc\n")
    patch = "--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n a\nb\n-c\n+C\n"  # 'b' lost its space
    r = await run(ApplyPatch(Root([tmp_path])), patch=patch)
    assert r.error and "line 5: 'b'" in r.as_text() and "no file was changed" in r.as_text()
    assert (tmp_path / "a.py").read_text() == "a\nb\nc\n"


async def test_a_last_hunk_with_fewer_lines_than_counted_is_refused_as_cut_short(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("a\nb\nc\nd\n")
    patch = "--- a/a.py\n+++ b/a.py\n@@ -1,4 +1,4 @@\n a\n-b\n"  # ends before its +B, c and d
    r = await run(ApplyPatch(Root([tmp_path])), patch=patch)
    assert r.error and "cut short" in r.as_text()
    assert (tmp_path / "a.py").read_text() == "a\nb\nc\nd\n"
