"""Harness events -> ``session/update`` payloads.

Text and reasoning deltas become ``agent_message_chunk`` / ``agent_thought_chunk``. A tool call becomes one
``tool_call`` (pending, title, kind) as soon as the model starts it, ``tool_call_update``s with the input as
it streams and once it is complete (``rawInput``, a human title, ``locations``), ``in_progress`` when it runs
(sent by a tool middleware when ``ToolDisplay.marks_running``, i.e. only after approval; else when the input
is complete), progress (shell output as text, Zed's ``terminal_*`` ``_meta`` keys, or nothing when an editor
terminal shows it), and ``completed``/``failed`` with diffs, locations, the result's content and
``rawOutput`` = ``Result.value``. A step's usage becomes ``usage_update`` when the context window is known.

Nested runs (a sub-agent such as ``explore``: events whose ``parent`` is the agent tool's call id) are shown
through their parent call. Their tool calls map like top-level ones, with the ``toolCallId``
``<parent toolCallId>/<child call id>`` (unique in the session whatever ids the child's provider gives) and
``_meta: {"parentToolCallId": <parent toolCallId>}`` on every update, and ``in_progress`` when their input
is complete (the session's tool middleware does not wrap a child's calls). Their text is not an
``agent_message_chunk``: it streams into the parent call's ``content`` (the whole text so far, at most every
``_AGENT_TEXT_EVERY`` characters, and at each message's end); the parent's ``completed`` update then holds
the agent's final answer. Their reasoning, turn and step boundaries and usage are not shown.

A tool's ``ToolSpec.meta`` gives its kind as ``kind`` (or ``acp_kind``) and may give ``acp_title`` (a
string, or a callable taking the input and returning one); the coding tools get titles here by name.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from harness import ToolCall, ToolResult, ToolSource, ToolSpec
    from harness.events import Event

    from ..protocol.models import (
        SessionUpdate,
        ToolCallContent,
        ToolCallLocation,
        ToolCallStart,
        ToolKind,
    )
    from ._setup import ToolDisplay

__all__ = ["PARENT_META_KEY", "EventMapper", "ToolPresenter", "partial_json"]

log = logging.getLogger(__name__)

_KINDS = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}
)
_MAX_LOCATIONS = 50
_MAX_TEXT_OUTPUT = 20_000
_INPUT_EVERY_CHARS = 200  # streamed input: an update at most every this many characters
_AGENT_TEXT_EVERY = 400  # a sub-agent's streamed text: an update at most every this many characters
PARENT_META_KEY = "parentToolCallId"
"""The ``_meta`` key on a nested call's updates naming the tool call (a sub-agent's) it belongs to."""


def _jsonable_or_none(value: Any) -> Any:
    if value is None:
        return None
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        value = to_dict()
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


def partial_json(text: str) -> dict[str, Any] | None:
    """The object a prefix of streamed JSON describes so far (open strings, arrays and objects closed),
    or None when it cannot be completed into an object."""
    closers: list[str] = []
    in_string = False
    escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            closers.append("}" if ch == "{" else "]")
        elif ch in "}]" and closers:
            closers.pop()
    candidate = text
    if in_string:
        if escaped:
            candidate = candidate[:-1]
        candidate += '"'
    stripped = candidate.rstrip()
    for attempt in (stripped, stripped.rstrip(",:"), stripped.rsplit(",", 1)[0]):
        try:
            value = json.loads(attempt + "".join(reversed(closers)))
        except ValueError:
            continue
        if isinstance(value, dict):
            return value  # pyright: ignore[reportUnknownVariableType]
    return None


class ToolPresenter:
    """How tool calls look to the client: kind, title, locations and content."""

    def __init__(self, source: ToolSource | None = None, display: ToolDisplay | None = None) -> None:
        from ._setup import ToolDisplay

        self._source = source
        self.display = display or ToolDisplay()
        self._specs: dict[str, ToolSpec] = {}

    async def refresh(self) -> None:
        """Re-read the tool source (it may change between steps)."""
        if self._source is None:
            return
        try:
            tools = await self._source.tools()
        except Exception:
            log.exception("reading the session's tools failed; tool calls keep their plain names")
            return
        self._specs = {spec.name: spec for spec in (t.spec() for t in tools)}

    def knows(self, name: str) -> bool:
        return name in self._specs

    def kind(self, name: str) -> ToolKind:
        spec = self._specs.get(name)
        kind: Any = None
        if spec is not None:
            kind = spec.meta.get("kind") or spec.meta.get("acp_kind")
        return kind if isinstance(kind, str) and kind in _KINDS else "other"  # pyright: ignore[reportReturnType]

    def _shown(self, raw: Any) -> str:
        text = str(raw)
        roots = self.display.roots
        if roots and os.path.isabs(text):
            for r in roots:
                try:
                    rel = Path(os.path.normpath(text)).relative_to(r)
                except ValueError:
                    continue
                return rel.as_posix() or "."
        return text

    def _abs(self, raw: Any) -> str | None:
        if not isinstance(raw, str) or not raw or "\x00" in raw:
            return None
        if os.path.isabs(raw):
            return os.path.normpath(raw)
        if not self.display.roots:
            return None
        return os.path.normpath(os.path.join(self.display.roots[0], raw))

    def title(self, name: str, tool_input: Mapping[str, Any] | None = None) -> str:
        spec = self._specs.get(name)
        title: Any = spec.meta.get("acp_title") if spec is not None else None
        if callable(title):
            if tool_input is None:
                return name
            try:
                made = title(dict(tool_input))
            except Exception:
                log.exception("acp_title of tool %s failed", name)
                return name
            return str(made) if made else name
        if isinstance(title, str) and title:
            return title
        if tool_input is not None and (spec is not None or not self._specs):
            built = self._builtin_title(name, tool_input)
            if built:
                return built
        return name

    def _builtin_title(self, name: str, inp: Mapping[str, Any]) -> str | None:
        path = inp.get("path")
        shown = self._shown(path) if isinstance(path, str) and path else None
        if name == "shell" and isinstance(inp.get("command"), str):
            return " ".join(str(inp["command"]).split())[:200] or None
        if name == "read_file" and shown:
            offset = inp.get("offset")
            return f"Read {shown}" + (f" (from line {offset})" if isinstance(offset, int) else "")
        if name == "write_file" and shown:
            return f"Write {shown}"
        if name == "edit_file" and shown:
            return f"Edit {shown}"
        if name == "apply_patch" and isinstance(inp.get("patch"), str):
            files = _patch_files(str(inp["patch"]))
            return "Patch " + ", ".join(self._shown(f) for f in files[:3]) + (" …" if len(files) > 3 else "")
        if name == "list_dir":
            return f"List {shown or '.'}"
        if name == "glob" and isinstance(inp.get("pattern"), str):
            return f"Find {inp['pattern']}" + (f" in {shown}" if shown else "")
        if name == "grep" and isinstance(inp.get("pattern"), str):
            return f"Search {inp['pattern']!r}" + (f" in {shown}" if shown else "")
        if name in ("plan_set", "plan_update"):
            return "Update the plan"
        return None

    def locations(self, name: str, tool_input: Mapping[str, Any] | None) -> list[ToolCallLocation] | None:
        """Where the call acts, from its input (before it ran)."""
        from ..protocol.models import ToolCallLocation

        if tool_input is None:
            return None
        if name == "apply_patch" and isinstance(tool_input.get("patch"), str):
            paths = [self._abs(f) for f in _patch_files(str(tool_input["patch"]))]
            return [ToolCallLocation(path=p) for p in paths if p] or None
        path = self._abs(tool_input.get("path"))
        if path is None or name == "shell":
            return None
        line = tool_input.get("offset") if name == "read_file" else None
        return [ToolCallLocation(path=path, line=line if isinstance(line, int) and line >= 1 else None)]

    def result_content(self, result: ToolResult | Any) -> list[ToolCallContent]:
        from harness import Image, Text

        from ..protocol.models import ContentToolCallContent, ImageContent, TextContent

        out: list[ToolCallContent] = []
        for part in getattr(result, "content", ()):
            if isinstance(part, Text) and part.text:
                out.append(ContentToolCallContent(content=TextContent(text=part.text)))
            elif isinstance(part, Image) and part.data is not None:
                out.append(
                    ContentToolCallContent(content=ImageContent(data=part.data, mime_type=part.media_type))
                )
        return out

    def diffs(self, value: Any) -> list[ToolCallContent]:
        """``diff`` content from a file tool's ``Result.value`` (``{"diffs": [...]}``)."""
        from ..protocol.models import DiffToolCallContent

        out: list[ToolCallContent] = []
        for raw in _items(_obj(value).get("diffs")):
            d = _obj(raw)
            path, new, old = d.get("path"), d.get("new_text"), d.get("old_text")
            if isinstance(path, str) and isinstance(new, str):
                out.append(
                    DiffToolCallContent(
                        path=path, old_text=old if isinstance(old, str) else None, new_text=new
                    )
                )
        return out

    def result_locations(self, value: Any) -> list[ToolCallLocation] | None:
        from ..protocol.models import ToolCallLocation

        v = _obj(value)
        found: list[ToolCallLocation] = []
        rows = v.get("locations") or v.get("matches")
        if isinstance(rows, list):
            for raw in _items(rows)[:_MAX_LOCATIONS]:
                row = _obj(raw)
                path, line = row.get("path"), row.get("line")
                if isinstance(path, str):
                    found.append(
                        ToolCallLocation(
                            path=path, line=line if isinstance(line, int) and line >= 1 else None
                        )
                    )
        elif isinstance(v.get("files"), list):
            for f in v["files"][:_MAX_LOCATIONS]:
                if isinstance(f, str):
                    found.append(ToolCallLocation(path=f))
        elif isinstance(v.get("path"), str) and "line" in v:
            line = v.get("line")
            found.append(
                ToolCallLocation(
                    path=str(v["path"]), line=line if isinstance(line, int) and line >= 1 else None
                )
            )
        return found or None

    def replayed(self, call: ToolCall, result: ToolResult | None) -> ToolCallStart:
        """One ``tool_call`` holding the call's final state (``session/load``)."""
        from ..protocol.models import ToolCallStart

        content: list[ToolCallContent] = []
        locations = self.locations(call.name, call.input)
        if result is None:
            status = "failed"
        else:
            status = "failed" if result.error else "completed"
            content = [*self._input_diffs(call), *self.result_content(result)]
        return ToolCallStart(
            tool_call_id=call.id,
            title=self.title(call.name, call.input),
            kind=self.kind(call.name),
            status=status,
            raw_input=call.input,
            content=content or None,
            locations=locations,
        )

    def _input_diffs(self, call: ToolCall) -> list[ToolCallContent]:
        """What a stored edit changed, from its input alone (results keep no values across restarts)."""
        from ..protocol.models import DiffToolCallContent

        inp = call.input
        path = self._abs(inp.get("path"))
        if call.name == "edit_file" and path and isinstance(inp.get("old_text"), str):
            return [
                DiffToolCallContent(
                    path=path, old_text=str(inp["old_text"]), new_text=str(inp.get("new_text", ""))
                )
            ]
        return []


def _patch_files(patch: str) -> list[str]:
    files: list[str] = []
    for line in patch.splitlines():
        if line.startswith("+++ ") or line.startswith("--- "):
            name = line[4:].split("\t")[0].strip()
            if name == "/dev/null":
                continue
            if name.startswith(("a/", "b/")):
                name = name[2:]
            if name and name not in files:
                files.append(name)
    return files


class EventMapper:
    """Maps the events of one turn to updates; remembers which announced calls are still open."""

    def __init__(self, presenter: ToolPresenter, *, context_window: int | None = None) -> None:
        self._presenter = presenter
        self._open: dict[str, str] = {}  # call id -> tool name
        self._inputs: dict[str, Mapping[str, Any]] = {}
        self._streamed: dict[str, str] = {}
        self._sent_at: dict[str, int] = {}
        self._output: dict[str, str] = {}
        self._context_window = context_window
        self._acp_ids: dict[str, str] = {}  # a nested call's harness id -> its ACP toolCallId
        self._parents: dict[str, str] = {}  # a nested call's ACP id -> its parent's ACP id
        self._agent_text: dict[str, str] = {}  # an agent call's ACP id -> its child's text so far
        self._agent_sent: dict[str, int] = {}  # ... and how much of it was sent
        self._agent_message: dict[str, str] = {}  # ... and the id of the child message it ends with

    async def map(self, event: Event) -> list[SessionUpdate]:
        from harness.events import MessageEnded, ReasoningDelta, StepStarted, TextDelta, ToolEnded

        from ..protocol.models import AgentMessageChunk, AgentThoughtChunk, TextContent, UsageUpdate

        if event.parent is not None:
            return self._nested(event)
        if isinstance(event, TextDelta):
            return [AgentMessageChunk(content=TextContent(text=event.text))] if event.text else []
        if isinstance(event, ReasoningDelta):
            return [AgentThoughtChunk(content=TextContent(text=event.text))] if event.text else []
        if isinstance(event, StepStarted):
            await self._presenter.refresh()
            return []
        if isinstance(event, MessageEnded):
            usage = event.usage
            used = usage.input + usage.cache_read + usage.cache_write + usage.output
            if self._context_window is None or used <= 0:
                return []
            return [UsageUpdate(used=used, size=self._context_window)]
        if isinstance(event, ToolEnded):
            self._forget_agent(event.id)
            return [*self._close_children(event.id), *self._tool_event(event, event.id, nested=False)]
        return self._tool_event(event, getattr(event, "id", ""), nested=False)

    # --- nested runs ---------------------------------------------------------------------------------

    def _nested(self, event: Event) -> list[SessionUpdate]:
        """An event of a sub-agent's run: its tool calls nested under the agent's call, its text into
        the agent call's content; the rest (turns, steps, reasoning, usage) is not shown."""
        from harness.events import (
            MessageEnded,
            TextDelta,
            ToolCallReady,
            ToolCallStarted,
            ToolEnded,
            ToolInputDelta,
            ToolProgress,
        )

        assert event.parent is not None
        parent = self._acp_ids.get(event.parent, event.parent)
        if isinstance(event, TextDelta):
            if not event.text:
                return []
            text = self._agent_text.get(parent, "")
            if text and self._agent_message.get(parent) != event.id:
                text += "\n\n"
            self._agent_message[parent] = event.id
            self._agent_text[parent] = text + event.text
            if len(self._agent_text[parent]) - self._agent_sent.get(parent, 0) < _AGENT_TEXT_EVERY:
                return []
            return self._agent_progress(parent)
        if isinstance(event, MessageEnded):
            if len(self._agent_text.get(parent, "")) > self._agent_sent.get(parent, 0):
                return self._agent_progress(parent)
            return []
        if not isinstance(event, ToolCallStarted | ToolInputDelta | ToolCallReady | ToolProgress | ToolEnded):
            return []
        cid = self._acp_ids.get(event.id)
        if cid is None or self._parents.get(cid) != parent:
            cid = f"{parent}/{event.id}"
            self._acp_ids[event.id] = cid
            self._parents[cid] = parent
        updates = self._tool_event(event, cid, nested=True)
        for update in updates:
            meta: dict[str, Any] = dict(getattr(update, "field_meta", None) or {})
            meta[PARENT_META_KEY] = parent
            update.field_meta = meta
        if isinstance(event, ToolEnded):
            self._forget_agent(cid)
            updates = [*self._close_children(cid), *updates]
        return updates

    def _agent_progress(self, call_id: str) -> list[SessionUpdate]:
        from ..protocol.models import ContentToolCallContent, TextContent, ToolCallProgress

        text = self._agent_text.get(call_id, "")
        self._agent_sent[call_id] = len(text)
        if call_id not in self._open:
            return []
        shown = text if len(text) <= _MAX_TEXT_OUTPUT else "…" + text[-_MAX_TEXT_OUTPUT:]
        return [
            ToolCallProgress(
                tool_call_id=call_id, content=[ContentToolCallContent(content=TextContent(text=shown))]
            )
        ]

    def _close_children(self, call_id: str) -> list[SessionUpdate]:
        """``failed`` for the calls of an ended agent call's run that never ended (it was cancelled)."""
        from ..protocol.models import ToolCallProgress

        out: list[SessionUpdate] = []
        for cid in [c for c in self._open if self._parents.get(c) == call_id]:
            out.extend(self._close_children(cid))
            self._open.pop(cid, None)
            update = ToolCallProgress(tool_call_id=cid, status="failed")
            update.field_meta = {PARENT_META_KEY: call_id}
            out.append(update)
        return out

    def _forget_agent(self, call_id: str) -> None:
        self._agent_text.pop(call_id, None)
        self._agent_sent.pop(call_id, None)
        self._agent_message.pop(call_id, None)

    def _tool_event(self, event: Event, cid: str, *, nested: bool) -> list[SessionUpdate]:
        """A tool call's event as updates; ``cid`` is its ACP ``toolCallId``."""
        from harness import Result
        from harness.events import ToolCallReady, ToolCallStarted, ToolEnded, ToolInputDelta, ToolProgress

        from ..protocol.models import ContentToolCallContent, TextContent, ToolCallProgress, ToolCallStart

        p = self._presenter
        display = p.display
        if isinstance(event, ToolCallStarted):
            self._open[cid] = event.name
            return [
                ToolCallStart(
                    tool_call_id=cid,
                    title=p.title(event.name),
                    kind=p.kind(event.name),
                    status="pending",
                )
            ]
        if isinstance(event, ToolInputDelta):
            if cid not in self._open or not event.json:
                return []
            text = self._streamed.get(cid, "") + event.json
            self._streamed[cid] = text
            if len(text) - self._sent_at.get(cid, 0) < _INPUT_EVERY_CHARS:
                return []
            partial = partial_json(text)
            if partial is None:
                return []
            self._sent_at[cid] = len(text)
            return [ToolCallProgress(tool_call_id=cid, raw_input=partial)]
        if isinstance(event, ToolCallReady):
            updates: list[SessionUpdate] = []
            title = p.title(event.name, event.input)
            locations = p.locations(event.name, event.input)
            self._inputs[cid] = event.input
            self._streamed.pop(cid, None)
            content, meta = self._terminal_start(cid, event.name, event.input)
            if cid not in self._open:  # a provider that skipped the start
                self._open[cid] = event.name
                updates.append(
                    ToolCallStart(
                        tool_call_id=cid,
                        title=title,
                        kind=p.kind(event.name),
                        status="pending",
                        raw_input=event.input,
                        locations=locations,
                    )
                )
            update = ToolCallProgress(
                tool_call_id=cid,
                # With marks_running a middleware says when the call really runs (after approval).
                status=None if display.marks_running and not nested else "in_progress",
                raw_input=event.input,
                title=title if title != event.name else None,
                locations=locations,
                content=content,
            )
            if meta is not None:
                update.field_meta = meta
            updates.append(update)
            return updates
        if isinstance(event, ToolProgress):
            if cid not in self._open:
                return []
            return self._progress(cid, event.value)
        if isinstance(event, ToolEnded):
            if cid not in self._open:
                return []
            name = self._open.pop(cid)
            self._inputs.pop(cid, None)
            self._output.pop(cid, None)
            outcome = event.outcome
            if isinstance(outcome, Result):
                return [self._ended(cid, name, outcome)]
            text = f"{type(outcome).__name__}: {outcome}"
            class_name = getattr(outcome, "class_name", None)
            if isinstance(class_name, str):
                text = f"{class_name}: {getattr(outcome, 'message', outcome)}"
            return [
                ToolCallProgress(
                    tool_call_id=cid,
                    status="failed",
                    content=[ContentToolCallContent(content=TextContent(text=text))],
                )
            ]
        return []

    # --- shell output ------------------------------------------------------------------------------

    def _terminal_start(
        self, call_id: str, name: str, tool_input: Mapping[str, Any]
    ) -> tuple[list[ToolCallContent] | None, dict[str, Any] | None]:
        from ..protocol.models import TerminalToolCallContent

        display = self._presenter.display
        if name != "shell" or display.editor_terminal or not display.terminal_meta:
            return None, None
        cwd = self._presenter._abs(tool_input.get("cwd") or ".")  # pyright: ignore[reportPrivateUsage]
        return (
            [TerminalToolCallContent(terminal_id=call_id)],
            {"terminal_info": {"terminal_id": call_id, "cwd": cwd}},
        )

    def _progress(self, call_id: str, value: Any) -> list[SessionUpdate]:
        from ..protocol.models import ContentToolCallContent, TextContent, ToolCallProgress

        display = self._presenter.display
        chunk = _obj(value).get("output") if isinstance(value, dict) else value
        if not isinstance(chunk, str) or not chunk:
            return []
        if call_id in display.terminals:
            return []  # the editor's terminal shows it
        if self._open.get(call_id) == "shell" and display.terminal_meta and not display.editor_terminal:
            update = ToolCallProgress(tool_call_id=call_id)
            update.field_meta = {"terminal_output": {"terminal_id": call_id, "data": chunk}}
            return [update]
        text = (self._output.get(call_id, "") + chunk)[-_MAX_TEXT_OUTPUT:]
        self._output[call_id] = text
        return [
            ToolCallProgress(
                tool_call_id=call_id,
                content=[ContentToolCallContent(content=TextContent(text=f"```\n{text}\n```"))],
            )
        ]

    def _ended(self, call_id: str, name: str, outcome: Any) -> SessionUpdate:
        from ..protocol.models import TerminalToolCallContent, ToolCallProgress

        p = self._presenter
        display = p.display
        value = outcome.value
        status = "failed" if outcome.error else "completed"
        locations = p.result_locations(value)
        if name == "shell" and call_id in display.terminals:
            content: list[ToolCallContent] = [
                TerminalToolCallContent(terminal_id=display.terminals.pop(call_id))
            ]
            return ToolCallProgress(
                tool_call_id=call_id, status=status, content=content, raw_output=_jsonable_or_none(value)
            )
        if name == "shell" and display.terminal_meta and not display.editor_terminal:
            code = _obj(value).get("exit_code")
            update = ToolCallProgress(
                tool_call_id=call_id,
                status=status,
                content=[TerminalToolCallContent(terminal_id=call_id)],
                raw_output=_jsonable_or_none(value),
            )
            update.field_meta = {
                "terminal_exit": {
                    "terminal_id": call_id,
                    "exit_code": code if isinstance(code, int) and code >= 0 else None,
                    "signal": f"SIG{-code}" if isinstance(code, int) and code < 0 else None,
                }
            }
            return update
        content = [*p.diffs(value), *p.result_content(outcome)]
        return ToolCallProgress(
            tool_call_id=call_id,
            status=status,
            content=content,
            locations=locations,
            raw_output=_jsonable_or_none(value),
        )

    def close_open_calls(self) -> list[SessionUpdate]:
        """``failed`` for every call announced but never ended (the turn was cancelled or failed)."""
        from ..protocol.models import ToolCallProgress

        updates: list[SessionUpdate] = []
        for cid in self._open:
            update = ToolCallProgress(tool_call_id=cid, status="failed")
            parent = self._parents.get(cid)
            if parent is not None:
                update.field_meta = {PARENT_META_KEY: parent}
            updates.append(update)
        self._open.clear()
        self._inputs.clear()
        self._output.clear()
        self._agent_text.clear()
        self._agent_sent.clear()
        self._agent_message.clear()
        return updates


def _obj(value: Any) -> dict[str, Any]:
    """``value`` as a JSON object (``{}`` when it is not one)."""
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _items(value: Any) -> list[Any]:
    return cast("list[Any]", value) if isinstance(value, list) else []
