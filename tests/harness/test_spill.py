"""Spill: a long result goes whole into the session's folder; read_file and grep read it back, read-only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness import Message, Run, Tools, tool
from harness.spill import Spill
from harness.testing import FakeModel, Reply

pytestmark = pytest.mark.anyio

LONG = "".join(f"line {i}\n" for i in range(1, 20001))


@tool
def big() -> str:
    return LONG


async def _turn(spill: Spill, *calls: tuple[str, dict[str, object]]) -> dict[str, str]:
    from harness.tools import Grep, ReadFile, Root

    project = spill.folder.parent.parent / "project"  # the tools' own root: the folder is outside it
    project.mkdir(exist_ok=True)
    root = Root([str(project)])
    replies = [Reply(tool_calls=[(n, i, f"c{k}")]) for k, (n, i) in enumerate(calls)]
    run = Run(
        FakeModel([*replies, Reply(text="done")]), Tools(big, ReadFile(root), Grep(root)), middleware=[spill]
    )
    async with run.turn(Message.user("go")) as events:
        async for _ in events:
            pass
    return {r.call_id: r.text for m in run.messages() for r in m.tool_results}


async def test_a_result_over_the_budget_is_cut_and_kept_whole(tmp_path: Path) -> None:
    spill = Spill(tmp_path / "session" / "outputs", max_chars=4000)
    results = await _turn(spill, ("big", {}))
    text = results["c0"]
    assert len(text) < 5000 and text.startswith("line 1\n") and text.rstrip().endswith("line 20000")
    [kept] = list((tmp_path / "session" / "outputs").iterdir())
    assert kept.read_text() == LONG and str(kept) in text
    assert oct(kept.stat().st_mode & 0o777) == "0o600"


async def test_the_budget_is_a_share_of_a_small_window(tmp_path: Path) -> None:
    assert Spill(tmp_path, max_chars=30_000, window=lambda: 8192, share=0.25).budget() == 8192
    assert Spill(tmp_path, max_chars=30_000, window=lambda: None).budget() == 30_000


async def test_read_file_and_grep_read_the_kept_output_back(tmp_path: Path) -> None:
    spill = Spill(tmp_path / "outside-root" / "outputs", max_chars=4000)
    path = await spill.keep("c9", LONG)
    results = await _turn(
        spill,
        ("read_file", {"path": str(path), "offset": 10000, "limit": 2}),
        ("grep", {"pattern": "^line 1234$", "path": str(path.parent)}),
    )
    assert "10000\tline 10000\n 10001\tline 10001\n" in results["c0"]
    assert "line 1234" in results["c1"]


async def test_a_symlink_in_the_folder_leading_out_is_not_read_through_it(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n")
    folder = tmp_path / "x" / "outputs"
    folder.mkdir(parents=True)
    os.symlink(secret, folder / "0001-c0.txt")
    spill = Spill(folder)
    results = await _turn(spill, ("read_file", {"path": str(folder / "0001-c0.txt")}))
    assert "TOP SECRET" not in results["c0"]


@tool
def small() -> str:
    return "short"


async def test_a_short_result_passes_untouched_and_writes_nothing(tmp_path: Path) -> None:
    spill = Spill(tmp_path / "o", max_chars=4000)
    run = Run(
        FakeModel([Reply(tool_calls=[("small", {}, "c0")]), Reply(text="done")]),
        Tools(small),
        middleware=[spill],
    )
    async with run.turn(Message.user("go")) as events:
        async for _ in events:
            pass
    assert [r.text for m in run.messages() for r in m.tool_results] == ["short"]
    assert not (tmp_path / "o").exists()
