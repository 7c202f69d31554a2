"""``Relay``/``Prelude``: a model middleware that works before the first delta and then hands the inner stream
on. The deltas, the end, errors, cancellation and closing behave as with an async generator middleware."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from typing import Any

import anyio
import pytest

from harness import EndReason, ErrorKind, HarnessUsageError, Message, ModelError, Run, Tools
from harness.events import TextDelta
from harness.middleware import NextModel, Prelude, Relay
from harness.model import Delta, Finish, FinishReason, Prompt, TextChunk
from harness.testing import FakeModel, Reply
from tests.harness.run_support import drive, ended, of

pytestmark = pytest.mark.anyio


class Counted(Prelude):
    """A prelude that counts how often its own ``__anext__`` is called."""

    __slots__ = ("calls",)

    def __init__(self, inner: AsyncIterator[Delta]) -> None:
        async def opening() -> AsyncIterator[Delta]:
            return inner

        super().__init__(opening)
        self.calls = 0

    def __anext__(self) -> Awaitable[Delta]:
        self.calls += 1
        return super().__anext__()


class Tracked:
    """A model stream that records whether its ``finally`` ran."""

    def __init__(self, deltas: list[Delta], *, hang: bool = False, error: Exception | None = None) -> None:
        self.deltas = deltas
        self.hang = hang
        self.error = error
        self.closed = False
        self.prompts: list[Prompt] = []

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        self.prompts.append(prompt)
        return self._stream()

    async def _stream(self) -> AsyncIterator[Delta]:
        try:
            for d in self.deltas:
                yield d
            if self.error is not None:
                raise self.error
            if self.hang:
                await anyio.sleep_forever()
        finally:
            self.closed = True


class SystemSays:
    """A ``Prelude`` middleware: awaits, rewrites the prompt's system text, hands the deltas on."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.opened = 0

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        async def opening() -> AsyncIterator[Delta]:
            await anyio.lowlevel.checkpoint()
            self.opened += 1
            return next(prompt.replace(system=self.text))

        return Prelude(opening)


class Upper:
    """An old-style async generator middleware that changes each text delta."""

    async def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        async for d in next(prompt):
            yield TextChunk(d.text.upper()) if isinstance(d, TextChunk) else d


def texts(events: list[Any]) -> str:
    return "".join(e.text for e in of(events, TextDelta))


async def test_a_prelude_rewrites_the_prompt_once_and_its_deltas_reach_the_turn_unchanged() -> None:
    model = FakeModel([Reply(text="hello world", chunks=4)])
    mw = SystemSays("be brief")
    run = Run(model, Tools(), middleware=[mw])
    events = await drive(run, Message.user("hi"))
    assert texts(events) == "hello world"
    assert len(of(events, TextDelta)) == 4
    assert mw.opened == 1
    assert model.prompts[0].system == "be brief"
    assert ended(run).reason is EndReason.DONE


async def test_relays_mixed_with_generator_middleware_keep_the_chain_order() -> None:
    model = FakeModel([Reply(text="abc", chunks=3)])
    outer, inner = SystemSays("outer"), SystemSays("inner")
    run = Run(model, Tools(), middleware=[outer, Upper(), inner])
    events = await drive(run, Message.user("hi"))
    assert texts(events) == "ABC"
    assert model.prompts[0].system == "inner"  # the inner one rewrote last
    assert (outer.opened, inner.opened) == (1, 1)


async def test_after_the_first_delta_a_relay_inside_a_relay_is_not_called_again() -> None:
    model = Tracked([TextChunk("a"), TextChunk("b"), TextChunk("c")])
    inner = Counted(model.stream(Prompt(None, (), ())))
    outer = Counted(inner)
    got = [d async for d in outer]
    assert got == [TextChunk("a"), TextChunk("b"), TextChunk("c")]
    assert outer.calls == 4  # three deltas and the end
    assert inner.calls == 1  # its first delta; then the outer one hands on the model's own stream
    assert model.closed


async def test_a_relay_with_an_empty_inner_stream_ends() -> None:
    model = Tracked([])
    relay = Counted(model.stream(Prompt(None, (), ())))
    assert [d async for d in relay] == []
    with pytest.raises(StopAsyncIteration):
        await relay.__anext__()


async def test_closing_a_relay_mid_stream_closes_the_model_stream_and_ends_it() -> None:
    model = Tracked([TextChunk("a"), TextChunk("b")], hang=True)
    relay = Counted(Counted(model.stream(Prompt(None, (), ()))))
    assert await relay.__anext__() == TextChunk("a")
    await relay.aclose()
    assert model.closed
    with pytest.raises(StopAsyncIteration):
        await relay.__anext__()
    await relay.aclose()  # twice is harmless, as for a generator


async def test_an_error_after_the_first_delta_reaches_the_turn_as_the_models_error() -> None:
    model = Tracked([TextChunk("a")], error=ModelError("slow down", ErrorKind.RATE_LIMITED))
    run = Run(model, Tools(), middleware=[SystemSays("s"), Upper(), SystemSays("t")])
    events = await drive(run, Message.user("hi"))
    assert texts(events) == "A"
    e = ended(run)
    assert e.reason is EndReason.FAILED
    assert e.error_kind is ErrorKind.RATE_LIMITED
    assert model.closed


async def test_a_plain_exception_from_the_model_through_relays_is_still_the_models_error() -> None:
    model = Tracked([TextChunk("a")], error=ValueError("bad bytes"))
    run = Run(model, Tools(), middleware=[SystemSays("s"), SystemSays("t")])
    await drive(run, Message.user("hi"))
    e = ended(run)
    assert e.error_kind is ErrorKind.MODEL_ERROR


async def test_a_relay_whose_start_hands_nothing_on_fails_the_turn_as_misuse() -> None:
    class Careless(Relay):
        async def start(self) -> Delta:
            return Finish(FinishReason.STOP)

    class UsesCareless:
        def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
            return Careless()

    run = Run(FakeModel([Reply(text="x")]), Tools(), middleware=[UsesCareless()])
    with pytest.raises(HarnessUsageError, match="hand"):
        await drive(run, Message.user("hi"))


async def test_cancel_while_the_model_streams_through_relays_ends_cancelled_and_closes_the_model() -> None:
    model = Tracked([TextChunk("Hel")], hang=True)
    run = Run(model, Tools(), middleware=[SystemSays("s"), Upper(), SystemSays("t")])

    def on_event(event: Any) -> None:
        if isinstance(event, TextDelta):
            run.cancel()

    events = await drive(run, Message.user("hi"), on_event)
    assert texts(events) == "HEL"
    assert ended(run).reason is EndReason.CANCELLED
    assert model.closed
    assert model.prompts[0].cancel.is_set()


class ClassStream:
    """A model whose stream is an iterator class, not an async generator: one delta, then an error."""

    def stream(self, prompt: Prompt) -> AsyncIterator[Delta]:
        return self._Deltas()

    class _Deltas:
        def __init__(self) -> None:
            self.sent = False

        def __aiter__(self) -> ClassStream._Deltas:
            return self

        async def __anext__(self) -> Delta:
            if not self.sent:
                self.sent = True
                return TextChunk("a")
            raise ValueError("the class stream broke")


class Rewraps:
    """A generator middleware that turns the model's exception into its own."""

    async def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        try:
            async for d in next(prompt):
                yield d
        except ValueError as e:
            raise RuntimeError("the middleware's own failure") from e


@pytest.mark.parametrize("stream", ["generator", "class"])
async def test_a_plain_exception_after_the_first_delta_through_a_generator_middleware_is_the_models(
    stream: str,
) -> None:
    model = Tracked([TextChunk("a")], error=ValueError("bad")) if stream == "generator" else ClassStream()
    run = Run(model, Tools(), middleware=[Upper(), SystemSays("s")])
    await drive(run, Message.user("hi"))
    assert ended(run).error_kind is ErrorKind.MODEL_ERROR


@pytest.mark.parametrize("stream", ["generator", "class"])
async def test_a_new_exception_a_middleware_raises_for_the_models_is_the_middlewares(stream: str) -> None:
    model = Tracked([TextChunk("a")], error=ValueError("bad")) if stream == "generator" else ClassStream()
    run = Run(model, Tools(), middleware=[Rewraps(), SystemSays("s")])
    await drive(run, Message.user("hi"))
    e = ended(run)
    assert e.error_kind is ErrorKind.MIDDLEWARE_ERROR
    assert isinstance(e.error, RuntimeError)


async def test_a_relay_whose_start_failed_is_finished_and_does_not_call_the_model_again() -> None:
    calls: list[int] = []

    async def opening() -> AsyncIterator[Delta]:
        calls.append(1)
        raise ModelError("slow down", ErrorKind.RATE_LIMITED)

    relay = Prelude(opening)
    with pytest.raises(ModelError):
        await relay.__anext__()
    with pytest.raises(StopAsyncIteration):  # as a generator that raised
        await relay.__anext__()
    assert calls == [1]
    await relay.aclose()


async def test_a_relay_asked_again_while_its_start_runs_refuses_as_a_running_generator_does() -> None:
    started, release = anyio.Event(), anyio.Event()
    model = Tracked([TextChunk("a")])

    async def opening() -> AsyncIterator[Delta]:
        started.set()
        await release.wait()
        return model.stream(Prompt(None, (), ()))

    relay = Prelude(opening)
    got: list[Delta] = []

    async def first() -> None:
        got.append(await relay.__anext__())

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await started.wait()
            with pytest.raises(RuntimeError, match="already running"):
                await relay.__anext__()
            with pytest.raises(RuntimeError, match="already running"):
                await relay.aclose()
            release.set()
    assert got == [TextChunk("a")]
    await relay.aclose()
    assert model.closed
