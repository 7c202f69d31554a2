"""Sub-agent threads: a sub-agent's run (``explore``) shown as a session of its own, the way Zed reads it.

Zed's ``acp_thread`` renders a tool call as a sub-agent card when its ``_meta`` has ``tool_name`` and
``subagent_session_info {session_id, message_start_index, message_end_index}``, and shows the entries of
that session, which it opens with ``session/load`` (its id, the parent's working directories). So, for a
client that takes them (``takes_threads``: Zed by its ``clientInfo.name``, or any client whose
``clientCapabilities._meta`` has ``"subagentThreads": true``):

- the agent tool's call carries that ``_meta`` on every update (``message_end_index`` once it ended);
- the sub-agent's prompt, text and tool calls go to the child session (``<parent id>.sub-<hash of the
  call id>``) as ``user_message_chunk``, ``agent_message_chunk`` and ``tool_call``/``tool_call_update``,
  instead of being nested under the parent's call (``parentToolCallId``, the shape every other client
  keeps seeing);
- what the child session was shown (its prompt, each message's text, each call as it ended) is kept in
  ``<parent dir>/subagents/<child id>.jsonl``; ``session/load`` of the child id replays it (the child
  session is a read-only view: it cannot be prompted, and it is not listed).

A client advertising ``clientCapabilities.subagents`` gets each child announced on the parent with
``subagent_update`` before its traffic (title, task, ``capabilities.cancel``) and its state: ``running``,
``requires_action`` while a permission request or a question of the child waits on the user (the request
goes to the child's session), ``idle`` with its stop reason and the token usage of the child's own model
requests when it ended. ``session/cancel`` with the child's id cancels
that child alone (``cancel``: the harness's ``Run.cancel_call``); the parent's turn goes on.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ..protocol.errors import RpcError
from ..protocol.models import AgentMessageChunk, TextContent, UserMessageChunk, dump
from . import _harness
from ._content import new_message_id
from ._usage import wire_usage

if TYPE_CHECKING:
    from harness import Run, Usage

    from ..protocol.connection import Connection
    from ..protocol.models import SessionUpdate
    from ._store import SessionStore

__all__ = [
    "CHILD_CANCELLED",
    "PARENT_META_KEY",
    "child_stop_reason",
    "SUBAGENT_META_KEY",
    "TOOL_NAME_META_KEY",
    "SubagentThreads",
    "parent_of_thread",
    "replay_thread",
    "takes_threads",
]

PARENT_META_KEY: Final = "parentToolCallId"
"""The ``_meta`` key on a nested call's updates naming the tool call (a sub-agent's) it belongs to
(``_updates`` sets it; a thread takes the updates that carry it)."""
SUBAGENT_META_KEY: Final = "subagent_session_info"
TOOL_NAME_META_KEY: Final = "tool_name"
_SEPARATOR: Final = ".sub-"
CHILD_CANCELLED: Final = (
    "Cancelled by the user: the sub-agent was stopped before it finished and reported nothing; go on "
    "without it, or ask the user."
)
"""The result the parent's model reads for a sub-agent the user cancelled alone."""
_THREAD_ID = re.compile(r"^(?P<parent>[A-Za-z0-9][A-Za-z0-9_-]{0,100})\.sub-[0-9a-f]{16}$")


def takes_threads(client_info: Mapping[str, Any], capabilities: Mapping[str, Any]) -> bool:
    """Whether the client shows sub-agent threads (see the module docstring)."""
    meta = capabilities.get("_meta")
    if isinstance(meta, Mapping) and meta.get("subagentThreads") is True:  # pyright: ignore[reportUnknownMemberType]
        return True
    return str(client_info.get("name") or "").strip().lower() == "zed"


def parent_of_thread(session_id: str) -> str | None:
    """The parent session of a sub-agent thread's id, or None for any other id."""
    match = _THREAD_ID.match(session_id)
    return match["parent"] if match else None


async def replay_thread(store: SessionStore, connection: Connection, session_id: str) -> bool:
    """``session/load`` of a sub-agent thread: its lines replayed (False: ``session_id`` is no thread's).
    Raises not found for a thread id that names no thread."""
    parent = parent_of_thread(session_id)
    if parent is None:
        return False
    lines = await store.load_thread(parent, session_id)
    if lines is None:
        raise RpcError.not_found(f"session not found: {session_id}", uri=session_id)
    for line in lines:
        await connection.notify("session/update", {"sessionId": session_id, "update": line})
    return True


def child_stop_reason(outcome: Any, cancelling: bool) -> str:
    """The ``stopReason`` of a sub-agent's ``idle`` state from its call's outcome (``AgentTool`` puts the
    child's ``Ended`` in the result's value; ``cancelled`` in the meta: cancelled alone)."""
    if not isinstance(outcome, _harness.Result):
        return "error"
    ended = outcome.value
    if cancelling or outcome.meta.get("cancelled"):
        return "cancelled"
    match getattr(ended, "reason", None), getattr(ended, "finish", None):
        case (_harness.EndReason.CANCELLED | _harness.EndReason.INTERRUPTED, _):
            return "cancelled"
        case (_harness.EndReason.FAILED, _):
            return "error"
        case (_harness.EndReason.STOPPED, _):
            return "max_turn_requests"
        case (_, _harness.FinishReason.LENGTH):
            return "max_tokens"
        case (_, _harness.FinishReason.REFUSAL):
            return "refusal"
        case _:
            return "end_turn"


def thread_id(parent: str, call_id: str) -> str:
    return f"{parent}{_SEPARATOR}{hashlib.sha256(call_id.encode()).hexdigest()[:16]}"


@dataclass(slots=True)
class _Thread:
    session_id: str
    tool_name: str
    entries: int = 0
    in_text: bool = False
    text: str = ""
    ended: bool = False
    message_id: str | None = None
    """The ``messageId`` of the sub-agent's message streaming now."""
    announced: bool = False
    usage: Usage | None = None
    """What the sub-agent's own model requests used so far (its ``idle`` state's ``usage``)."""

    def entry(self, *, text: bool) -> None:
        """Count Zed's entries: each message, each tool call (a text entry runs until something else)."""
        if not (text and self.in_text):
            self.entries += 1
        self.in_text = text


@dataclass(slots=True)
class SubagentThreads:
    """The sub-agent threads of one session's turn: what goes to them live (``take_updates``) and what
    they keep for ``session/load`` (``take_lines``)."""

    parent: str
    announce: bool = False
    """The client takes ``subagent_update`` (``clientCapabilities.subagents``): each thread is announced on
    the parent session before its traffic, with its state."""
    _threads: dict[str, _Thread] = field(default_factory=dict[str, _Thread])
    """By the agent call's ACP id."""
    _updates: list[tuple[str, SessionUpdate]] = field(default_factory=list[tuple[str, "SessionUpdate"]])
    _lines: dict[str, list[dict[str, Any]]] = field(default_factory=dict[str, list[dict[str, Any]]])
    _parent_updates: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    def open(self, call_id: str, tool_name: str) -> None:
        self._threads.setdefault(call_id, _Thread(thread_id(self.parent, call_id), tool_name))

    def meta(self, call_id: str) -> dict[str, Any] | None:
        """The ``_meta`` of the agent call ``call_id`` (None: not an agent call)."""
        thread = self._threads.get(call_id)
        if thread is None:
            return None
        info: dict[str, Any] = {"session_id": thread.session_id, "message_start_index": 0}
        if thread.ended:
            info["message_end_index"] = max(0, thread.entries - 1)
        return {TOOL_NAME_META_KEY: thread.tool_name, SUBAGENT_META_KEY: info}

    def mark(self, update: Any) -> None:
        """Add the ``_meta`` of its agent call to ``update`` if it is one of an agent call's."""
        cid = getattr(update, "tool_call_id", None)
        meta = self.meta(cid) if isinstance(cid, str) else None
        if meta is not None:
            current: dict[str, Any] = update.field_meta or {}
            update.field_meta = {**current, **meta}

    def prompt(self, call_id: str, text: Any) -> None:
        thread = self._threads.get(call_id)
        if thread is None or not isinstance(text, str) or thread.entries:
            return
        if self.announce and not thread.announced:  # before any of the child's traffic
            thread.announced = True
            task = " ".join(text.split())
            self._parent_updates.append(
                {
                    "sessionUpdate": "subagent_update",
                    "sessionId": thread.session_id,
                    "title": thread.tool_name,
                    "description": task if len(task) <= 200 else task[:199] + "…",
                    "state": {"state": "running"},
                    # The client may cancel this child alone: ``session/cancel`` with its id (``cancel``).
                    "capabilities": {"cancel": {}},
                }
            )
        chunk = UserMessageChunk(content=TextContent(text=text), message_id=new_message_id())
        self._send(thread, chunk, text=False)

    def text(self, call_id: str, text: str) -> None:
        thread = self._threads.get(call_id.split("/")[0])
        if thread is None or not text:
            return
        thread.text += text
        if thread.message_id is None:
            thread.message_id = new_message_id()
        chunk = AgentMessageChunk(content=TextContent(text=text), message_id=thread.message_id)
        self._send(thread, chunk, text=True, keep=False)

    def message_ended(self, call_id: str, usage: Usage | None = None) -> None:
        """The sub-agent's message ended: its whole text is one line kept for the replay; ``usage``
        (what the model request of a message of its run, or of a run it runs, used) is counted."""
        thread = self._threads.get(call_id.split("/")[0])
        if thread is not None and usage is not None:
            thread.usage = usage if thread.usage is None else thread.usage + usage
        if thread is not None and thread.text:
            line = dump(
                AgentMessageChunk(content=TextContent(text=thread.text), message_id=thread.message_id)
            )
            self._lines.setdefault(thread.session_id, []).append(line)
            thread.text = ""
        if thread is not None:
            thread.message_id = None

    def ended(self, call_id: str, stop_reason: str = "end_turn") -> None:
        thread = self._threads.get(call_id)
        if thread is not None:
            self.message_ended(call_id)
            thread.ended = True
            if thread.announced:
                state: dict[str, Any] = {"state": "idle", "stopReason": stop_reason}
                if thread.usage is not None and thread.usage.total:
                    state["usage"] = wire_usage(thread.usage)  # the child's own requests, not the parent's
                self._parent_updates.append(
                    {"sessionUpdate": "subagent_update", "sessionId": thread.session_id, "state": state}
                )

    def waiting(self, call_id: str, waiting: bool) -> bool:
        """The announced child of ``call_id`` waits on the user (``requires_action``) or runs again; False
        when nothing is to tell (no such child, or it ended)."""
        thread = self._threads.get(call_id)
        if thread is None or not thread.announced or thread.ended:
            return False
        state = {"state": "requires_action" if waiting else "running"}
        self._parent_updates.append(
            {"sessionUpdate": "subagent_update", "sessionId": thread.session_id, "state": state}
        )
        return True

    def announced(self, call_id: str) -> str | None:
        """The session id of the announced, running child of ``call_id`` (its requests go there)."""
        thread = self._threads.get(call_id)
        return thread.session_id if thread is not None and thread.announced and not thread.ended else None

    def cancel(self, session_id: str, run: Run) -> bool:
        """``session/cancel`` of an announced, running child: its call alone is cancelled (``run`` goes on,
        the model reads ``CHILD_CANCELLED``); False when ``session_id`` is no such child."""
        for call_id, thread in self._threads.items():
            if thread.session_id == session_id and thread.announced and not thread.ended:
                return run.cancel_call(call_id, CHILD_CANCELLED)
        return False

    def call_ended(self, call_id: str, outcome: Any, cancelling: bool) -> None:
        """Any call ``call_id`` ended with ``outcome``: an agent call's child is ``idle`` with the stop
        reason of its run (``cancelled`` while the turn is ``cancelling``)."""
        if call_id in self._threads:
            self.ended(call_id, child_stop_reason(outcome, cancelling))

    def take_parent_updates(self) -> list[dict[str, Any]]:
        """The ``subagent_update``s for the parent session since the last call (wire dicts), to go before
        the threads' own updates."""
        out, self._parent_updates = self._parent_updates, []
        return out

    def take(self, update: Any) -> bool:
        """Move a nested call's update (``_meta.parentToolCallId`` set) to its thread; False: not one
        of a thread's, it stays where it was."""
        meta: dict[str, Any] = update.field_meta or {}
        cid = getattr(update, "tool_call_id", None)
        if PARENT_META_KEY not in meta or not isinstance(cid, str):
            return False
        thread = self._threads.get(cid.split("/")[0])
        if thread is None:
            return False
        rest = {k: v for k, v in meta.items() if k != PARENT_META_KEY}
        update.field_meta = rest or None
        new_call = update.session_update == "tool_call"
        if new_call:
            self.message_ended(cid)
        self._send(thread, update, text=False, keep=False, count=new_call)
        return True

    def keep_record(self, record: dict[str, Any]) -> bool:
        """A nested call's record (as it ended) for its thread's replay; False: not a thread's."""
        meta = record.get("_meta")
        thread = self._threads.get(str(record.get("toolCallId", "")).split("/")[0])
        if not isinstance(meta, dict) or PARENT_META_KEY not in meta or thread is None:
            return False
        rest = {k: v for k, v in meta.items() if k != PARENT_META_KEY}  # pyright: ignore[reportUnknownVariableType]
        line = {k: v for k, v in record.items() if k != "_meta"}
        if rest:
            line["_meta"] = rest
        self._lines.setdefault(thread.session_id, []).append(line)
        return True

    def _send(
        self, thread: _Thread, update: SessionUpdate, *, text: bool, keep: bool = True, count: bool = True
    ) -> None:
        if count:
            thread.entry(text=text)
        self._updates.append((thread.session_id, update))
        if keep:
            self._lines.setdefault(thread.session_id, []).append(dump(update))

    def take_updates(self) -> list[tuple[str, SessionUpdate]]:
        """The updates for the threads since the last call: ``(thread session id, update)``."""
        out, self._updates = self._updates, []
        return out

    def take_lines(self) -> dict[str, list[dict[str, Any]]]:
        """What each thread keeps for its replay since the last call, by thread session id."""
        out, self._lines = self._lines, {}
        return out
