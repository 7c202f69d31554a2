"""How tool calls look to the client: one ``ToolView`` per tool, one ``CallView`` per call.

The session layer knows no tool by name. A factory gives views for its own tools
(``SessionSetup.views``, by tool name); every other tool gets a ``MetaView`` made from its spec's
``ToolMeta`` (``kind``, ``title``) that shows the result's text and images and streams text progress.
A ``ToolView`` makes the title, kind and locations from the input (also for permission requests); the
``CallView`` it opens for each call says what the call's updates carry when its input is complete, as it
progresses and when it ends (``Shown``), and what a ``session/load`` replays of it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

from ..protocol.models import ContentToolCallContent, ImageContent, TextContent
from . import _harness

if TYPE_CHECKING:
    from harness import Result, ToolCall, ToolResult, ToolSource
    from harness.tools import ToolMeta

    from ..protocol.models import ToolCallContent, ToolCallLocation, ToolKind

__all__ = [
    "MAX_TEXT_OUTPUT",
    "CallView",
    "MetaView",
    "Presenter",
    "Shown",
    "TextCall",
    "ToolView",
    "result_content",
    "text_block",
]

log = logging.getLogger(__name__)

MAX_TEXT_OUTPUT: Final = 20_000
"""Streamed text output shown in a call's content: its last this many characters."""


@dataclass(slots=True)
class Shown:
    """What a view adds to an update. ``content`` replaces the call's content (None: left as it is);
    ``replay`` is what a ``session/load`` shows instead of the content (None: the content itself), for
    content that only lives as long as the connection (an editor terminal)."""

    content: list[ToolCallContent] | None = None
    locations: list[ToolCallLocation] | None = None
    meta: dict[str, Any] | None = None
    replay: list[ToolCallContent] | None = None


class CallView(Protocol):
    """One call's presentation, with whatever state it keeps between updates."""

    def ready(self, tool_input: Mapping[str, Any]) -> Shown:
        """The input is complete."""
        ...

    def progress(self, value: Any) -> Shown | None:
        """``call.progress(value)``; None: nothing to send."""
        ...

    def ended(self, result: Result) -> Shown: ...


class ToolView(Protocol):
    """A tool's presentation: kind, title and locations from the input; a ``CallView`` per call."""

    @property
    def kind(self) -> ToolKind: ...

    def title(self, tool_input: Mapping[str, Any] | None) -> str | None:
        """The title (None: the tool's name); ``tool_input`` is None before the input is known."""
        ...

    def locations(self, tool_input: Mapping[str, Any]) -> list[ToolCallLocation] | None: ...

    def open(self, call_id: str) -> CallView:
        """A view of the call ``call_id`` (its ACP ``toolCallId``)."""
        ...

    def replayed(self, call: ToolCall, result: ToolResult | None) -> Shown:
        """A stored call that has no record of what was shown (sessions of older versions)."""
        ...


def result_content(result: Result | ToolResult) -> list[ToolCallContent]:
    """A result's text and images as tool call content."""
    out: list[ToolCallContent] = []
    for part in result.content:
        if isinstance(part, _harness.Text) and part.text:
            out.append(ContentToolCallContent(content=TextContent(text=part.text)))
        elif isinstance(part, _harness.Image) and part.data is not None:
            out.append(
                ContentToolCallContent(content=ImageContent(data=part.data, mime_type=part.media_type))
            )
    return out


def text_block(text: str) -> list[ToolCallContent]:
    return [ContentToolCallContent(content=TextContent(text=text))]


class TextCall:
    """A call shown as text: streamed text output in a code block, then the result's content."""

    def __init__(self) -> None:
        self._output = ""

    def ready(self, tool_input: Mapping[str, Any]) -> Shown:
        return Shown()

    def progress(self, value: Any) -> Shown | None:
        chunk: Any = cast("dict[str, Any]", value).get("output") if isinstance(value, dict) else value
        if not isinstance(chunk, str) or not chunk:
            return None
        self._output = (self._output + chunk)[-MAX_TEXT_OUTPUT:]
        return Shown(content=text_block(f"```\n{self._output}\n```"))

    def ended(self, result: Result) -> Shown:
        return Shown(content=result_content(result))


class MetaView:
    """The view of a tool the factory gave none for: its ``ToolMeta`` kind and title, text content."""

    def __init__(self, name: str, meta: ToolMeta) -> None:
        self.name = name
        self._meta = meta

    @property
    def kind(self) -> ToolKind:
        return self._meta.get("kind", "other")

    @property
    def agent(self) -> bool:
        return bool(self._meta.get("agent", False))

    def title(self, tool_input: Mapping[str, Any] | None) -> str | None:
        title = self._meta.get("title")
        if isinstance(title, str):
            return title or None
        if title is None or tool_input is None:
            return None
        try:
            made = title(dict(tool_input))
        except Exception:
            log.exception("the title of tool %s failed", self.name)
            return None
        return str(made) if made else None

    def locations(self, tool_input: Mapping[str, Any]) -> list[ToolCallLocation] | None:
        return None

    def open(self, call_id: str) -> CallView:
        return TextCall()

    def replayed(self, call: ToolCall, result: ToolResult | None) -> Shown:
        return Shown(content=result_content(result) if result is not None else None)


class Presenter:
    """The views of a session's tools: the factory's (``views``) and ``MetaView``s for the others, from
    the tool source's specs (``refresh`` re-reads them: the tools may change between steps)."""

    def __init__(self, source: ToolSource | None = None, views: Mapping[str, ToolView] | None = None) -> None:
        self._source = source
        self._views: dict[str, ToolView] = dict(views or {})
        self._specs: dict[str, MetaView] = {}

    async def refresh(self) -> None:
        if self._source is None:
            return
        try:
            tools = await self._source.tools()
        except Exception:
            log.exception("reading the session's tools failed; tool calls keep their plain names")
            return
        specs = (t.spec() for t in tools)
        self._specs = {s.name: MetaView(s.name, _harness.read_meta(s.meta)) for s in specs}

    def view(self, name: str) -> ToolView:
        view = self._views.get(name) or self._specs.get(name)
        if view is None:
            view = MetaView(name, _harness.ToolMeta())
        return view

    def title(self, name: str, tool_input: Mapping[str, Any] | None = None) -> str:
        return self.view(name).title(tool_input) or name

    def runs_agent(self, name: str) -> bool:
        """Whether the tool ``name`` runs a sub-agent (its ``ToolMeta`` says ``agent``)."""
        spec = self._specs.get(name)
        return spec is not None and spec.agent
