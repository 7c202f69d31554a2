"""One ACP session: its harness ``Run``, its prompt turns, cancellation and persistence.

A prompt turn drives ``Run.turn`` and sends each event's updates before asking for the next event, so
updates are written in order and every update of a turn precedes the prompt's answer. What a turn writes,
and when (a step's messages as it completes, its last writes before the answer), is ``_turn_writes``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ..protocol.errors import INTERNAL_ERROR, RpcError, error_from_exception
from ..protocol.models import AgentMessageChunk, SessionInfoUpdate, SessionNotification, TextContent, dump
from . import _harness
from ._children import SubagentSide
from ._content import prompt_message, title_from_prompt
from ._failures import failure_message
from ._frontier import ClientFrontier
from ._inbox import SteeringInbox
from ._outcome import kind_of, replace_text, stop_reason, unfinished
from ._present import Presenter
from ._queue import TurnQueue
from ._replay import ShownLog, replay_session
from ._setup import PromptStopped
from ._store import SessionMeta, SessionStore
from ._threads import SubagentThreads
from ._titles import title_after_exchange
from ._turn_state import turn_state
from ._turn_writes import PERSIST_TIMEOUT, TurnWrites
from ._updates import EventMapper, complete_update

if TYPE_CHECKING:
    from harness import Message, Model, Run

    from ..protocol.connection import Connection, RequestContext
    from ..protocol.models import ContentBlock, Notice, SessionUpdate
    from ._setup import SessionEnvironment, SessionSetup
    from ._titles import TitleSource

__all__ = ["Session", "failure_message"]

log = logging.getLogger(__name__)

R = TypeVar("R")


class Session(SubagentSide):
    """A live session of this process. Created by ``session/new``, ``load`` or ``resume``."""

    def __init__(
        self,
        meta: SessionMeta,
        env: SessionEnvironment,
        setup: SessionSetup,
        store: SessionStore,
        history: Sequence[Message],
        get_model: Callable[[], Awaitable[Model]],
        connection: Connection,
    ) -> None:
        self.meta = meta
        self.env = env
        self.setup = setup
        self._store = store
        self._history: list[Message] = list(history)
        self._get_model = get_model
        self._conn = connection
        self._run: Run | None = None
        self.presenter = Presenter(setup.tools, setup.views)
        self.opened = anyio.Event()  # set once the response that opened it was written: updates wait
        self._turns = TurnQueue()
        self.titling: anyio.CancelScope | None = None  # the model-written title asked for (``_titles``)
        self._tool_names: dict[str, str] = {}
        """The tool of each call shown (``EventMapper`` names them; a tool middleware's updates don't)."""
        self._steering = SteeringInbox()  # (none is dropped: see ``_turn``)
        self._cancel_requested = False
        self._cancel_sequence = 0
        self._preparing: anyio.CancelScope | None = None
        self._closed = False
        self._released = False  # its hold on the folder (``_holds``), let go at the end of ``close``
        self._mapper: EventMapper | None = None
        self._shown = ShownLog()
        self.frontier = frontier = ClientFrontier.of(env)  # the unstable updates the client takes
        self._threads = SubagentThreads(meta.id, announce=frontier.subagents) if frontier.threads else None
        self._writes = TurnWrites(self, store, env.spawn, self._shown, self._threads, len(self._history))
        if setup.controls is not None:
            setup.controls.bind(self)

    @property
    def id(self) -> str:
        return self.meta.id

    def turn_usage(self) -> dict[str, int] | None:
        """The last turn's token usage (ACP's unstable ``Usage``), where the factory counts it."""
        return self.setup.usage.turn_usage() if self.setup.usage is not None else None

    @property
    def busy(self) -> bool:
        return self._turns.busy

    def messages(self) -> list[Message]:
        return self._run.messages() if self._run is not None else list(self._history)

    # --- sending --------------------------------------------------------------------------------

    async def send_update(self, update: SessionUpdate) -> None:
        """One ``session/update``, never before the opening response (Zed drops a session's it does not know)."""
        if not self.opened.is_set():
            await self.opened.wait()
        if self._threads is not None:
            self._threads.mark(update)  # an agent call's updates from the tools' middleware too
        complete_update(update, self._tool_names)
        await self.send_update_now(update)

    async def send_update_now(self, update: SessionUpdate | dict[str, Any]) -> None:
        """Send one ``session/update`` (a model, or the wire dict of one) at once, without waiting for the
        opening response: ``send_update`` once the session is open, and ``session/load``'s replay, which
        the spec puts before that response."""
        if isinstance(update, dict):
            await self._conn.notify("session/update", {"sessionId": self.id, "update": update})
            return
        if update.session_update == "plan":
            entries = [dump(e) for e in update.entries]
            self._shown.plan(entries)
            instead = self.frontier.plan(entries)
            if instead is not None:
                await self._conn.notify("session/update", {"sessionId": self.id, "update": instead})
                return
        elif update.session_update == "compaction_update" and update.status != "in_progress":
            self._shown.compaction(len(self.messages()), dump(update))  # replayed where it happened
        await self._conn.notify("session/update", SessionNotification(session_id=self.id, update=update))

    async def send_notice(self, notice: Notice, fallback: str) -> None:
        """Advisory news: a ``notice`` for a client that takes them, else ``fallback`` (agent's message)."""
        await self.send_update(self.frontier.notice(notice, fallback))

    async def replay(self) -> None:
        """Send the whole conversation as the client saw it (``session/load``, before its response)."""
        await replay_session(self, await self._store.load_shown(self.id))

    # --- prompt turns ---------------------------------------------------------------------------

    async def prompt(self, blocks: Sequence[ContentBlock], ctx: RequestContext) -> str:
        """Run one turn after the turns before it (``_queue``): its stop reason; ``RpcError`` if it failed."""
        message = await self.message_of(blocks)
        fresh = not self._turns.busy
        if not await self._turns.enter(ctx.on_cancel_request):
            return "cancelled"  # it left the queue without running
        # A cancel read before a prompt that had not started yet ends it (a queued prompt was handed the
        # session by the turn before it: a cancel meanwhile was that turn's).
        cancelled = fresh and self._cancel_sequence > ctx.sequence
        ctx.on_cancel_request(self.cancel)
        try:
            stop = await self._turn(message, cancelled, held=self.env.spawn is not None)
            if self._steering.held is not None:  # a follow-up's running marker precedes this answer
                await self.send_update(turn_state("running"))
            return stop
        finally:
            ctx.on_cancel_request(None)

    async def message_of(self, blocks: Sequence[ContentBlock]) -> Message:
        """The user message of a prompt (or a steering message), with its ``messageId``."""
        if self._closed:
            raise RpcError.not_found(f"session not found: {self.id}", uri=self.id)
        return await prompt_message(blocks, self.env.roots)

    async def _turn(self, message: Message, cancelled: bool, held: bool = False) -> str:
        """The turn of ``message``, the session being this turn's (``_turns.enter``); ``held``: see ``answered``."""
        try:
            if self._closed:
                return "cancelled"
            self._cancel_requested = cancelled
            if not self.opened.is_set():
                self.opened.set()  # the client saw the opening response: it is prompting
            if self.setup.usage is not None:
                await self.setup.usage.turn_started()
            return await self._prompt(message)
        finally:
            follow = self._steering.next_turn(self._run, closed=self._closed)  # (before queued prompts)
            if follow is not None and held:
                self._steering.held = follow  # the session stays this turn's until ``answered``
            elif follow is None or not self._in_background(follow):
                self._turns.turn_ended()

    async def answered(self) -> None:
        """The prompt's answer is out: the follow-up its turn left starts, and its last writes are fsync'd
        in the background (``TurnWrites.after_answer``)."""
        self.start_held()
        await self._writes.after_answer()

    def start_held(self) -> None:  # (closed: the follow-up is dropped, logged)
        follow, self._steering.held = self._steering.held, None
        if follow is not None and (self._closed or not self._in_background(follow, announced=True)):
            if self._closed:
                log.warning("session %s: a steering message not delivered: the session closed", self.id)
            self._turns.turn_ended()

    def inject(self, message: Message) -> bool:
        """Steer ``message`` into the running turn, or the next if it ends first (``_inbox``); False: idle."""
        if not self._turns.busy:
            return False
        self._steering.add(message, self._run)
        return True

    async def start_turn(self, message: Message) -> None:
        """Start ``message``'s turn in the background (no answer ends it); a prompt sent meanwhile waits."""
        if self.env.spawn is None:
            raise RpcError(INTERNAL_ERROR, "this session cannot start a turn in the background")
        await self._turns.enter()
        self._in_background(message)

    def _in_background(self, message: Message, announced: bool = False) -> bool:
        """The turn of ``message`` in the background, the session its from now (False: no task group)."""
        if (spawn := self.env.spawn) is None:
            return False
        self._cancel_requested = False  # the turn before's: one sent from now on is this one's

        async def background() -> None:
            try:  # (cancelled: by a cancel sent since it was handed the session; no marker then)
                if not announced:  # (``prompt`` sent a follow-up's) no answer ends it: markers do
                    await self.send_update(turn_state("running"))
                stop = await self._turn(message, self._cancel_requested)
                log.info("session %s: the started turn ended (%s)", self.id, stop)
                await self.send_update(turn_state("idle", stop))
            except Exception as exc:  # a prompt's failure is its answer's error; this turn's, its marker's
                error = error_from_exception(exc)  # (not the process's end: a set-up's error, say)
                log.warning("session %s: the started turn failed: %s", self.id, error.message)
                await self.send_update(turn_state("idle", "error", error.message))
            finally:
                with anyio.CancelScope(shield=True):
                    await self._writes.after_answer()  # (as a prompt's answer: grouped)

        spawn(background)
        return True

    async def _prompt(self, message: Message) -> str:
        # One turn's phases in order (command, hooks, title, run, mapping, persistence): kept in one
        # function so the cancellation points between them read top to bottom.
        if self.setup.ready is not None and not await self._ready(self.setup.ready):
            return "cancelled"
        controls = self.setup.controls
        if controls is not None:
            text = message.text.strip()
            if text.startswith("/"):
                outcome = await controls.command(text)
                if outcome is not None and outcome.reply is not None:
                    if outcome.reply:  # empty: the command showed its outcome otherwise (a compaction)
                        await self.send_update(AgentMessageChunk(content=TextContent(text=outcome.reply)))
                        self._shown.command(len(self.messages()), text, outcome.reply)  # replayed by a load
                    shown = self._shown.take()  # (and a compaction's record)
                    await self._writes.outside_turn(lambda: self._store.append_shown(self.id, shown))
                    return "end_turn"
                if outcome is not None and outcome.prompt is not None:
                    message = replace_text(message, outcome.prompt)
            await controls.turn_starting()
        if self.setup.before_prompt is not None:
            prepared = await self._hooked(self.setup.before_prompt, message)
            if isinstance(prepared, str):
                return prepared
            message = prepared
        run = await self._ensure_run()
        if self._cancel_requested:
            return "cancelled"
        if self.meta.title is None:
            title = title_from_prompt(message)
            if title is not None:
                self.meta = self.meta.touched(title=title, title_source="prompt")
                await self.send_update(SessionInfoUpdate(title=title, updated_at=self.meta.updated_at))
        options = self.setup.options
        display = self.setup.display
        mapper = EventMapper(
            self.presenter,
            context_window=options.context_window if options else None,
            marks_running=display is not None and display.marks_running,
            threads=self._threads,
            client_marks_rejected=self.frontier.marks_rejected,
        )
        self._mapper = mapper
        mapper.cancelling = self._cancel_requested
        misuse: BaseException | None = None
        try:
            misuse = await self._stream(run, message, mapper)
        finally:
            for update in mapper.close_open_calls():
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await self.send_update(update)
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await self._send_threads()
            self._shown.calls_ended(mapper.take_records())
            self._mapper = None
            self._tool_names.clear()
            outcome = unfinished(run, misuse)
            if outcome is not None:  # a replay shows the partial reply and a marker
                self._shown.turn_ended(len(run.messages()), *outcome)
            if outcome is not None and outcome[0] == "failed" and misuse is None:  # (misuse: logged)
                # The log's filter redacts the process's secrets; the providers scrub their key too.
                kind = kind_of(run.ended(), "model_error")
                log.warning("session %s: turn failed (%s): %s", self.id, kind, outcome[1])
            await self._writes.last(run)
        stop = stop_reason(run.ended(), misuse)
        if stop == "end_turn":
            title_after_exchange(self, message, run)
        return stop

    async def set_title(self, title: str, *, source: TitleSource = "user") -> bool:
        """Set the title (saved at once) and tell the client; False when ``source`` is the agent's and the
        user set the title (a user's title is never replaced)."""
        if source != "user" and self.meta.title_source == "user":
            return False
        self.meta = self.meta.touched(title=title, title_source=source)
        self._writes.saved_title = title
        meta = self.meta
        await self._writes.outside_turn(lambda: self._store.save_meta(meta))
        await self.send_update(SessionInfoUpdate(title=title, updated_at=self.meta.updated_at))
        return True

    async def _stream(self, run: Run, message: Message, mapper: EventMapper) -> BaseException | None:
        """The turn's events as updates, each step persisted as it completes; the misuse that failed it."""
        shown = self._shown
        unsaved = shown.text
        opened: anyio.Event | None = self.opened  # None once set: an Event stays set, not asked again
        text_chunk, session_id = self._conn.notify_text_chunk, self.id
        queue_chunk = self._conn.queue_text_chunk  # the hot path: no coroutine while the output has room
        text_delta = _harness.TextDelta
        misuse: _harness.HarnessUsageError | None = None
        try:
            async with run.turn(message) as events:
                async for event in events:
                    if type(event) is text_delta and event.parent is None:
                        if event.text:
                            unsaved.append(event.text)
                            shown.message_id = event.id
                            if opened is not None:
                                if not opened.is_set():
                                    await opened.wait()
                                opened = None
                            if not queue_chunk(session_id, event.text, event.id):
                                await text_chunk(session_id, event.text, event.id)
                        continue
                    if isinstance(event, _harness.TurnStarted) and event.parent is None:
                        if self._cancel_requested:
                            run.cancel()
                        self._steering.into(run)
                    if isinstance(event, _harness.StepStarted) and event.parent is None:
                        await self.presenter.refresh()
                    for update in mapper.map(event):
                        await self.send_update(update)
                    await self._send_threads()
                    self._shown.calls_ended(mapper.take_records())
                    if isinstance(event, _harness.StepStarted | _harness.StepEnded) and event.parent is None:
                        if isinstance(event, _harness.StepEnded):
                            self._shown.step_done()
                        step_started = isinstance(event, _harness.StepStarted)
                        await self._writes.persist(run, final=False, behind=step_started)
        except _harness.HarnessUsageError as exc:  # re-raised by the run after TurnEnded: a bug
            log.error("session %s: the turn failed on a programming error", self.id, exc_info=exc)
            misuse = exc
        return misuse

    async def _hooked(
        self, before: Callable[[Message], Awaitable[Message]], message: Message
    ) -> Message | str:
        """``before_prompt``'s message, or how the turn ends there: ``cancelled`` (a cancel ended it, hooks
        killed) or ``end_turn`` (it raised ``PromptStopped``: no model request, nothing saved)."""
        try:
            prepared = await self._preparing_call(before, message)
        except PromptStopped:
            return "end_turn"
        return "cancelled" if prepared is None else prepared

    async def _ready(self, ready: Callable[[], Awaitable[None]]) -> bool:
        """The set-up its factory left for after the opening answer (``SessionSetup.ready``), first thing
        in every prompt; False when ``cancel`` ended the wait. Its failure is the prompt's error."""

        async def waited() -> bool:
            await ready()
            return True

        return await self._preparing_call(waited) is not None

    async def _preparing_call(self, fn: Callable[..., Awaitable[R]], *args: Any) -> R | None:
        """``fn(*args)`` as a preparation of the turn: ``cancel`` ends it (None then)."""
        with anyio.CancelScope() as scope:
            self._preparing = scope
            try:
                if not self._cancel_requested:
                    return await fn(*args)
            finally:
                self._preparing = None
        return None

    async def _ensure_run(self) -> Run:
        if self._run is not None:
            return self._run

        s = self.setup
        model = await (s.controls.model(self._get_model) if s.controls is not None else self._get_model())
        self._run = _harness.Run(
            model,
            s.tools if s.tools is not None else _harness.Tools(),
            system=s.system,
            options=s.options,
            middleware=s.middleware,
            messages=self._history,
            context=s.context if s.context is not None else self.env,
        )
        return self._run

    async def sync_writes(self) -> None:
        """Save the metadata's ``updatedAt`` and fsync what the turns wrote without it, now, not waiting for
        a grouped sync's delay (``close``; ``_durable``)."""
        await self._writes.sync()

    def cancel(self, sequence: int | None = None) -> None:
        """``session/cancel``: end the running turn as ``cancelled``. When idle, remember where the cancel
        came (``sequence``): a prompt read before it, whose handler had not started, ends cancelled."""
        if not self._turns.busy:
            if sequence is not None:
                self._cancel_sequence = max(self._cancel_sequence, sequence)
            return
        self._cancel_requested = True
        if self._mapper is not None:
            self._mapper.cancelling = True
        if self._preparing is not None:
            self._preparing.cancel()
        if self._run is not None:
            self._run.cancel()

    async def wait_idle(self) -> None:
        await self._turns.wait_idle()

    async def close(self) -> None:
        """Cancel the running turn, wait for its answer, free the factory's resources, let go of the
        session's folder (``_holds``)."""
        self._closed = True
        self.start_held()  # a follow-up held for an answer that may never be written
        self._turns.leave_all()
        self.cancel()
        if self.titling is not None:
            self.titling.cancel()
        try:
            with anyio.move_on_after(10):
                await self.wait_idle()
        finally:
            # Cancelled while waiting (shutdown) or not: the last writes, then MCP servers, sandbox folder.
            with anyio.CancelScope(shield=True), anyio.move_on_after(PERSIST_TIMEOUT):
                await self.sync_writes()  # (its lock too: a sync under way is bounded alike)
            if self.setup.aclose is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    try:
                        await self.setup.aclose()
                    except Exception:
                        log.exception("session %s: closing its resources failed", self.id)
            if not self._released:  # (once: another live session of this id may hold the folder too)
                self._released = True
                self._store.release(self.id)
