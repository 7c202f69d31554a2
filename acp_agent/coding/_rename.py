"""``/rename <title>``: the user names the session (as ``session/set_title`` does); the agent never
replaces a title the user set. And the switch for model-written titles (``titles``: ``model``, the default, or
``prompt``; ``ACP_AGENT_TITLES``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..session.plugin import MAX_TITLE, CommandOutcome

if TYPE_CHECKING:
    from harness import Model

    from .permissions._gate import SessionLink

__all__ = ["RENAME_DESCRIPTION", "RenameCommand", "title_model_of"]

RENAME_DESCRIPTION = "Rename this session"


@dataclass(slots=True)
class RenameCommand:
    link: SessionLink

    async def __call__(self, args: str) -> CommandOutcome:
        title = " ".join(args.split())
        if not title:
            return CommandOutcome(reply="Give the new title: /rename <title>.")
        if len(title) > MAX_TITLE:
            return CommandOutcome(reply=f"That title is longer than {MAX_TITLE} characters; nothing changed.")
        handle = self.link.handle
        if handle is None or not await handle.set_title(title):
            return CommandOutcome(reply="This session cannot be renamed now.")
        return CommandOutcome(reply=f"Renamed this session to \u201c{title}\u201d.")


def title_model_of(
    side: Callable[[], Awaitable[Model | None]], titles: str
) -> Callable[[], Awaitable[Model | None]] | None:
    """The session's title model when the model writes titles (``titles = "model"``, the default), else
    None (``"prompt"``): the first prompt, cut short, stays the title. ``side``: the model for side work
    (the small model where one is configured, else the session's; metered like every request)."""
    return side if titles == "model" else None
