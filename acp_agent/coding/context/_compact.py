"""Compaction in a coding session: the session's ``harness.compact.Compact``, ``/compact``, the notices the
user sees, and the checkpoints kept in the session's directory (``checkpoints.json``).

``Compact`` sits innermost among the model middleware, so its summary call goes to the model as is (no
mode note, no plan reminder). It compacts on its own near the context window when the window is known
(the model family table); ``/compact`` compacts at once whatever the size. Each compaction is told as an
``agent_message_chunk`` (and a ``usage_update`` with the new estimate when the window is known), and the
kept checkpoints are written, so a loaded session finds its summary instead of making it again.

A client that advertises ``session.compaction`` (UNSTABLE) is told instead with one ``compaction_update``
entity per compaction: ``in_progress`` when its first summary request goes to the model (``_Watched``
sees it pass), the summary as a ``compaction_summary_chunk``, then ``completed`` (with the summary), or
``failed`` (with the error; an empty summary is a failure too) or ``cancelled``. The session keeps the
terminal update, so ``session/load`` replays it where it happened.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

import anyio
import anyio.to_thread

from harness import Options, Prompt
from harness.compact import SUMMARY_SYSTEM, Checkpoint, Compact, Compacted
from harness.middleware import Relay

from ...protocol.models import (
    AgentMessageChunk,
    CompactionSummaryChunk,
    CompactionUpdate,
    TextContent,
    UsageUpdate,
)
from ...session.plugin import CommandOutcome, write_json_atomic

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from harness import Model
    from harness.middleware import NextModel
    from harness.model import Delta

    from ...protocol.models import CompactionStatus
    from ..permissions._gate import SessionLink

__all__ = ["CHECKPOINTS_FILE", "Compaction", "read_checkpoints"]

log = logging.getLogger(__name__)

T = TypeVar("T")

CHECKPOINTS_FILE: Final = "checkpoints.json"
_SAVE_TIMEOUT_S: Final = 10.0


class Compaction:
    """The session's ``Compact`` (``middleware``), its ``/compact`` handler (``command``) and notices.

    ``model`` returns the session's current model (None before its first turn); ``path`` is where the
    checkpoints are kept (None: not kept); ``updates``: the client takes ``compaction_update``s."""

    def __init__(
        self,
        link: SessionLink,
        *,
        context_window: int | Callable[[], int | None] | None,
        model: Any,
        path: Path | None = None,
        updates: bool = False,
        summariser: Callable[[], Awaitable[Model | None]] | None = None,
    ) -> None:
        self.compact = Compact(on_compacted=self._compacted)
        self.middleware: Compact | _Watched = _Watched(self) if updates else self.compact
        """The session's model middleware: ``compact``, watched (with updates) for each compaction's start."""
        self._updates = updates
        self._open: str | None = None  # the id of the compaction told in progress
        self._link = link
        self._context_window = context_window
        self._model = model
        self._summariser = summariser
        """``/compact``'s model: the side model, counted in the session's usage (None: ``model``)."""
        self._path = path
        self._by_command = False
        self._made: Compacted | None = None

    @property
    def _window(self) -> int | None:
        """The window now (a callable follows the session's model as it switches)."""
        window = self._context_window
        return window() if callable(window) else window

    # --- checkpoints on disk ---------------------------------------------------------------------

    async def load(self) -> None:
        """Keep the checkpoints written by an earlier process (an unreadable file is ignored, logged)."""
        if self._path is None:
            return
        self.keep(await anyio.to_thread.run_sync(read_checkpoints, self._path))

    def keep(self, checkpoints: Sequence[Checkpoint]) -> None:
        """Keep checkpoints an earlier process wrote (``read_checkpoints``, in the set-up's thread)."""
        for checkpoint in checkpoints:
            self.compact.remember(checkpoint)

    def covered(self, key: str) -> int | None:
        """How many messages the kept checkpoint ``key`` summarises (None: not one of ours)."""
        return next((c.covered for c in self.compact.checkpoints() if c.key == key), None)

    async def _save(self) -> None:
        path = self._path
        if path is None:
            return
        data = [c.to_dict() for c in self.compact.checkpoints()]
        with anyio.CancelScope(shield=True), anyio.move_on_after(_SAVE_TIMEOUT_S):
            try:
                await anyio.to_thread.run_sync(lambda: write_json_atomic(path, data, indent=None))
            except OSError as exc:
                log.warning("writing %s failed: %s", self._path, exc)

    # --- notices ---------------------------------------------------------------------------------

    async def _compacted(self, info: Compacted) -> None:
        self._made = info
        await self._save()
        if self._open is not None:
            await self._completed(self._open, info.checkpoint.summary)
        elif not self._by_command:
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
        model: Model | None = await self._summariser() if self._summariser is not None else self._model()
        if model is None:  # a loaded session before its first turn: compact at the next model call
            self.compact.compact_now()
            return CommandOutcome(reply="The conversation will be compacted at the next prompt.")
        prompt = Prompt(None, messages, (), Options(context_window=self._window))
        self._made = None
        self._by_command = True
        try:
            await self.watched(lambda: self.compact.compact(prompt, self.watch(model.stream)))
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            log.warning("/compact failed: %s", exc, exc_info=True)
            return CommandOutcome(reply="" if self._updates else f"Compaction failed: {exc}")
        finally:
            self._by_command = False
        made = self._made
        if made is None:
            return CommandOutcome(
                reply="Nothing to compact: the conversation holds only its most recent messages."
            )
        return CommandOutcome(reply="" if self._updates else notice(made, automatic=False))

    # --- compaction_update (session.compaction) ----------------------------------------------------

    def watch(self, next: NextModel) -> NextModel:
        """``next`` that tells a compaction in progress when a summary request passes (with updates)."""
        if not self._updates:
            return next

        def watched(prompt: Prompt) -> AsyncIterator[Delta]:
            return self._summary_stream(prompt, next) if prompt.system == SUMMARY_SYSTEM else next(prompt)

        return watched

    async def _summary_stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        if self._open is None:
            self._open = f"compaction_{uuid.uuid4().hex[:12]}"
            await self._link.send(CompactionUpdate(compaction_id=self._open, status="in_progress"))
        inner = next(prompt)
        try:
            async for delta in inner:
                yield delta
        finally:
            await _close(inner)

    async def watched(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run ``work`` (a compaction, or a model call that may compact first); a compaction it told in
        progress and that did not complete ends ``failed`` or ``cancelled``."""
        try:
            result = await work()
        except anyio.get_cancelled_exc_class():
            await self._end("cancelled", None)
            raise
        except Exception as exc:
            await self._end("failed", str(exc) or type(exc).__name__)
            raise
        await self._end("failed", "the model gave an empty summary")
        return result

    async def _completed(self, compaction_id: str, summary: str) -> None:
        self._open = None
        text = TextContent(text=summary)
        await self._link.send(CompactionSummaryChunk(compaction_id=compaction_id, content=text))
        await self._link.send(
            CompactionUpdate(compaction_id=compaction_id, status="completed", summary=[text])
        )

    async def _end(self, status: CompactionStatus, error: str | None) -> None:
        compaction_id, self._open = self._open, None
        if compaction_id is None:
            return
        update = CompactionUpdate(compaction_id=compaction_id, status=status, error=error)
        with anyio.CancelScope(shield=True), anyio.move_on_after(_SAVE_TIMEOUT_S):
            await self._link.send(update)


class _Watched:
    """``Compaction.compact`` as the session's model middleware, watched (see the module docstring)."""

    def __init__(self, compaction: Compaction) -> None:
        self._compaction = compaction

    def stream(self, prompt: Prompt, next: NextModel) -> AsyncIterator[Delta]:
        return _WatchedCall(self._compaction, prompt, next)


class _WatchedCall(Relay):
    """One model call through the compaction: watched until its first delta (a compaction happens before
    it), then the deltas handed on with no frame each."""

    __slots__ = ("_compaction", "_next_model", "_prompt")

    def __init__(self, compaction: Compaction, prompt: Prompt, next: NextModel) -> None:
        super().__init__()
        self._compaction = compaction
        self._prompt = prompt
        self._next_model = next

    async def start(self) -> Delta:
        compaction = self._compaction
        stream = await self.hand(compaction.compact.stream(self._prompt, compaction.watch(self._next_model)))
        first = await compaction.watched(lambda: anext(stream, None))
        if first is None:
            raise StopAsyncIteration
        return first


async def _close(stream: AsyncIterator[Delta]) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()


def notice(info: Compacted, *, automatic: bool) -> str:
    """What the user is told: how much was summarised, the checkpoint, the estimates around it."""
    cp = info.checkpoint
    why = "Near the context window: compacted" if automatic else "Compacted"
    return (
        f"{why} the conversation: {cp.covered} earlier messages summarised (checkpoint {cp.key[:12]}); "
        f"about {info.tokens_before:,} tokens before, {info.tokens_after:,} after."
    )


def read_checkpoints(path: Path) -> list[Checkpoint]:
    """The checkpoints in ``path`` (none when absent or unreadable, logged). Blocking."""
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
