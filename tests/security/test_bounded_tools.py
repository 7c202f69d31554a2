"""Bounded tools: a regular expression cannot freeze the process, walks never open a FIFO, a read holds
a bounded amount of memory whatever the line length (the real process, a scripted model)."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness.testing import call_tool
from harness.tools import Grep, ReadFile, Root
from harness.tools import _read as read_mod
from tests.security._attack import Project, Victim, calls, reply, victim_agent

pytestmark = pytest.mark.anyio


def _status(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {key} in /proc/{pid}/status")


async def _running(agent: Victim, sid: str, tool: str) -> None:
    """Wait until the call of ``tool`` really runs (its ``in_progress`` update)."""
    ids: set[str] = set()
    while True:
        for u in agent.updates(sid):
            if tool in str(u.get("rawInput")):
                ids.add(u["toolCallId"])
            if u.get("toolCallId") in ids and u.get("status") == "in_progress":
                return
        await agent.notification(lambda m: True, len(agent.notifications))


@pytest.mark.process
@pytest.mark.timeout(120)
async def test_a_catastrophic_pattern_neither_freezes_the_grep_nor_the_other_sessions(tmp_path: Path) -> None:
    project = Project.make(tmp_path)
    # With a backtracking engine each of these lines takes 2**30 steps against (a+)+$ and holds the GIL.
    (project.root / "evil.txt").write_text(("a" * 30 + "!\n") * 50 + "aaaa\n")
    script = [reply(("grep", {"pattern": "(a+)+$", "path": "evil.txt"})), reply(text="done")]
    async with victim_agent(project, script) as agent:
        with anyio.fail_after(60):
            first = await agent.new_session(project.root)
            prompt = await agent.request(
                "session/prompt", {"sessionId": first, "prompt": [{"type": "text", "text": "find it"}]}
            )
            await _running(agent, first, "(a+)+$")
        with anyio.fail_after(15):  # the usual latency, not the grep's
            other = await agent.new_session(project.root)
            listed = await agent.call("session/list", {})
            assert {s["sessionId"] for s in listed["sessions"]} >= {first, other}
            await agent.notify("session/cancel", {"sessionId": first})
            answer = await agent.response(prompt)
        assert answer["result"]["stopReason"] in ("cancelled", "end_turn")
        if answer["result"]["stopReason"] == "end_turn":
            assert any("evil.txt:51: aaaa" in t for t in agent.tool_results(first))


@pytest.mark.process
@pytest.mark.timeout(120)
async def test_a_fifo_in_the_tree_does_not_hang_grep_glob_list_or_read(tmp_path: Path) -> None:
    project = Project.make(tmp_path)
    (project.root / "sub").mkdir()
    os.mkfifo(project.root / "pipe")
    os.mkfifo(project.root / "sub" / "pipe2")
    (project.root / "sub" / "a.txt").write_text("needle\n")
    script = calls(
        ("grep", {"pattern": "needle"}),
        ("glob", {"pattern": "**/*"}),
        ("list_dir", {"path": "."}),
        ("read_file", {"path": "pipe"}),
        ("grep", {"pattern": "needle", "path": "sub/pipe2"}),
    )
    async with victim_agent(project, script, fs=False) as agent:
        with anyio.fail_after(60):
            sid = await agent.new_session(project.root)
            assert (await agent.prompt(sid, "search"))["stopReason"] == "end_turn"
    grep, glob, listing, read, grep_fifo = agent.tool_results(sid)
    assert "sub/a.txt:1: needle" in grep
    assert "sub/a.txt" in glob and "pipe" not in glob
    assert "pipe" in listing
    assert "not a regular file" in read and "not a regular file" in grep_fifo


@pytest.mark.process
@pytest.mark.timeout(180)
async def test_reading_a_huge_file_without_newlines_keeps_the_process_small(tmp_path: Path) -> None:
    project = Project.make(tmp_path)
    size = 100 * 1024 * 1024
    with (project.root / "blob.min.js").open("wb") as f:
        chunk = b"a" * (1024 * 1024)
        for _ in range(size // len(chunk)):
            f.write(chunk)
    script = calls(("read_file", {"path": "blob.min.js"}))
    async with victim_agent(project, script) as agent:
        with anyio.fail_after(120):
            sid = await agent.new_session(project.root)
            await agent.ready(sid)  # the peak before the read: the agent fully loaded, not only answered
            before = _status(agent.pid, "VmHWM")
            assert (await agent.prompt(sid, "read it"))["stopReason"] == "end_turn"
            grown_kb = _status(agent.pid, "VmHWM") - before
    [result] = agent.tool_results(sid)
    assert f"line cut, {size - read_mod.MAX_LINE_CHARS} more characters" in result
    # Loading the line whole would take more than the file's size (100 MiB); a chunked read a few MiB.
    assert grown_kb < 40 * 1024, f"the peak RSS grew by {grown_kb // 1024} MiB"


async def test_a_streamed_read_holds_one_chunk_whatever_the_line_length(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(read_mod, "BIG_FILE_BYTES", 1024)
    path = tmp_path / "one-line.txt"
    path.write_bytes(b"x" * (24 * 1024 * 1024) + b"\nsecond\r\nthird")
    tracemalloc.start()
    try:
        out = await call_tool(ReadFile(Root([tmp_path])), {"path": "one-line.txt"})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    text = out.result.as_text()
    assert "line cut, 25163824 more characters" in text and "     2\tsecond\n     3\tthird" in text
    assert out.result.value["total_lines"] == 3
    assert peak < 4 * read_mod.CHUNK_BYTES, f"peak {peak // 1024} KiB"


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [("(?<=a)b", "lookaround"), ("(a)\\1", "backreferences"), ("a{1000}{1000}", "bad repetition")],
)
async def test_patterns_a_linear_engine_cannot_run_are_refused_with_a_reason(
    tmp_path: Path, pattern: str, problem: str
) -> None:
    (tmp_path / "a.txt").write_text("ab\n")
    out = await call_tool(Grep(Root([tmp_path])), {"pattern": pattern})
    assert out.result.error and problem in out.result.as_text()


async def test_grep_is_linear_on_the_pattern_that_backtracks(tmp_path: Path) -> None:
    (tmp_path / "evil.txt").write_text(("a" * 5000 + "!\n") * 200 + "aaa\n")
    with anyio.fail_after(20):
        out: Any = await call_tool(Grep(Root([tmp_path])), {"pattern": "(a+)+$"})
    assert [m["line"] for m in out.result.value["matches"]] == [201]
