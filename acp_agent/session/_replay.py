"""``session/load``: the stored conversation as the client saw it live.

The messages give the user's prompts (as sent), the agent's thoughts and replies and the tool calls; the
session's records (``shown.jsonl``, see ``_store``) give what the messages do not hold: each tool call as
it ended (title, status, content with the diffs as shown, locations), the end of a cancelled or failed
turn (the partial reply the user saw and a marker, so two prompts are never glued together), the
agent-side slash commands (``/mode accept-edits`` and the agent's answer: they never reach the model, so
the messages do not hold them) and the plan. A call without a record (sessions of older versions) is rebuilt by its tool's view.

Records are kept small: a diff over ``DIFF_KEEP_CHARS`` keeps only the changed lines and ``_CONTEXT``
lines around them (the replayed diff then shows that region, not the whole file).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

from ..meta_keys import HOOK_SHOWN_META
from ..protocol.models import (
    AgentThoughtChunk,
    ContentToolCallContent,
    ImageContent,
    SessionInfoUpdate,
    TextContent,
    ToolCallStart,
    UserMessageChunk,
)
from . import _harness
from ._content import ACP_META_KEY, content_adapter
from ._updates import PARENT_META_KEY, agent_text

if TYPE_CHECKING:
    from harness import Message, ToolCall, ToolResult

    from ..protocol.models import SessionUpdate
    from ._frontier import ClientFrontier
    from ._present import Presenter
    from ._store import SessionMeta

__all__ = [
    "DIFF_KEEP_CHARS",
    "Replayed",
    "SessionRecords",
    "ShownLog",
    "compact_record",
    "message_id",
    "replay_session",
    "replay_updates",
    "turn_record",
]

DIFF_KEEP_CHARS: Final = 64 * 1024
_CONTEXT: Final = 3
_MARKERS: Final = {"cancelled": "(cancelled)", "failed": "(the turn failed)"}


class Replayed(Protocol):
    """What a replay uses of a live session (``_session.Session``, which imports this module)."""

    @property
    def presenter(self) -> Presenter: ...

    @property
    def frontier(self) -> ClientFrontier: ...

    @property
    def meta(self) -> SessionMeta: ...

    def messages(self) -> list[Message]: ...

    async def send_update_now(self, update: SessionUpdate | dict[str, Any]) -> None: ...


@dataclass(slots=True)
class SessionRecords:
    """The records of one session, read back: calls by id, turn ends by message count, the last plan."""

    calls: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    nested: dict[str, list[dict[str, Any]]] = field(default_factory=dict[str, list[dict[str, Any]]])
    turns: dict[int, list[dict[str, Any]]] = field(default_factory=dict[int, list[dict[str, Any]]])
    plan: list[dict[str, Any]] | None = None
    compactions: dict[int, list[dict[str, Any]]] = field(default_factory=dict[int, list[dict[str, Any]]])
    """Each compaction's terminal ``compaction_update`` by the message count it came after."""

    @classmethod
    def read(cls, lines: Sequence[dict[str, Any]]) -> SessionRecords:
        out = cls()
        for line in lines:
            call: Any = line.get("call")
            turn: Any = line.get("turn")
            plan: Any = line.get("plan")
            if isinstance(call, dict) and isinstance(cast("dict[str, Any]", call).get("toolCallId"), str):
                record = cast("dict[str, Any]", call)
                out.calls[str(record["toolCallId"])] = record
                parent = _parent_of(record)
                if parent is not None:
                    out.nested.setdefault(parent, []).append(record)
            elif isinstance(turn, dict) and isinstance(cast("dict[str, Any]", turn).get("after"), int):
                t = cast("dict[str, Any]", turn)
                out.turns.setdefault(int(t["after"]), []).append(t)
            elif isinstance(command := line.get("command"), dict) and isinstance(
                cast("dict[str, Any]", command).get("after"), int
            ):
                c = cast("dict[str, Any]", command)
                out.turns.setdefault(int(c["after"]), []).append({"command": c})
            elif isinstance(plan, list):
                out.plan = [cast("dict[str, Any]", e) for e in cast("list[Any]", plan) if isinstance(e, dict)]
            elif isinstance(compaction := line.get("compaction"), dict):
                c = cast("dict[str, Any]", compaction)
                if isinstance(c.get("after"), int) and isinstance(c.get("update"), dict):
                    out.compactions.setdefault(int(c["after"]), []).append(
                        cast("dict[str, Any]", c["update"])
                    )
        return out


class ShownLog:
    """A live session's records not yet written, and what its step in progress showed (``text``: the
    reply streamed; the calls that ended): a turn that ends without completing that step leaves them in a
    ``turn_record``, since the messages will not hold them."""

    def __init__(self) -> None:
        self._pending: list[dict[str, Any]] = []
        self.text: list[str] = []
        self.message_id: str | None = None
        """The id of the reply ``text`` streamed as."""
        self._calls: list[str] = []

    def plan(self, entries: list[dict[str, Any]]) -> None:
        self._pending.append({"plan": entries})

    def compaction(self, after: int, update: dict[str, Any]) -> None:
        """A compaction ended (its terminal ``compaction_update``) after ``after`` messages."""
        self._pending.append({"compaction": {"after": after, "update": update}})

    def calls_ended(self, records: Sequence[dict[str, Any]]) -> None:
        for record in records:
            self._pending.append(compact_record(record))
            self._calls.append(str(record["toolCallId"]))

    def step_done(self) -> None:
        """The step's messages are persisted: they hold its reply and calls."""
        self.text.clear()
        self._calls.clear()

    def command(self, after: int, prompt: str, reply: str) -> None:
        """An agent-side slash command (``prompt``) answered with ``reply`` after ``after`` messages."""
        self._pending.append({"command": {"after": after, "prompt": prompt, "reply": reply}})

    def turn_ended(self, after: int, outcome: str, error: str | None) -> None:
        """The turn ended ``cancelled`` or ``failed`` after ``after`` messages."""
        record = turn_record(after, outcome, "".join(self.text), self._calls, error)
        if self.message_id is not None and self.text:
            record["turn"]["messageId"] = self.message_id
        self._pending.append(record)
        self.step_done()

    def take(self) -> list[dict[str, Any]]:
        pending, self._pending = self._pending, []
        return pending


def _parent_of(record: dict[str, Any]) -> str | None:
    meta = record.get("_meta")
    parent = cast("dict[str, Any]", meta).get(PARENT_META_KEY) if isinstance(meta, dict) else None
    return parent if isinstance(parent, str) else None


def _with_nested(record: dict[str, Any], records: SessionRecords) -> list[dict[str, Any]]:
    out = [record]
    for child in records.nested.get(str(record["toolCallId"]), []):
        out.extend(_with_nested(child, records))
    return out


def turn_record(
    after: int, outcome: str, text: str, calls: Sequence[str], error: str | None
) -> dict[str, Any]:
    """The end of a cancelled or failed turn, after the first ``after`` messages."""
    return {"turn": {"after": after, "outcome": outcome, "text": text, "calls": list(calls), "error": error}}


def compact_record(record: dict[str, Any]) -> dict[str, Any]:
    """``{"call": record}`` with big diffs cut to their changed region (see the module docstring)."""
    content = record.get("content")
    if isinstance(content, list):
        items = cast("list[Any]", content)
        record = {
            **record,
            "content": [
                _compact_diff(cast("dict[str, Any]", c)) if isinstance(c, dict) else c for c in items
            ],
        }
    return {"call": record}


def _compact_diff(item: dict[str, Any]) -> dict[str, Any]:
    old, new = item.get("oldText"), item.get("newText")
    if item.get("type") != "diff" or not isinstance(new, str):
        return item
    if len(new) + len(old if isinstance(old, str) else "") <= DIFF_KEEP_CHARS:
        return item
    if not isinstance(old, str):
        return {**item, "newText": new[:DIFF_KEEP_CHARS] + "\n…"}
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    start = max(0, head - _CONTEXT)
    keep = max(0, tail - _CONTEXT)
    old_part = "".join(a[start : len(a) - keep])[:DIFF_KEEP_CHARS]
    new_part = "".join(b[start : len(b) - keep])[:DIFF_KEEP_CHARS]
    return {**item, "oldText": old_part, "newText": new_part}


async def replay_session(session: Replayed, shown: Sequence[dict[str, Any]]) -> None:
    """Send ``session``'s whole conversation as the client saw it (``shown``: its records), then the title
    and the plan."""
    await session.presenter.refresh()
    records = SessionRecords.read(shown)
    frontier = session.frontier
    for update in replay_updates(
        session.messages(), session.presenter, records, compactions=frontier.compaction
    ):
        await session.send_update_now(update)
    meta = session.meta
    if meta.title:
        await session.send_update_now(SessionInfoUpdate(title=meta.title, updated_at=meta.updated_at))
    if records.plan:
        plan = frontier.plan(records.plan) or {"sessionUpdate": "plan", "entries": records.plan}
        await session.send_update_now(plan)


def replay_updates(
    messages: Sequence[Message], presenter: Presenter, records: SessionRecords, *, compactions: bool = False
) -> list[Any]:
    """The updates (wire dicts and models) that show ``messages`` as the client saw them live, each
    message's chunks with the ``messageId`` they had live (``message_id``); with ``compactions`` (the client
    takes ``compaction_update``), each compaction where it happened."""
    results: dict[str, ToolResult] = {}
    for m in messages:
        for r in m.tool_results:
            results[r.call_id] = r
    updates: list[Any] = [
        u for j, t in enumerate(records.turns.get(0, [])) for u in _turn_end(t, records, 0, j)
    ]
    for i, m in enumerate(messages, start=1):
        if m.role is _harness.Role.USER:
            updates.extend(_user(m, message_id(m, i - 1)))
        else:
            updates.extend(_assistant(m, message_id(m, i - 1), presenter, results, records))
        if compactions:
            updates.extend(records.compactions.get(i, []))
        for j, turn in enumerate(records.turns.get(i, [])):
            updates.extend(_turn_end(turn, records, i, j))
    return updates


def message_id(m: Message, index: int) -> str:
    """The ``messageId`` of the message at ``index`` of a transcript: the one it was shown with live (a
    prompt's is kept in its meta; a model message's is its harness id), else one made of its place (a
    session of an older version: stable across loads)."""
    acp_meta: Any = m.meta.get(ACP_META_KEY)
    kept: Any = cast("dict[str, Any]", acp_meta).get("messageId") if isinstance(acp_meta, dict) else None
    if isinstance(kept, str) and kept:
        return kept
    return m.id or f"msg_at_{index}"


def _command(command: dict[str, Any], mid: str) -> list[Any]:
    """An agent-side slash command as it was shown: the user's line and the agent's answer."""
    prompt, reply = command.get("prompt"), command.get("reply")
    out: list[Any] = []
    if isinstance(prompt, str) and prompt:
        out.append(UserMessageChunk(content=TextContent(text=prompt), message_id=f"{mid}_user"))
    if isinstance(reply, str) and reply:
        out.append(agent_text(reply, f"{mid}_reply"))
    return out


def _user(m: Message, mid: str) -> list[Any]:
    hook: Any = m.meta.get(HOOK_SHOWN_META)
    if isinstance(hook, dict):  # a hook's message, shown live as the hook's entry: that entry again
        shown = cast("dict[str, Any]", hook)
        content = ContentToolCallContent(content=TextContent(text=str(shown.get("text", ""))))
        title = str(shown.get("title", "Hook"))
        return [
            ToolCallStart(
                tool_call_id=f"hook_{mid}", title=title, kind="execute", status="completed", content=[content]
            )
        ]
    acp_meta: Any = m.meta.get(ACP_META_KEY)
    original: Any = cast("dict[str, Any]", acp_meta).get("prompt") if isinstance(acp_meta, dict) else None
    out: list[Any] = []
    if isinstance(original, list):
        for raw in cast("list[Any]", original):
            try:
                out.append(UserMessageChunk(content=content_adapter().validate_python(raw), message_id=mid))
            except Exception:
                continue
        return out
    for part in m.parts:
        if isinstance(part, _harness.Text):
            out.append(UserMessageChunk(content=TextContent(text=part.text), message_id=mid))
        elif isinstance(part, _harness.Image) and part.data is not None:
            image = ImageContent(data=part.data, mime_type=part.media_type)
            out.append(UserMessageChunk(content=image, message_id=mid))
    return out


def _assistant(
    m: Message, mid: str, presenter: Presenter, results: dict[str, ToolResult], records: SessionRecords
) -> list[Any]:
    out: list[Any] = []
    for part in m.parts:
        if isinstance(part, _harness.Reasoning) and part.text:
            out.append(AgentThoughtChunk(content=TextContent(text=part.text), message_id=mid))
        elif isinstance(part, _harness.Text) and part.text:
            out.append(agent_text(part.text, mid))
        elif isinstance(part, _harness.ToolCall):
            out.extend(_call(part, presenter, results.get(part.id), records))
    return out


def _call(
    call: ToolCall, presenter: Presenter, result: ToolResult | None, records: SessionRecords
) -> list[Any]:
    """The call's record and those of its nested calls; else its view's rebuilding of it."""
    record = records.calls.get(call.id)
    if record is not None:
        return list(_with_nested(record, records))
    view = presenter.view(call.name)
    shown = view.replayed(call, result)
    status = "completed" if result is not None and not result.error else "failed"
    return [
        ToolCallStart(
            tool_call_id=call.id,
            title=view.title(call.input) or call.name,
            name=call.name,
            kind=view.kind,
            status=status,
            raw_input=call.input,
            content=shown.content or None,
            locations=shown.locations or view.locations(call.input),
        )
    ]


def _turn_end(turn: dict[str, Any], records: SessionRecords, after: int, index: int) -> list[Any]:
    """A cancelled or failed turn's end: the partial reply (with the id it streamed under) and a marker
    (appended to that reply, or a message of its own, with an id made of its place)."""
    if isinstance(command := turn.get("command"), dict):
        return _command(cast("dict[str, Any]", command), f"cmd_{after}_{index}")
    out: list[Any] = []
    text = turn.get("text")
    kept = turn.get("messageId")
    mid = kept if isinstance(kept, str) and kept else f"end_{after}_{index}"
    if isinstance(text, str) and text:
        out.append(agent_text(text, mid))
    for cid in cast("list[Any]", turn.get("calls") or []):
        record = records.calls.get(str(cid))
        if record is not None and _parent_of(record) is None:
            out.extend(_with_nested(record, records))
    marker = _MARKERS.get(str(turn.get("outcome")), "(the turn ended)")
    error = turn.get("error")
    if isinstance(error, str) and error:
        marker = f"(the turn failed: {error})"
    out.append(agent_text(("\n\n" if text else "") + marker, mid))
    return out
