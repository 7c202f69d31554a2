"""Harness events -> ``session/update`` payloads.

Text and reasoning deltas become ``agent_message_chunk`` / ``agent_thought_chunk``; tool calls become one
``tool_call`` (pending, title, kind) and ``tool_call_update``s (raw input and ``in_progress`` when the
input is complete or progress is reported; ``completed``/``failed`` with the result's content and
``rawOutput`` = ``Result.value`` at the end). A tool's ``ToolSpec.meta`` may give ``acp_kind`` (a
``ToolKind``) and ``acp_title`` (a string, or a callable taking the input and returning one)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness import ToolCall, ToolResult, ToolSource, ToolSpec
    from harness.events import Event

    from ..protocol.models import SessionUpdate, ToolCallContent, ToolCallStart, ToolKind

__all__ = ["EventMapper", "ToolPresenter"]

log = logging.getLogger(__name__)

_KINDS = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}
)


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


class ToolPresenter:
    """How tool calls look to the client: title and kind from the tool's spec meta."""

    def __init__(self, source: ToolSource | None = None) -> None:
        self._source = source
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

    def kind(self, name: str) -> ToolKind:
        spec = self._specs.get(name)
        kind = spec.meta.get("acp_kind") if spec is not None else None
        return kind if isinstance(kind, str) and kind in _KINDS else "other"  # pyright: ignore[reportReturnType]

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
        return title if isinstance(title, str) and title else name

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

    def replayed(self, call: ToolCall, result: ToolResult | None) -> ToolCallStart:
        """One ``tool_call`` holding the call's final state (``session/load``)."""
        from ..protocol.models import ToolCallStart

        if result is None:
            status, content = "failed", []
        else:
            status, content = ("failed" if result.error else "completed"), self.result_content(result)
        return ToolCallStart(
            tool_call_id=call.id,
            title=self.title(call.name, call.input),
            kind=self.kind(call.name),
            status=status,
            raw_input=call.input,
            content=content or None,
        )


class EventMapper:
    """Maps the events of one turn to updates; remembers which announced calls are still open."""

    def __init__(self, presenter: ToolPresenter) -> None:
        self._presenter = presenter
        self._open: dict[str, str] = {}  # call id -> tool name
        self._running: set[str] = set()

    async def map(self, event: Event) -> list[SessionUpdate]:
        from harness import Result
        from harness.events import (
            ReasoningDelta,
            StepStarted,
            TextDelta,
            ToolCallReady,
            ToolCallStarted,
            ToolEnded,
            ToolProgress,
        )

        from ..protocol.models import (
            AgentMessageChunk,
            AgentThoughtChunk,
            ContentToolCallContent,
            TextContent,
            ToolCallProgress,
            ToolCallStart,
        )

        if event.parent is not None:
            return []  # nested runs are shown through their parent tool call
        if isinstance(event, TextDelta):
            return [AgentMessageChunk(content=TextContent(text=event.text))] if event.text else []
        if isinstance(event, ReasoningDelta):
            return [AgentThoughtChunk(content=TextContent(text=event.text))] if event.text else []
        if isinstance(event, StepStarted):
            await self._presenter.refresh()
            return []
        p = self._presenter
        if isinstance(event, ToolCallStarted):
            self._open[event.id] = event.name
            return [
                ToolCallStart(
                    tool_call_id=event.id,
                    title=p.title(event.name),
                    kind=p.kind(event.name),
                    status="pending",
                )
            ]
        if isinstance(event, ToolCallReady):
            updates: list[SessionUpdate] = []
            if event.id not in self._open:  # a provider that skipped the start
                self._open[event.id] = event.name
                updates.append(
                    ToolCallStart(
                        tool_call_id=event.id,
                        title=p.title(event.name, event.input),
                        kind=p.kind(event.name),
                        status="pending",
                        raw_input=event.input,
                    )
                )
            self._running.add(event.id)
            title = p.title(event.name, event.input)
            updates.append(
                ToolCallProgress(
                    tool_call_id=event.id,
                    status="in_progress",
                    raw_input=event.input,
                    title=title if title != event.name else None,
                )
            )
            return updates
        if isinstance(event, ToolProgress):
            if event.id not in self._open:
                return []
            content: list[ToolCallContent] | None = None
            if isinstance(event.value, str) and event.value:
                content = [ContentToolCallContent(content=TextContent(text=event.value))]
            progress: list[SessionUpdate] = [
                ToolCallProgress(tool_call_id=event.id, status="in_progress", content=content)
            ]
            return progress
        if isinstance(event, ToolEnded):
            if event.id not in self._open:
                return []
            self._open.pop(event.id, None)
            self._running.discard(event.id)
            outcome = event.outcome
            if isinstance(outcome, Result):
                return [
                    ToolCallProgress(
                        tool_call_id=event.id,
                        status="failed" if outcome.error else "completed",
                        content=p.result_content(outcome),
                        raw_output=_jsonable_or_none(outcome.value),
                    )
                ]
            text = f"{type(outcome).__name__}: {outcome}"
            class_name = getattr(outcome, "class_name", None)
            if isinstance(class_name, str):
                text = f"{class_name}: {getattr(outcome, 'message', outcome)}"
            return [
                ToolCallProgress(
                    tool_call_id=event.id,
                    status="failed",
                    content=[ContentToolCallContent(content=TextContent(text=text))],
                )
            ]
        return []

    def close_open_calls(self) -> list[SessionUpdate]:
        """``failed`` for every call announced but never ended (the turn was cancelled or failed)."""
        from ..protocol.models import ToolCallProgress

        updates: list[SessionUpdate] = [
            ToolCallProgress(tool_call_id=cid, status="failed") for cid in self._open
        ]
        self._open.clear()
        self._running.clear()
        return updates
