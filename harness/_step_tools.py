"""A step's tool calls, and step 0 of a turn of answers (the paused calls made again).

Each call runs in a task of the turn's task group (``async with run.turn(...)`` owns it) under its own
cancel scope; its events reach the consumer through a memory stream, one at a time, and a progress event
waits until the consumer took it. The read-only calls of a step run at once, the others one at a time in
the model's order; results go back in the model's order.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio import CancelScope
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ._call import Call
from ._errors import HarnessUsageError, Retry
from ._kinds import ErrorKind, Role
from ._messages import Message, Text, ToolCall, ToolResult
from ._pause import Answer, Approval, Decision, Need, Pending, Question
from ._repair import checked_input
from ._state import Fatal, Stop, TurnState
from ._tools import Result, Tool
from ._validate import load_validation, validation_loaded
from .events import Event, ToolDecided, ToolEnded, ToolProgress
from .middleware import NextTool, ToolMiddleware

__all__ = [
    "CALL_CANCELLED_TEXT",
    "CANCELLED_TEXT",
    "ENDED_TEXT",
    "SKIPPED_TEXT",
    "CallSlot",
    "CallTools",
    "ResumedCalls",
]

log = logging.getLogger("harness.run")

CANCELLED_TEXT = "Cancelled"
CALL_CANCELLED_TEXT = "Cancelled: this call was stopped before it finished; the turn goes on"
SKIPPED_TEXT = "Skipped: the user sent a message"
ENDED_TEXT = "Not run: the turn ended before this call (another call's result ended it)"


@dataclass(slots=True)
class CallSlot:
    """One tool call of a step being run."""

    index: int
    call: ToolCall
    result: ToolResult | None = None
    pending: Pending | None = None
    started: bool = False
    answers: Mapping[str, Any] = field(default_factory=dict[str, Any])
    state: Any = None


class _Item:
    """What a call task hands the consumer: an event, the ack a progress waits on, or its end."""

    __slots__ = ("ack", "event", "fatal", "slot")

    def __init__(
        self,
        event: Event,
        ack: anyio.Event | None = None,
        slot: CallSlot | None = None,
        fatal: Fatal | None = None,
    ) -> None:
        self.event = event
        self.ack = ack
        self.slot = slot
        self.fatal = fatal


class _Host:
    """The run's side of a ``Call``: progress goes to the consumer, who acknowledges it."""

    __slots__ = ("send", "turn")

    def __init__(self, turn: TurnState, send: MemoryObjectSendStream[_Item]) -> None:
        self.turn = turn
        self.send = send

    async def emit_progress(self, call_id: str, value: Any) -> None:
        await self.emit_event(ToolProgress(self.turn.number, self.turn.parent, call_id, value))

    async def emit_event(self, event: Any) -> None:
        ack = anyio.Event()
        await self.send.send(_Item(event, ack))
        await ack.wait()

    def is_cancelled(self) -> bool:
        return self.turn.signal.is_set()


class CallTools:
    """Run ``slots`` (``problems``: calls whose input did not parse); afterwards each slot holds its result,
    or the needs it paused on."""

    __slots__ = ("_fatal", "problems", "slots", "state")

    def __init__(self, state: TurnState, slots: Sequence[CallSlot], problems: Mapping[str, str]) -> None:
        self.state = state
        self.slots = slots
        self.problems = problems
        self._fatal: list[Fatal] = []

    async def events(self) -> AsyncGenerator[Event, None]:
        s = self.state
        send, receive = anyio.create_memory_object_stream[_Item](float("inf"))
        try:
            for group in self._groups():
                if s.stop_reason is not None or self._fatal or s.ending:
                    break
                if s.steer:
                    for slot in group:
                        yield self._refused(slot, SKIPPED_TEXT)
                    continue
                async with aclosing(self._run_group(group, send, receive)) as g:
                    async for ev in g:
                        yield ev
        finally:
            send.close()
            receive.close()
        if self._fatal:
            raise self._fatal[0]
        if s.stop_reason is not None:
            for slot in self.slots:
                if not slot.started:
                    yield self._refused(slot, CANCELLED_TEXT)
            raise Stop
        if s.ending:
            for slot in self.slots:
                if not slot.started:
                    yield self._refused(slot, ENDED_TEXT)

    def _groups(self) -> list[list[CallSlot]]:
        """The read-only calls together first, then each other call alone."""
        concurrent: list[CallSlot] = []
        serial: list[CallSlot] = []
        for slot in self.slots:
            tool = self.state.offered.get(slot.call.name)
            if tool is not None and slot.call.id not in self.problems and tool.spec().hints.read_only:
                concurrent.append(slot)
            else:
                serial.append(slot)
        groups = [concurrent] if concurrent else []
        groups.extend([slot] for slot in serial)
        return groups

    def _refused(self, slot: CallSlot, text: str) -> ToolEnded:
        slot.result = ToolResult(slot.call.id, (Text(text),), True, slot.call.name)
        return ToolEnded(self.state.number, self.state.parent, slot.call.id, Result.failure(text))

    async def _run_group(
        self,
        group: list[CallSlot],
        send: MemoryObjectSendStream[_Item],
        receive: MemoryObjectReceiveStream[_Item],
    ) -> AsyncGenerator[Event, None]:
        s = self.state
        tg = s.tg
        assert tg is not None, "the turn's task group is entered by `async with run.turn(...)`"
        left = 0
        for slot in group:
            slot.started = True
            left += 1
            tg.start_soon(self._call_task, slot, self.problems.get(slot.call.id), send.clone())
        while left:
            if s.stop_reason is not None or self._fatal:
                item = await receive.receive()  # tools were cancelled; collect their ends
            else:
                try:
                    item = await s.guard(receive.receive())
                except Stop:
                    s.cancel_tools()
                    continue
            if item.slot is not None:
                left -= 1
                if item.fatal is not None:
                    self._fatal.append(item.fatal)
                    s.cancel_tools()
                    continue
            yield item.event
            if item.ack is not None:
                item.ack.set()

    async def _call_task(
        self, slot: CallSlot, problem: str | None, send: MemoryObjectSendStream[_Item]
    ) -> None:
        s = self.state
        call = slot.call
        outcome: Result | BaseException = Result.failure(CANCELLED_TEXT)
        fatal: Fatal | None = None
        context = Call(
            call,
            host=_Host(s, send),
            run=s.run,
            context=s.run.context,
            answers=slot.answers,
            state=slot.state,
        )
        with send:
            with CancelScope() as scope:
                s.tool_scopes.add(scope)
                s.calls[call.id] = (scope, context)
                if s.stop_reason is not None:
                    scope.cancel()
                try:
                    outcome, fatal = await self._invoke(call, context, problem)
                finally:
                    s.tool_scopes.discard(scope)
                    s.calls.pop(call.id, None)
            alone = s.cancelled_calls.pop(call.id, None)  # cancelled alone (``Run.cancel_call``)
            if scope.cancelled_caught:
                outcome, fatal = Result.failure(CANCELLED_TEXT), None
                if alone is not None and s.stop_reason is None:  # the turn goes on: the model reads why
                    outcome = Result.failure(alone, meta={"cancelled": True})
            if fatal is not None:
                item = _Item(ToolEnded(s.number, s.parent, call.id, fatal.error), None, slot, fatal)
            else:
                # A call cancelled alone while it asked the host asks no more (its question is void).
                pending = context.pending() if alone is None else None
                if pending is not None:
                    slot.pending = pending
                    outcome = Result.failure("(awaiting input)")
                result = outcome if isinstance(outcome, Result) else Result.failure(_describe(outcome))
                if pending is None:
                    slot.result = ToolResult(call.id, result.content, result.error, call.name)
                    if result.ends_turn:
                        s.ending = True
                item = _Item(ToolEnded(s.number, s.parent, call.id, outcome), None, slot)
            try:
                send.send_nowait(item)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass

    async def _invoke(
        self, call: ToolCall, context: Call, problem: str | None
    ) -> tuple[Result | BaseException, Fatal | None]:
        """The call through the tool middleware; returns the outcome, or a fatal error for the turn."""
        s = self.state
        tool = s.offered.get(call.name)
        if tool is None:
            s.retries += 1
            names = ", ".join(sorted(s.offered)) or "(none)"
            return Result.failure(f"unknown tool {call.name!r}; the tools are: {names}"), None
        spec = context.spec = tool.spec()
        if problem is None:
            if not validation_loaded():  # the process's first call: its import off the event loop
                await anyio.to_thread.run_sync(load_validation, abandon_on_cancel=True)
            call, problem = checked_input(call, spec.schema)
            context.tool_call = call  # the coerced input, for the middleware and the tool
        if problem is not None:
            s.retries += 1
            return Result.failure(problem), None
        raised: list[BaseException] = []
        nxt = self._innermost(tool, raised)
        for mw in reversed(s.tool_middleware):
            nxt = _bind_tool(mw, nxt)
        try:
            result = await nxt(call, context)
        except anyio.get_cancelled_exc_class():
            raise
        except Retry as e:
            s.retries += 1
            return Result.failure(str(e) or "retry"), None
        except Exception as e:
            if raised and raised[-1] is e:
                return e, Fatal(ErrorKind.TOOL_ERROR, e)
            log.warning("tool middleware raised on %s", call.name, exc_info=True)
            return e, Fatal(ErrorKind.MIDDLEWARE_ERROR, e)
        if not isinstance(result, Result):  # pyright: ignore[reportUnnecessaryIsInstance]
            e = HarnessUsageError(f"tool {call.name!r} returned {type(result).__name__}, not a Result")
            return e, Fatal(ErrorKind.TOOL_ERROR, e)
        if raised and not isinstance(raised[-1], HarnessUsageError) and result.error:
            return raised[-1], None
        return result, None

    def _innermost(self, tool: Tool, raised: list[BaseException]) -> NextTool:
        """The tool itself at the bottom of the middleware chain; what it raised goes into ``raised``."""
        s = self.state

        async def innermost(c: ToolCall, ctx: Call) -> Result:
            try:
                return await tool.call(dict(c.input), ctx)
            except Retry as e:
                s.retries += 1
                return Result.failure(str(e) or "retry")
            except HarnessUsageError as e:
                raised.append(e)
                raise
            except anyio.get_cancelled_exc_class():
                raise
            except Exception as e:
                log.warning("tool %s raised", c.name, exc_info=True)
                raised.append(e)
                return Result.failure(_describe(e))

        return innermost


class ResumedCalls:
    """Step 0 of a turn of answers: the decisions, then the pending calls made again; their results
    join the step's results message, and the calls that ask again are the run's pending calls."""

    __slots__ = ("answers", "state")

    def __init__(self, state: TurnState, answers: Sequence[Answer]) -> None:
        self.state = state
        self.answers = answers

    async def events(self) -> AsyncGenerator[Event, None]:
        s = self.state
        pending = list(s.conversation.pending)
        by_id = {a.call_id: a for a in self.answers}
        s.offered = {t.spec().name: t for t in await s.tools_now()}
        slots: list[CallSlot] = []
        denied_slots: list[CallSlot] = []
        for i, p in enumerate(pending):
            answers = by_id[p.call.id].answers
            denied: Decision | None = None
            for need in p.needs:
                event = self._decided(p, need, answers.get(need.id))
                if event is not None:
                    yield event
                    if isinstance(need, Approval) and not event.decision.allowed and denied is None:
                        denied = event.decision
            slot = CallSlot(i, p.call, answers=answers, state=p.state)
            if denied is not None and p.state is None:
                text = f"Denied: {denied.reason or 'the user said no'}"
                slot.result = ToolResult(p.call.id, (Text(text),), True, p.call.name)
                slot.started = True
                denied_slots.append(slot)
            else:
                slots.append(slot)
        for slot in denied_slots:
            text = slot.result.text if slot.result else ""
            yield ToolEnded(s.number, s.parent, slot.call.id, Result.failure(text))
        async with aclosing(CallTools(s, slots, {}).events()) as g:
            async for ev in g:
                yield ev
        s.check_retries()
        all_slots = sorted(slots + denied_slots, key=lambda slot: slot.index)
        self._merge_results({slot.call.id: slot.result for slot in all_slots if slot.result is not None})
        s.conversation.pending = [slot.pending for slot in all_slots if slot.pending is not None]

    def _decided(self, p: Pending, need: Need, value: Any) -> ToolDecided | None:
        """The event for one answered need: every approval, and a question declined with a Decision."""
        s = self.state
        if isinstance(need, Approval):
            if not isinstance(value, Decision):
                raise Fatal(
                    ErrorKind.TOOL_ERROR,
                    HarnessUsageError(f"call {p.call.id}: the approval {need.id!r} needs a Decision"),
                )
            return ToolDecided(s.number, s.parent, p.call.id, need.id, value)
        if isinstance(need, Question) and isinstance(value, Decision):  # pyright: ignore[reportUnnecessaryIsInstance]
            return ToolDecided(s.number, s.parent, p.call.id, need.id, value)
        return None

    def _merge_results(self, new_results: Mapping[str, ToolResult]) -> None:
        s = self.state
        msgs = s.conversation.messages
        # The step's assistant message is the last assistant message; its results follow it.
        idx = max((i for i, m in enumerate(msgs) if m.role is Role.ASSISTANT), default=-1)
        if idx < 0:
            raise Fatal(
                ErrorKind.TOOL_ERROR, HarnessUsageError("pending calls without their assistant message")
            )
        assistant = msgs[idx]
        existing: dict[str, ToolResult] = {}
        if idx + 1 < len(msgs):
            existing = {r.call_id: r for r in msgs[idx + 1].tool_results}
        merged = {**existing, **new_results}
        message = Message(Role.USER, tuple(merged[c.id] for c in assistant.tool_calls if c.id in merged))
        if idx + 1 < len(msgs):
            msgs[idx + 1] = message
        else:
            msgs.append(message)
        s.appended.append(message)


def _bind_tool(mw: ToolMiddleware, nxt: NextTool) -> NextTool:
    async def bound(c: ToolCall, ctx: Call) -> Result:
        return await mw.call(c, ctx, nxt)

    return bound


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"
