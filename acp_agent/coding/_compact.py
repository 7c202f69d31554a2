"""Compaction in a coding session: the session's ``harness.compact.Compact``, ``/compact``, the notices the
user sees, and the checkpoints kept in the session's directory (``checkpoints.json``).

``Compact`` sits innermost among the model middleware, so its summary call goes to the model as is (no
mode note, no plan reminder). It compacts on its own near the context window when the window is known
(the model family table); ``/compact`` compacts at once whatever the size. Each compaction is told as an
``agent_message_chunk`` (and a ``usage_update`` with the new estimate when the window is known), and the
kept checkpoints are written, so a loaded session finds its summary instead of making it again.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.to_thread

from harness import Options, Prompt
from harness.compact import Checkpoint, Compact, Compacted

from ..session._setup import CommandOutcome
from ..session._store import write_json_atomic

if TYPE_CHECKING:
    from harness import Model

    from ._gate import SessionLink

__all__ = ["CHECKPOINTS_FILE", "Compaction"]

log = logging.getLogger(__name__)

CHECKPOINTS_FILE: Final = "checkpoints.json"
_SAVE_TIMEOUT_S: Final = 10.0


class Compaction:
    """The session's ``Compact`` (``middleware``), its ``/compact`` handler (``command``) and notices.

    ``model`` returns the session's current model (None before its first turn); ``path`` is where the
    checkpoints are kept (None: not kept)."""

    def __init__(
        self,
        link: SessionLink,
        *,
        context_window: int | None,
        model: Any,
        path: Path | None = None,
    ) -> None:
        self.middleware = Compact(on_compacted=self._compacted)
        self._link = link
        self._window = context_window
        self._model = model
        self._path = path
        self._by_command = False
        self._made: Compacted | None = None

    # --- checkpoints on disk ---------------------------------------------------------------------

    async def load(self) -> None:
        """Keep the checkpoints written by an earlier process (an unreadable file is ignored, logged)."""
        if self._path is None:
            return
        for checkpoint in await anyio.to_thread.run_sync(_read_checkpoints, self._path):
            self.middleware.remember(checkpoint)

    async def _save(self) -> None:
        path = self._path
        if path is None:
            return
        data = [c.to_dict() for c in self.middleware.checkpoints()]
        with anyio.CancelScope(shield=True), anyio.move_on_after(_SAVE_TIMEOUT_S):
            try:
                await anyio.to_thread.run_sync(lambda: write_json_atomic(path, data, indent=None))
            except OSError as exc:
                log.warning("writing %s failed: %s", self._path, exc)

    # --- notices ---------------------------------------------------------------------------------

    async def _compacted(self, info: Compacted) -> None:
        from ..protocol.models import AgentMessageChunk, TextContent, UsageUpdate

        self._made = info
        await self._save()
        if not self._by_command:
            text = notice(info, automatic=not info.requested)
            await self._link.send(AgentMessageChunk(content=TextContent(text=text + "\n\n")))
        if self._window:
            await self._link.send(UsageUpdate(used=info.tokens_after, size=self._window))

    # --- /compact ----------------------------------------------------------------------------------

    async def command(self, args: str) -> CommandOutcome:
        """``/compact``: summarise the conversation now, but for its most recent messages."""
        handle = self._link.handle
        messages = list(handle.messages()) if handle is not None else []
        if not messages:
            return CommandOutcome(reply="Nothing to compact: the conversation is empty.")
        model: Model | None = self._model()
        if model is None:  # a loaded session before its first turn: compact at the next model call
            self.middleware.compact_now()
            return CommandOutcome(reply="The conversation will be compacted at the next prompt.")
        prompt = Prompt(None, messages, (), Options(context_window=self._window))
        self._made = None
        self._by_command = True
        try:
            await self.middleware.compact(prompt, model.stream)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            log.warning("/compact failed: %s", exc, exc_info=True)
            return CommandOutcome(reply=f"Compaction failed: {exc}")
        finally:
            self._by_command = False
        made = self._made
        if made is None:
            return CommandOutcome(
                reply="Nothing to compact: the conversation holds only its most recent messages."
            )
        return CommandOutcome(reply=notice(made, automatic=False))


def notice(info: Compacted, *, automatic: bool) -> str:
    """What the user is told: how much was summarised, the checkpoint, the estimates around it."""
    cp = info.checkpoint
    why = "Near the context window: compacted" if automatic else "Compacted"
    return (
        f"{why} the conversation: {cp.covered} earlier messages summarised (checkpoint {cp.key[:12]}); "
        f"about {info.tokens_before:,} tokens before, {info.tokens_after:,} after."
    )


def _read_checkpoints(path: Path) -> list[Checkpoint]:
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        log.warning("%s is unreadable (%s); compaction starts afresh", path, exc)
        return []
    items: list[Any] = raw if isinstance(raw, list) else []  # pyright: ignore[reportUnknownVariableType]
    out: list[Checkpoint] = []
    for item in items:
        try:
            out.append(Checkpoint.from_dict(item))
        except (KeyError, TypeError, ValueError, AttributeError):
            log.warning("%s: skipping an unreadable checkpoint", path)
    return out
