"""Model and tool middleware: outermost first, prompt rewriting, retry before the first delta, failures."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from harness import (
    Call,
    EndReason,
    ErrorKind,
    Message,
    ModelError,
    Result,
    Run,
    ToolCall,
    Tools,
    tool,
)
from harness.middleware import NextModel, NextTool
from harness.model import Delta, Prompt, TextChunk
from harness.testing import FakeModel, Reply
from tests.harness.run_support import all_results, drive, ended

pytestmark = pytest.mark.anyio


@tool(read_only=True)
def read(path: str) -> str:
    return f"contents of {path}"


writes: list[str] = []


@tool
def write(path: str) -> str:
    writes.append(path)
    return f"wrote {path}"


class Both:
    """A middleware on both seams that records the order it is entered and left."""

    def __init__(self, name: str, log: list[str]) -> None:
        self.name = name
        self.log = log

    async def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        self.log.append(f"{self.name} model in")
        async for delta in next(prompt):
            yield delta
        self.log.append(f"{self.name} model out")

    async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
        self.log.append(f"{self.name} tool in")
        result = await next(call, context)
        self.log.append(f"{self.name} tool out")
        return result


async def test_middleware_runs_outermost_first_on_both_seams() -> None:
    log: list[str] = []

    @tool
    def mark() -> str:
        log.append("tool")
        return "marked"

    model = FakeModel([Reply(tool_calls=[("mark", {})]), Reply(text="ok")])
    run = Run(model, Tools(mark), middleware=[Both("outer", log), Both("inner", log)])
    await drive(run, Message.user("go"))
    assert log == [
        "outer model in",
        "inner model in",
        "inner model out",
        "outer model out",
        "outer tool in",
        "inner tool in",
        "tool",
        "inner tool out",
        "outer tool out",
        "outer model in",
        "inner model in",
        "inner model out",
        "outer model out",
    ]


class ReadFirst:
    """No writes until the model has read something: the design's prompt-shaping middleware."""

    async def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        has_read = len(prompt.messages) > 1
        tools = prompt.tools if has_read else [t for t in prompt.tools if t.hints.read_only]
        async for delta in next(prompt.replace(tools=tools)):
            yield delta


async def test_a_tool_the_middleware_left_out_of_the_prompt_is_an_unknown_tool() -> None:
    writes.clear()
    model = FakeModel(
        [
            Reply(tool_calls=[("write", {"path": "a.txt"}, "c1")]),
            Reply(tool_calls=[("write", {"path": "b.txt"}, "c2")]),
            Reply(text="ok"),
        ]
    )
    run = Run(model, Tools(read, write), middleware=[ReadFirst()])
    await drive(run, Message.user("write"))
    assert [t.name for t in model.prompts[0].tools] == ["read"]
    assert [t.name for t in model.prompts[1].tools] == ["read", "write"]
    results = all_results(run.messages())
    assert (results["c1"].text, results["c1"].error) == ("unknown tool 'write'; the tools are: read", True)
    assert (results["c2"].text, results["c2"].error) == ("wrote b.txt", False)
    assert writes == ["b.txt"]


async def test_a_rewritten_prompt_keeps_the_cancel_signal() -> None:
    seen: list[Any] = []

    class Spy:
        async def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
            seen.append(prompt.cancel)
            async for delta in next(prompt.replace(system="rewritten")):
                yield delta

    model = FakeModel([Reply(text="hi")])
    run = Run(model, Tools(), system="original", middleware=[Spy()])
    await drive(run, Message.user("x"))
    assert model.prompts[0].system == "rewritten"
    assert model.prompts[0].cancel is seen[0]


class RetryModel:
    """Retries a rate-limited model call, but only before the first delta went on."""

    def __init__(self) -> None:
        self.tries = 0

    async def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        for attempt in range(1, 4):
            self.tries = attempt
            yielded = False
            try:
                async for delta in next(prompt):
                    yielded = True
                    yield delta
                return
            except ModelError as e:
                if yielded or attempt == 3 or e.kind is not ErrorKind.RATE_LIMITED:
                    raise


async def test_a_retry_middleware_retries_a_failure_before_the_first_delta() -> None:
    retry = RetryModel()
    model = FakeModel([Reply(error=ErrorKind.RATE_LIMITED), Reply(text="Hello")])
    run = Run(model, Tools(), middleware=[retry])
    await drive(run, Message.user("hi"))
    assert retry.tries == 2
    assert model.calls == 2
    assert ended(run).reason is EndReason.DONE
    assert run.messages()[-1].text == "Hello"


async def test_a_retry_middleware_rethrows_a_failure_after_the_first_delta() -> None:
    retry = RetryModel()
    model = FakeModel([Reply(text="Hel", error=ErrorKind.RATE_LIMITED), Reply(text="never")])
    run = Run(model, Tools(), middleware=[retry])
    await drive(run, Message.user("hi"))
    assert retry.tries == 1
    assert model.calls == 1
    e = ended(run)
    assert e.reason is EndReason.FAILED
    assert e.error_kind is ErrorKind.RATE_LIMITED
    assert isinstance(e.error, ModelError)


async def test_a_model_middleware_may_observe_deltas_without_changing_them() -> None:
    texts: list[str] = []

    class Observe:
        async def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
            async for delta in next(prompt):
                if isinstance(delta, TextChunk):
                    texts.append(delta.text)
                yield delta

    run = Run(FakeModel([Reply(text="abcdef", chunks=3)]), Tools(), middleware=[Observe()])
    await drive(run, Message.user("x"))
    assert texts == ["ab", "cd", "ef"]
    assert run.messages()[-1].text == "abcdef"


async def test_a_model_middleware_raising_after_deltas_fails_the_turn_middleware_error() -> None:
    boom = RuntimeError("middleware bug")

    class Breaks:
        async def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
            async for delta in next(prompt):
                yield delta
                raise boom

    run = Run(FakeModel([Reply(text="abc", chunks=3)]), Tools(), middleware=[Breaks()])
    await drive(run, Message.user("x"))
    e = ended(run)
    assert e.reason is EndReason.FAILED
    assert e.error_kind is ErrorKind.MIDDLEWARE_ERROR
    assert e.error is boom
    assert run.messages() == [Message.user("x")]


async def test_a_tool_middleware_raising_fails_the_turn_middleware_error() -> None:
    boom = LookupError("tool middleware bug")

    class Breaks:
        async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
            raise boom

    model = FakeModel([Reply(tool_calls=[("read", {"path": "a"})]), Reply(text="never")])
    run = Run(model, Tools(read), middleware=[Breaks()])
    await drive(run, Message.user("x"))
    e = ended(run)
    assert e.reason is EndReason.FAILED
    assert e.error_kind is ErrorKind.MIDDLEWARE_ERROR
    assert e.error is boom
    assert model.calls == 1


async def test_a_tool_exception_passing_through_a_middleware_is_still_an_error_result() -> None:
    @tool
    def crash() -> str:
        raise ValueError("bad")

    log: list[str] = []
    model = FakeModel([Reply(tool_calls=[("crash", {}, "c1")]), Reply(text="ok")])
    run = Run(model, Tools(crash), middleware=[Both("mw", log)])
    await drive(run, Message.user("x"))
    assert ended(run).reason is EndReason.DONE
    result = all_results(run.messages())["c1"]
    assert (result.text, result.error) == ("ValueError: bad", True)


async def test_a_tool_middleware_denies_by_returning_an_error_result() -> None:
    writes.clear()

    class Deny:
        async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
            if call.name == "write":
                return Result.failure("writes are disabled")
            return await next(call, context)

    model = FakeModel(
        [Reply(tool_calls=[("write", {"path": "a"}, "c1"), ("read", {"path": "b"}, "c2")]), Reply(text="ok")]
    )
    run = Run(model, Tools(read, write), middleware=[Deny()])
    await drive(run, Message.user("x"))
    results = all_results(run.messages())
    assert (results["c1"].text, results["c1"].error) == ("writes are disabled", True)
    assert results["c2"].text == "contents of b"
    assert writes == []


async def test_a_tool_middleware_sees_the_call_context_and_may_rewrite_the_result() -> None:
    seen: list[Any] = []

    class Truncate:
        async def call(self, call: ToolCall, context: Call, next: NextTool) -> Result:
            seen.append((context.id, context.context, context.spec.name if context.spec else None))
            result = await next(call, context)
            return Result.text(result.as_text()[:8], value=result.value)

    model = FakeModel([Reply(tool_calls=[("read", {"path": "long.txt"}, "c1")]), Reply(text="ok")])
    run = Run(model, Tools(read), middleware=[Truncate()], context={"user": "ada"})
    await drive(run, Message.user("x"))
    assert seen == [("c1", {"user": "ada"}, "read")]
    assert all_results(run.messages())["c1"].text == "contents"
