"""TextToolCalls: calls written as text become calls only when tools were offered, every block names an
offered tool, and the model made no native call; text streams on until a call may begin."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from harness import FinishReason, ToolSpec
from harness.model import Delta, Finish, Prompt, TextChunk, ToolReady, ToolStart
from harness.text_calls import TextToolCalls

pytestmark = pytest.mark.anyio

HERMES = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>'


def _prompt(tools: Sequence[str] = ("read_file", "list_dir")) -> Prompt:
    specs = [ToolSpec(name=n, description="", schema={"type": "object"}) for n in tools]
    return Prompt(None, [], specs)


async def _through(
    chunks: Sequence[str],
    *,
    finish: FinishReason = FinishReason.STOP,
    tools: Sequence[str] = ("read_file", "list_dir"),
    extra: Sequence[Delta] = (),
) -> tuple[list[Delta], list[str]]:
    told: list[str] = []

    async def tell(dialect: str) -> None:
        told.append(dialect)

    async def model(p: Prompt) -> AsyncIterator[Delta]:
        for c in chunks:
            yield TextChunk(c)
        for d in extra:
            yield d
        yield Finish(finish)

    mw = TextToolCalls(tell)
    return [d async for d in mw.stream(_prompt(tools), model)], told


def _text(deltas: list[Delta]) -> str:
    return "".join(d.text for d in deltas if isinstance(d, TextChunk))


def _calls(deltas: list[Delta]) -> list[tuple[str, Any]]:
    names = {d.id: d.name for d in deltas if isinstance(d, ToolStart)}
    return [(names[d.id], d.input) for d in deltas if isinstance(d, ToolReady)]


async def test_a_marker_cut_between_chunks_is_still_found_and_prose_before_it_streams_at_once() -> None:
    text = "Let me look.\n" + HERMES
    chunks = [text[i : i + 3] for i in range(0, len(text), 3)]
    deltas, told = await _through(chunks)
    assert _calls(deltas) == [("read_file", {"path": "a.py"})]
    assert _text(deltas) == "Let me look.\n"
    assert deltas[-1] == Finish(FinishReason.TOOL_CALLS)
    assert told == ["Hermes/Qwen tool_call tags"]


async def test_the_user_is_told_once_per_instance() -> None:
    mw_told: list[str] = []

    async def tell(d: str) -> None:
        mw_told.append(d)

    mw = TextToolCalls(tell)

    async def model(p: Prompt) -> AsyncIterator[Delta]:
        yield TextChunk(HERMES)
        yield Finish(FinishReason.STOP)

    for _ in range(2):
        assert _calls([d async for d in mw.stream(_prompt(), model)])
    assert len(mw_told) == 1


async def test_no_tools_offered_leaves_the_text_alone() -> None:
    deltas, told = await _through([HERMES], tools=())
    assert _text(deltas) == HERMES and not _calls(deltas) and told == []


async def test_a_native_call_in_the_same_reply_leaves_the_text_as_text() -> None:
    deltas, _ = await _through([HERMES], extra=[ToolStart("c1", "list_dir"), ToolReady("c1", {})])
    assert _text(deltas) == HERMES and _calls(deltas) == [("list_dir", {})]


async def test_a_reply_cut_at_its_output_limit_is_not_run() -> None:
    deltas, _ = await _through([HERMES[:-20]], finish=FinishReason.LENGTH)
    assert not _calls(deltas) and _text(deltas) == HERMES[:-20]
    assert deltas[-1] == Finish(FinishReason.LENGTH)


async def test_several_hermes_blocks_and_a_repaired_argument_all_run() -> None:
    two = (
        HERMES
        + '\n<tool_call>{"name": "functions.list_dir", "arguments": "{\\"path\\": \\"src\\",}"}</tool_call>'
    )
    deltas, _ = await _through([two])
    assert _calls(deltas) == [("read_file", {"path": "a.py"}), ("list_dir", {"path": "src"})]


async def test_text_that_only_mentions_a_marker_in_a_sentence_streams_unchanged() -> None:
    text = "Models write [TOOL_CALLS] when the server has no parser; here there is nothing to run."
    deltas, told = await _through([text[:20], text[20:]])
    assert _text(deltas) == text and not _calls(deltas) and told == []
