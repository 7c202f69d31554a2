"""On/off settings of a coding session, shown as boolean config options (Zed renders switches):
``web_tools`` (offer the web tools at all) and ``auto_compact`` (compact near the context window)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness import Tool
    from harness.middleware import NextModel
    from harness.model import Delta, Prompt

__all__ = ["AutoCompactSwitch", "Switched", "Toggle", "session_switches"]


class Toggle:
    """An on/off setting of the session and its boolean config option."""

    def __init__(self, config_id: str, name: str, description: str, *, on: bool = True) -> None:
        self.id = config_id
        self.name = name
        self.description = description
        self.on = on

    def option(self) -> dict[str, Any]:
        return {
            "type": "boolean",
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "currentValue": self.on,
        }


def session_switches() -> tuple[Toggle, Toggle]:
    """A coding session's on/off settings, as it starts: the web tools, automatic compaction."""
    return (
        Toggle(
            "web_tools",
            "Web tools",
            "Let the agent fetch web pages (and search, with SearXNG set up); each use still asks",
        ),
        Toggle("auto_compact", "Auto-compact", "Summarise older messages when the context window fills up"),
    )


class Switched:
    """A ``ToolSource`` offering ``tools`` only while ``toggle`` is on (read at every step)."""

    def __init__(self, tools: Sequence[Tool], toggle: Toggle) -> None:
        self._tools = tuple(tools)
        self._toggle = toggle

    async def tools(self) -> Sequence[Tool]:
        return self._tools if self._toggle.on else ()


class AutoCompactSwitch:
    """Model middleware in front of ``Compact``: while ``toggle`` is off the prompt reaches it without a
    context window, so it compacts only when asked (``/compact``)."""

    def __init__(self, toggle: Toggle) -> None:
        self._toggle = toggle

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        if self._toggle.on or prompt.options.context_window is None:
            return next(prompt)
        return next(prompt.replace(options=replace(prompt.options, context_window=None)))
