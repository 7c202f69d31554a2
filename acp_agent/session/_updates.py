"""Harness events -> ``session/update`` payloads, one ``_Call`` object per tool call.

Text and reasoning deltas become ``agent_message_chunk`` / ``agent_thought_chunk`` (top-level text is the
hot path: a plain dict, ``agent_text``). A tool call becomes one ``tool_call`` (pending, title, kind) when
the model starts it, ``tool_call_update``s with the input as it streams and once it is complete
(``rawInput``, the title, ``locations``), ``in_progress`` when it runs (sent by a tool middleware when
``marks_running``, i.e. only after approval; else when the input is complete), progress, and
``completed``/``failed`` with ``rawOutput`` (always an object). What the updates carry beyond that
(content, diffs, terminals, titles, locations) is the tool's ``ToolView``'s (``_present``).

Calls of a turn being cancelled get no status at their end (the client marks them canceled, as the
protocol asks), nor, in Zed (``client_marks_rejected``), calls the user rejected (a result the policy
marked ``declined``): Zed marks them rejected itself and a later ``failed`` would override that; their
content says what happened instead. Every other client gets ``failed`` for a rejected call (Toad and acpx
leave it pending otherwise).

Nested runs (a sub-agent such as ``explore``: events whose ``parent`` is the agent tool's call id) are
shown through their parent call. Their tool calls map like top-level ones, with the ``toolCallId``
``<parent toolCallId>/<child call id>`` and ``_meta: {"parentToolCallId": <parent toolCallId>}`` on every
update, and ``in_progress`` when their input is complete (the session's tool middleware does not wrap a
child's calls). Their text streams into the parent call's ``content`` (the whole text so far, at most
every ``_AGENT_TEXT_EVERY`` characters, and at each message's end); their reasoning, turn and step
boundaries and usage are not shown.

Each ended call leaves a record of what the client was shown (``take_records``): the session persists
them, and ``session/load`` replays them as they were.

With ``threads`` (a client that shows sub-agent threads, ``_threads``), a sub-agent's calls and text go
to a session of their own instead, and the agent's call says which in its ``_meta``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, assert_never, cast

from ..protocol.models import (
    AgentMessageChunk,
    AgentThoughtChunk,
    TextContent,
    ToolCallProgress,
    ToolCallStart,
    UsageUpdate,
    UserMessageChunk,
    dump,
)
from . import _harness
from ._content import new_message_id
from ._partial import partial_json, raw_output
from ._present import Shown, text_block
from ._threads import PARENT_META_KEY

if TYPE_CHECKING:
    from harness import Result
    from harness.events import Event, ToolCallReady, ToolCallStarted, ToolEnded, ToolInputDelta

    from ..protocol.models import SessionUpdate, ToolCallContent, ToolCallLocation, ToolKind
    from ._present import CallView, Presenter, Shown, ToolView
    from ._threads import SubagentThreads

__all__ = ["PARENT_META_KEY", "EventMapper", "agent_text", "complete_update", "partial_json"]

_INPUT_EVERY_CHARS: Final = 200  # streamed input: an update at most every this many characters
_AGENT_TEXT_EVERY: Final = 400  # a sub-agent's streamed text: an update at most every this many characters
_MAX_AGENT_TEXT: Final = 20_000
_CANCELLED_TEXT: Final = "Cancelled"


def agent_text(text: str, message_id: str) -> dict[str, Any]:
    """The ``agent_message_chunk`` of a text of the message ``message_id``, as the wire dict it is."""
    return {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": text},
        "messageId": message_id,
    }


def complete_update(update: SessionUpdate, tool_names: dict[str, str]) -> None:
    """What an update made outside the mapper lacks: a message chunk's ``messageId`` (a message of one
    chunk: a command's reply, news), a tool call update's tool ``name`` (a tool middleware's: the name
    of the call as shown before, from ``tool_names``, which learns each call's)."""
    match update:
        case AgentMessageChunk() | AgentThoughtChunk() | UserMessageChunk() if update.message_id is None:
            update.message_id = new_message_id()
        case ToolCallStart() | ToolCallProgress() if update.name is None:
            update.name = tool_names.get(update.tool_call_id)
        case ToolCallStart(name=str(name)) | ToolCallProgress(name=str(name)):
            tool_names[update.tool_call_id] = name
        case _:
            pass


@dataclass(slots=True, eq=False)
class _Call:
    """One tool call of the turn: how it is shown, what of it streamed, what the client was shown."""

    acp_id: str
    name: str
    view: ToolView
    presenter: CallView
    title: str
    kind: ToolKind
    parent: str | None = None
    streamed: str = ""
    sent_at: int = 0
    agent_text: str = ""
    agent_sent: int = 0
    agent_message: str | None = None
    status: str = "pending"
    raw_input: Any = None
    raw_output: Any = None
    content: list[ToolCallContent] | None = None
    replay: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    children: list[_Call] = field(default_factory=list["_Call"])

    def record(self) -> dict[str, Any]:
        """The call as the client has it now, as a ``tool_call`` (persisted for ``session/load``)."""
        content = self.replay if self.replay is not None else self.content
        update = ToolCallStart(
            tool_call_id=self.acp_id,
            title=self.title,
            name=self.name,
            kind=self.kind,
            status=self.status if self.status in ("completed", "failed") else "failed",
            raw_input=self.raw_input,
            content=content,
            locations=self.locations,
            raw_output=None if content else self.raw_output,
        )
        if self.parent is not None:
            update.field_meta = {PARENT_META_KEY: self.parent}
        return dump(update)


class EventMapper:
    """Maps the events of one turn to updates; remembers which announced calls are still open.

    ``marks_running``: a tool middleware sends ``in_progress`` when a top-level call really runs.
    ``cancelling`` is set when the turn is being cancelled (see the module docstring). A top-level
    ``TextDelta`` never comes here: the session sends its chunk itself (the hot path)."""

    def __init__(
        self,
        presenter: Presenter,
        *,
        context_window: int | None = None,
        marks_running: bool = False,
        threads: SubagentThreads | None = None,
        client_marks_rejected: bool = False,
    ) -> None:
        self._presenter = presenter
        self._client_marks_rejected = client_marks_rejected
        self.threads = threads
        self._context_window = context_window
        self._marks_running = marks_running
        self._calls: dict[str, _Call] = {}  # open calls by ACP id
        self._agents: dict[str, _Call] = {}  # open calls by harness id, for a nested run's ``parent``
        self._records: list[dict[str, Any]] = []
        self.cancelling = False

    def take_records(self) -> list[dict[str, Any]]:
        """The records of the calls that ended since the last call (see ``_Call.record``); a thread's go
        to its thread."""
        records, self._records = self._records, []
        threads = self.threads
        return records if threads is None else [r for r in records if not threads.keep_record(r)]

    def map(self, event: Event) -> list[SessionUpdate]:
        updates = self._map(event)
        threads = self.threads
        return updates if threads is None else [u for u in updates if not threads.take(u)]

    def _map(self, event: Event) -> list[SessionUpdate]:
        if event.parent is not None:
            return self._nested(event)
        match event:
            case _harness.ReasoningDelta(id=message_id, text=text):
                chunk = AgentThoughtChunk(content=TextContent(text=text), message_id=message_id)
                return [chunk] if text else []
            case _harness.MessageEnded(usage=usage):
                used = usage.input + usage.cache_read + usage.cache_write + usage.output
                if self._context_window is None or used <= 0:
                    return []
                return [UsageUpdate(used=used, size=self._context_window)]
            case _harness.ToolCallStarted():
                return self._on_started(event, event.id, None)
            case _harness.ToolInputDelta():
                return self._on_input(event, self._calls.get(event.id))
            case _harness.ToolCallReady():
                return self._on_ready(event, event.id, None)
            case _harness.ToolProgress(id=cid, value=value):
                return self._on_progress(self._calls.get(cid), value)
            case _harness.ToolEnded():
                return self._on_ended(event, self._calls.get(event.id))
            case _harness.TextDelta():  # sent by the session itself (see the class docstring)
                return []
            case (
                _harness.TurnStarted()
                | _harness.TurnEnded()
                | _harness.StepStarted()
                | _harness.StepEnded()
                | _harness.MessageStarted()
                | _harness.MessageResumed()
                | _harness.Interjected()
                | _harness.ToolDecided()
                | _harness.InputRequested()
            ):
                return []
            case _:
                assert_never(event)

    # --- tool calls ------------------------------------------------------------------------------

    def _open(self, cid: str, name: str, parent: str | None) -> _Call:
        view = self._presenter.view(name)
        call = _Call(cid, name, view, view.open(cid), view.title(None) or name, view.kind, parent)
        self._calls[cid] = call
        if parent is None and self.threads is not None and self._presenter.runs_agent(name):
            self.threads.open(cid, name)
        if parent is not None and parent in self._calls:
            self._calls[parent].children.append(call)
        return call

    def _on_started(self, event: ToolCallStarted, cid: str, parent: str | None) -> list[SessionUpdate]:
        call = self._open(cid, event.name, parent)
        return [
            self._meta(
                call, ToolCallStart(tool_call_id=cid, title=call.title, kind=call.kind, status="pending")
            )
        ]

    def _on_input(self, event: ToolInputDelta, call: _Call | None) -> list[SessionUpdate]:
        if call is None or not event.json:
            return []
        call.streamed += event.json
        if len(call.streamed) - call.sent_at < _INPUT_EVERY_CHARS:
            return []
        partial = partial_json(call.streamed)
        if partial is None:
            return []
        call.sent_at = len(call.streamed)
        return [self._meta(call, ToolCallProgress(tool_call_id=call.acp_id, raw_input=partial))]

    def _on_ready(self, event: ToolCallReady, cid: str, parent: str | None) -> list[SessionUpdate]:
        updates: list[SessionUpdate] = []
        call = self._calls.get(cid)
        if call is None:  # a provider that skipped the start
            call = self._open(cid, event.name, parent)
            updates.append(
                self._meta(
                    call, ToolCallStart(tool_call_id=cid, title=call.title, kind=call.kind, status="pending")
                )
            )
        call.streamed = ""
        title = call.view.title(event.input) or call.name
        locations = call.view.locations(event.input)
        shown = call.presenter.ready(event.input)
        running = parent is not None or not self._marks_running
        call.title, call.raw_input = title, event.input
        if self.threads is not None:
            self.threads.prompt(cid, event.input.get("prompt"))
        call.locations = shown.locations or locations
        update = ToolCallProgress(
            tool_call_id=cid,
            status="in_progress" if running else None,
            raw_input=event.input,
            title=title if title != event.name else None,
            locations=call.locations,
        )
        updates.append(self._shown(call, update, shown))
        if running:
            call.status = "in_progress"
        return updates

    def _on_progress(self, call: _Call | None, value: Any) -> list[SessionUpdate]:
        if call is None:
            return []
        shown = call.presenter.progress(value)
        if shown is None:
            return []
        return [self._shown(call, ToolCallProgress(tool_call_id=call.acp_id), shown)]

    def _on_ended(self, event: ToolEnded, call: _Call | None) -> list[SessionUpdate]:
        if call is None:
            return []
        outcome = event.outcome  # a sub-agent cancelled alone: its open calls say "Cancelled"
        updates = self._close_children(call, bool(getattr(outcome, "meta", {}).get("cancelled")))
        self._forget(call)
        if self.threads is not None:
            self.threads.call_ended(call.acp_id, outcome, self.cancelling)
        if not isinstance(outcome, _harness.Result):
            text = f"{type(outcome).__name__}: {outcome}"
            class_name = getattr(outcome, "class_name", None)
            if isinstance(class_name, str):
                text = f"{class_name}: {getattr(outcome, 'message', outcome)}"
            shown = Shown(content=text_block(text))
            status: str | None = "failed"
            value: Any = None
        else:
            shown, status = self._end_of(call, outcome)
            value = outcome.value
        update = ToolCallProgress(
            tool_call_id=call.acp_id,
            status=status,  # pyright: ignore[reportArgumentType]
            locations=shown.locations,
            raw_output=raw_output(value),
        )
        call.raw_output = update.raw_output
        updates.append(self._shown(call, update, shown))
        call.status = status or "failed"
        self._records.append(self._record(call))
        return updates

    def _end_of(self, call: _Call, result: Result) -> tuple[Shown, str | None]:
        """What the call's last update shows, and its status (None: the client marked it itself)."""
        if result.meta.get("pending"):  # a question nobody answered: the turn ends, the call with it
            return Shown(content=text_block(_CANCELLED_TEXT)), None
        shown = call.presenter.ended(result)
        if not result.error:
            return shown, "completed"
        if self.cancelling:  # the client marks a cancelled turn's calls (the protocol asks it to)
            return shown, None
        if result.meta.get("policy") == "declined" and self._client_marks_rejected:
            return shown, None
        return shown, "failed"

    # --- nested runs -----------------------------------------------------------------------------

    def _nested(self, event: Event) -> list[SessionUpdate]:
        """An event of a sub-agent's run: its tool calls nested under the agent's call, its text into
        the agent call's content; the rest (turns, steps, reasoning, usage) is not shown."""
        assert event.parent is not None
        agent = self._agents.get(event.parent) or self._calls.get(event.parent)
        if agent is None:
            return []
        parent = agent.acp_id
        if self.threads is not None and isinstance(event, _harness.TextDelta | _harness.MessageEnded):
            if isinstance(event, _harness.TextDelta):
                self.threads.text(agent.acp_id, event.text)
            else:
                self.threads.message_ended(agent.acp_id, event.usage)
            if self.threads.meta(agent.acp_id.split("/")[0]) is not None:
                return []  # shown in the agent's thread, not in its call
        match event:
            case _harness.TextDelta(id=message, text=text) if text:
                if agent.agent_text and agent.agent_message != message:
                    agent.agent_text += "\n\n"
                agent.agent_message = message
                agent.agent_text += text
                if len(agent.agent_text) - agent.agent_sent < _AGENT_TEXT_EVERY:
                    return []
                return self._agent_progress(agent)
            case _harness.MessageEnded():
                return self._agent_progress(agent) if len(agent.agent_text) > agent.agent_sent else []
            case _harness.ToolCallStarted():
                updates = self._on_started(event, f"{parent}/{event.id}", parent)
                self._agents[event.id] = self._calls[f"{parent}/{event.id}"]
                return updates
            case _harness.ToolInputDelta():
                return self._on_input(event, self._calls.get(f"{parent}/{event.id}"))
            case _harness.ToolCallReady():
                updates = self._on_ready(event, f"{parent}/{event.id}", parent)
                self._agents[event.id] = self._calls[f"{parent}/{event.id}"]
                return updates
            case _harness.ToolProgress(id=cid, value=value):
                return self._on_progress(self._calls.get(f"{parent}/{cid}"), value)
            case _harness.ToolEnded():
                return self._on_ended(event, self._calls.get(f"{parent}/{event.id}"))
            case _:
                return []

    def _agent_progress(self, agent: _Call) -> list[SessionUpdate]:
        text = agent.agent_text
        agent.agent_sent = len(text)
        shown = text if len(text) <= _MAX_AGENT_TEXT else "…" + text[-_MAX_AGENT_TEXT:]
        return [
            self._shown(agent, ToolCallProgress(tool_call_id=agent.acp_id), Shown(content=text_block(shown)))
        ]

    def _close_children(self, call: _Call, cancelled: bool = False) -> list[SessionUpdate]:
        """The calls of an ended agent call's run that never ended (it was cancelled)."""
        out: list[SessionUpdate] = []
        for child in call.children:
            if self._calls.get(child.acp_id) is child:
                out.extend(self._close(child, cancelled))
        return out

    def _close(self, call: _Call, cancelled: bool = False) -> list[SessionUpdate]:
        updates = self._close_children(call, cancelled)
        self._forget(call)
        if self.threads is not None:
            self.threads.ended(call.acp_id, "cancelled")
        status = None if self.cancelling else "failed"
        shown = Shown(content=text_block(_CANCELLED_TEXT)) if self.cancelling or cancelled else Shown()
        updates.append(self._shown(call, ToolCallProgress(tool_call_id=call.acp_id, status=status), shown))
        call.status = "failed"
        self._records.append(self._record(call))
        return updates

    def _forget(self, call: _Call) -> None:
        self._calls.pop(call.acp_id, None)
        for key in [k for k, v in self._agents.items() if v is call]:
            del self._agents[key]

    def close_open_calls(self) -> list[SessionUpdate]:
        """The calls announced but never ended (the turn was cancelled or failed): ``failed``, or (being
        cancelled) no status but "Cancelled" in their content."""
        updates: list[SessionUpdate] = []
        for call in [c for c in self._calls.values() if c.parent is None or c.parent not in self._calls]:
            if self._calls.get(call.acp_id) is call:
                updates.extend(self._close(call))
        threads = self.threads
        return updates if threads is None else [u for u in updates if not threads.take(u)]

    # --- building updates ------------------------------------------------------------------------

    def _shown(self, call: _Call, update: Any, shown: Shown) -> SessionUpdate:
        """``update`` with what the view shows added, remembered in ``call`` for its record."""
        if shown.content is not None:
            update.content = shown.content
            call.content = shown.content
            call.replay = shown.replay
        elif shown.replay is not None:
            call.replay = shown.replay
        if shown.locations is not None:
            update.locations = shown.locations
            call.locations = shown.locations
        if shown.meta is not None:
            update.field_meta = {**(update.field_meta or {}), **shown.meta}
        return self._meta(call, update)

    def _meta(self, call: _Call, update: Any) -> SessionUpdate:
        update.name = call.name  # every update of a call names its tool (clients key renderers on it)
        if call.parent is not None:
            update.field_meta = {**(update.field_meta or {}), PARENT_META_KEY: call.parent}
        thread = self.threads.meta(call.acp_id) if self.threads is not None else None
        if thread is not None:
            meta = cast("dict[str, Any] | None", getattr(update, "field_meta", None)) or {}
            update.field_meta = {**meta, **thread}
        return update

    def _record(self, call: _Call) -> dict[str, Any]:
        record = call.record()
        thread = self.threads.meta(call.acp_id) if self.threads is not None else None
        if thread is not None:
            record["_meta"] = {**record.get("_meta", {}), **thread}
        return record
