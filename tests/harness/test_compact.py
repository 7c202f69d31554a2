"""Compact: summary + recent messages within the window, ToolCall/ToolResult pairs kept, checkpoints shared."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from harness import ErrorKind, Message, ModelError, Options, Prompt, Role, Text, ToolCall, ToolResult, Usage
from harness.compact import SUMMARY_SYSTEM, Checkpoint, Compact, Compacted
from harness.model import Delta, Finish, FinishReason, TextChunk
from harness.testing import FakeModel, Reply

pytestmark = pytest.mark.anyio

WINDOW = Options(context_window=1000)


async def drain(stream: AsyncIterator[Delta]) -> list[Delta]:
    with anyio.fail_after(5):
        return [d async for d in stream]


def long_conversation() -> list[Message]:
    return [
        Message.user("Task: find the capital of France. " + "context " * 50),
        Message.assistant(ToolCall("c1", "search", {"q": "capital of France"})),
        Message.user(ToolResult("c1", (Text("Paris is the capital. " + "x" * 2000),))),
        Message.assistant(ToolCall("c2", "search", {"q": "Paris river"})),
        Message.user(ToolResult("c2", (Text("The Seine flows through Paris. " + "y" * 2000),))),
        Message.assistant("Paris is the capital of France."),
        Message.user("And what river runs through it?"),
    ]


def assert_pairs_intact(messages: list[Message]) -> None:
    """Every ToolResult's call is in the assistant message right before it."""
    for i, m in enumerate(messages):
        for r in m.tool_results:
            assert i > 0, "a tool result opens the prompt"
            prev = messages[i - 1]
            assert prev.role == Role.ASSISTANT
            assert r.call_id in {c.id for c in prev.tool_calls}


def is_summary_call(prompt: Prompt) -> bool:
    return prompt.system == SUMMARY_SYSTEM


class Scripted:
    """A model: summary calls answer ``summary`` (however many folds), other calls ``answer``."""

    def __init__(self, summary: str = "SUMMARY", answer: str = "answer") -> None:
        self.summary = summary
        self.answer = answer
        self.prompts: list[Prompt] = []

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        self.prompts.append(prompt)
        return self._reply(self.summary if is_summary_call(prompt) else self.answer)

    async def _reply(self, text: str) -> AsyncIterator[Delta]:
        yield TextChunk(text)
        yield Finish(FinishReason.STOP)

    @property
    def asks(self) -> list[Prompt]:
        return [p for p in self.prompts if is_summary_call(p)]

    @property
    def sent(self) -> list[Prompt]:
        return [p for p in self.prompts if not is_summary_call(p)]


async def test_over_the_window_the_summary_and_recent_messages_are_sent() -> None:
    msgs = long_conversation()
    before = list(msgs)
    heard: list[Compacted] = []
    compact = Compact(buffer=100, keep=50, on_compacted=heard.append)
    model = Scripted("SUMMARY: the user asked for the capital; it is Paris.", "The Seine.")
    prompt = Prompt("You help.", msgs, [], WINDOW)

    deltas = await drain(compact.stream(prompt, model.stream))

    assert [d for d in deltas if isinstance(d, TextChunk)] == [TextChunk("The Seine.")]
    assert model.asks and len(model.sent) == 1
    read = "\n".join(a.messages[0].text for a in model.asks)
    for ask in model.asks:
        assert list(ask.tools) == [] and len(ask.messages) == 1 and ask.cancel is prompt.cancel
    assert "Task: find the capital of France." in read
    assert "[tool call search" in read
    assert "Paris is the capital." in read and "The Seine flows" in read

    sent = model.sent[0]
    assert sent.system == "You help."
    assert sent.messages[0].role == Role.USER
    assert "SUMMARY: the user asked for the capital; it is Paris." in sent.messages[0].text
    assert list(sent.messages[1:]) == msgs[5:]
    assert sent.messages[-1].text == "And what river runs through it?"
    assert sent.cancel is prompt.cancel
    assert compact.estimate(prompt) < 900

    assert msgs == before  # the run's messages are not touched
    assert len(heard) == 1 and heard[0].checkpoint is compact.last()
    assert heard[0].checkpoint.covered == 5 and not heard[0].requested
    assert heard[0].tokens_after < heard[0].tokens_before


@pytest.mark.parametrize("keep", range(0, 1400, 23))
async def test_no_split_separates_a_tool_call_from_its_result(keep: int) -> None:
    msgs = [
        Message.user("go " * 100),
        Message.assistant(ToolCall("a", "read", {"p": "1" * 400})),
        Message.user(ToolResult("a", (Text("r" * 1500),))),
        Message.assistant(
            [Text("two at once"), ToolCall("b", "read", {"p": "2"}), ToolCall("c", "read", {"p": "3"})]
        ),
        Message.user([ToolResult("b", (Text("s" * 900),)), ToolResult("c", (Text("t" * 900),))]),
        Message.assistant(ToolCall("d", "read", {"p": "4" * 300})),
        Message.user(ToolResult("d", (Text("u" * 700),))),
    ]
    model = Scripted("summary")
    await drain(Compact(buffer=100, keep=keep).stream(Prompt(None, msgs, [], WINDOW), model.stream))
    sent = list(model.sent[0].messages)
    assert "summary" in sent[0].text
    assert_pairs_intact(sent)
    assert sent[-2:] == msgs[-2:]  # the last call and its result are always sent


async def test_under_the_window_the_prompt_passes_as_is() -> None:
    model = FakeModel([Reply(text="hi")])
    prompt = Prompt(None, [Message.user("hello")], [], WINDOW)
    await drain(Compact(buffer=100).stream(prompt, model.stream))
    assert model.prompts == [prompt]


async def test_without_a_window_nothing_is_compacted() -> None:
    model = FakeModel([Reply(text="hi")])
    prompt = Prompt(None, long_conversation(), [])
    await drain(Compact(buffer=100, keep=50).stream(prompt, model.stream))
    assert model.prompts == [prompt]


async def test_the_checkpoint_is_reused_on_later_calls() -> None:
    compact = Compact(buffer=100, keep=50)
    msgs = long_conversation()
    model = Scripted("SUMMARY one", "The Seine.")
    await drain(compact.stream(Prompt(None, msgs, [], WINDOW), model.stream))
    asks = len(model.asks)
    later = [*msgs, Message.assistant("The Seine."), Message.user("How long is it?")]
    await drain(compact.stream(Prompt(None, later, [], WINDOW), model.stream))

    assert len(model.asks) == asks  # no new summary
    third = model.sent[1]
    assert "SUMMARY one" in third.messages[0].text
    assert list(third.messages[1:]) == later[5:]


async def test_usage_reported_by_the_provider_counts_toward_the_window() -> None:
    # Few characters, but the provider said the prompt up to its last reply was 950 tokens.
    reply = Message(Role.ASSISTANT, (Text("short"),), usage=Usage(input=940, output=10))
    msgs = [Message.user("a"), Message.assistant("b"), Message.user("c"), reply, Message.user("d")]
    model = FakeModel([Reply(text="S"), Reply(text="ok")])
    await drain(Compact(buffer=100, keep=5).stream(Prompt(None, msgs, [], WINDOW), model.stream))
    assert model.calls == 2 and is_summary_call(model.prompts[0])
    assert model.prompts[1].messages[-1].text == "d"


async def test_compact_now_compacts_the_next_call_even_without_a_window() -> None:
    compact = Compact(keep=6)
    heard: list[Compacted] = []
    compact.subscribe(heard.append)
    compact.compact_now()
    model = FakeModel([Reply(text="S"), Reply(text="ok"), Reply(text="ok2")])
    msgs = [Message.user("one"), Message.assistant("two"), Message.user("three")]
    await drain(compact.stream(Prompt(None, msgs, []), model.stream))
    assert is_summary_call(model.prompts[0])
    assert [m.text for m in model.prompts[1].messages][1:] == ["three"]
    assert len(heard) == 1 and heard[0].requested
    # the request is used up; the checkpoint still applies
    await drain(compact.stream(Prompt(None, msgs, []), model.stream))
    assert model.calls == 3 and "S" in model.prompts[2].messages[0].text


async def test_compact_with_nothing_older_to_summarise_returns_none() -> None:
    model = FakeModel([])
    assert await Compact().compact(Prompt(None, [Message.user("only")], []), model.stream) is None
    assert model.calls == 0


async def test_concurrent_runs_needing_the_same_checkpoint_make_it_once() -> None:
    compact = Compact(buffer=100, keep=50)
    release = anyio.Event()
    asked = anyio.Event()
    summaries = 0

    async def model(prompt: Prompt) -> AsyncIterator[Delta]:
        nonlocal summaries
        if is_summary_call(prompt):
            summaries += 1
            asked.set()
            await release.wait()
            yield TextChunk("SHARED")
        else:
            yield TextChunk(prompt.messages[0].text)
        yield Finish(FinishReason.STOP)

    outs: list[str] = []

    async def child(compact: Compact = compact) -> None:
        deltas = await drain(compact.stream(Prompt(None, long_conversation(), [], WINDOW), model))
        outs.append("".join(d.text for d in deltas if isinstance(d, TextChunk)))

    release.set()
    await child(Compact(buffer=100, keep=50))  # one run alone: how many summary calls a checkpoint takes
    alone, summaries, outs[:] = summaries, 0, []
    release = anyio.Event()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(child)
            await asked.wait()
            tg.start_soon(child)
            await anyio.wait_all_tasks_blocked()
            release.set()
    assert summaries == alone
    assert len(outs) == 2 and all("SHARED" in o for o in outs)


async def test_each_conversation_gets_its_own_checkpoint_and_old_ones_are_evicted() -> None:
    compact = Compact(buffer=100, keep=50, capacity=1)
    a = long_conversation()
    b = [Message.user("Other task " + "z" * 4000), Message.assistant("done"), Message.user("next?")]
    await drain(compact.stream(Prompt(None, a, [], WINDOW), Scripted("SUM-A").stream))
    model = Scripted("SUM-B")
    await drain(compact.stream(Prompt(None, b, [], WINDOW), model.stream))
    assert "SUM-B" in model.sent[0].messages[0].text
    assert [cp.summary for cp in compact.checkpoints()] == ["SUM-B"]

    model2 = Scripted("SUM-A again")
    await drain(compact.stream(Prompt(None, a, [], WINDOW), model2.stream))
    assert model2.asks and "SUM-A again" in model2.sent[0].messages[0].text


async def test_a_remembered_checkpoint_applies_without_a_model_call() -> None:
    first = Compact(buffer=100, keep=50)
    await drain(first.stream(Prompt(None, long_conversation(), [], WINDOW), Scripted("SUM").stream))
    saved = [cp.to_dict() for cp in first.checkpoints()]

    second = Compact(buffer=100, keep=50)
    for d in saved:
        second.remember(Checkpoint.from_dict(d))
    model2 = FakeModel([Reply(text="y")])
    await drain(second.stream(Prompt(None, long_conversation(), [], WINDOW), model2.stream))
    assert model2.calls == 1 and "SUM" in model2.prompts[0].messages[0].text


async def test_a_failed_summary_fails_the_call_and_the_next_call_tries_again() -> None:
    compact = Compact(buffer=100, keep=50)
    failing = FakeModel([Reply(error=ErrorKind.RATE_LIMITED)])
    prompt = Prompt(None, long_conversation(), [], WINDOW)
    with pytest.raises(ModelError):
        await drain(compact.stream(prompt, failing.stream))
    assert compact.last() is None
    model = Scripted("SUM")
    await drain(compact.stream(prompt, model.stream))
    assert "SUM" in model.sent[0].messages[0].text


async def test_an_older_part_larger_than_the_window_is_summarised_in_folds() -> None:
    msgs: list[Message] = []
    for i in range(6):
        msgs += [Message.user(f"part {i} " + "w" * 3000), Message.assistant(f"ack {i}")]
    msgs.append(Message.user("final question"))
    replies = [Reply(text=f"S{i}") for i in range(40)]
    model = FakeModel([*replies])
    compact = Compact(buffer=100, keep=20)

    def next(prompt: Prompt) -> AsyncIterator[Delta]:
        if not is_summary_call(prompt):
            return _answer()
        return model.stream(prompt)

    await drain(compact.stream(Prompt(None, msgs, [], WINDOW), next))
    asks = model.prompts
    assert len(asks) > 1
    assert all(len(a.messages[0].text) <= 4 * 1000 for a in asks)
    assert "<previous-summary>\nS0" in asks[1].messages[0].text
    last = compact.last()
    assert last is not None and last.summary == f"S{len(asks) - 1}"
    read = "".join(a.messages[0].text for a in asks)
    assert all(f"part {i}" in read for i in range(6))
    conversation = "".join(
        a.messages[0].text.split("<conversation>")[1].split("</conversation>")[0] for a in asks
    )
    assert conversation.count("w") == 6 * 3000  # split across folds, nothing cut away


async def _answer() -> AsyncIterator[Delta]:
    yield TextChunk("answer")
    yield Finish(FinishReason.STOP)
