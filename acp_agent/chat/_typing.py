"""Typing while the agent works. One loop reads every line the chat gets, and a turn runs as a task of
the chat's own, so in a terminal the user types while a turn runs: Enter sends the line as a prompt of its
own, which the agent queues and runs when the running turn ends (each turn's answer shows as it comes);
``/steer <text>`` (or Alt-Enter) slips the text into the running turn instead (``_session/steering``: the
agent reads it after its current step). A permission question takes the next line as its answer.

From a pipe or a file (no editing) a line is read only at the prompt or for a question, as the script
that feeds it expects: one turn at a time."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio

from ..protocol.errors import RpcError
from ._input import STEER
from .render import as_obj, as_objs

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from ..protocol.connection import Connection
    from ._input import Lines
    from .render import Renderer

__all__ = ["BUSY_PROMPT", "IDLE_PROMPT", "ChatState", "Question", "ask_permission", "read_lines", "steer"]

IDLE_PROMPT = "> "
BUSY_PROMPT = "… "
"""The prompt while a turn runs: a line typed there is queued (or steered)."""
_CANCELLED: Final = {"outcome": {"outcome": "cancelled"}}


@dataclass(slots=True)
class Question:
    """A question waiting for the next line (None: cancelled, or the end of input)."""

    prompt: str
    answer: str | None = None
    answered: anyio.Event = field(default_factory=anyio.Event)

    def resolve(self, answer: str | None) -> None:
        self.answer = answer
        self.answered.set()

    async def next_answer(self) -> str | None:
        """The next line typed for this question (it stays asked until it is resolved)."""
        await self.answered.wait()
        self.answered = anyio.Event()
        return self.answer


class ChatState(Protocol):
    """What typing uses of the chat (``_app.ChatApp``, which imports this module)."""

    reader: Lines
    renderer: Renderer
    conn: Connection | None
    session_id: str | None
    turns: int
    cancelling: bool

    @property
    def busy(self) -> bool: ...

    question: Question | None
    one_question: anyio.Lock
    input_ended: bool
    changed: anyio.Event

    async def read_line(self, prompt: str, *, remember: bool = True) -> str | None: ...

    def poke(self) -> None: ...

    def spawn(self, fn: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None: ...

    def start_turn(self, text: str) -> None: ...

    def is_agent_command(self, text: str) -> bool: ...

    async def command(self, text: str) -> bool: ...


async def read_lines(app: ChatState) -> bool:
    """Read and act on lines until the user leaves: True at the end of input (the turns still end),
    False to leave at once (``/quit``)."""
    while True:
        while not app.reader.edits and app.busy and app.question is None:
            app.changed = anyio.Event()  # no editing: a line only at the prompt, or for a question
            await app.changed.wait()
        question = app.question
        prompt = question.prompt if question else BUSY_PROMPT if app.busy else IDLE_PROMPT
        line = await app.read_line(prompt, remember=question is None)
        if app.question is not None:  # asked before the line was typed, or while it was
            app.question.resolve(line)
            if line is None:
                return True
            continue
        if line is None:
            return True
        text = line.strip()
        if not text:
            continue
        if app.busy:
            if not _while_busy(app, text):
                return False
        elif _steered(text) is not None:  # nothing runs to steer into: it is a prompt
            _prompt_or_usage(app, _steered(text) or "")
        elif text.startswith("/") and not await app.command(text):
            return False
        elif not text.startswith("/") or app.is_agent_command(text):
            app.start_turn(text)


def _steered(text: str) -> str | None:
    """The text of a ``/steer`` line (None: not one)."""
    name, _, rest = text.partition(" ")
    return rest.strip() if name == STEER.strip() else None


def _prompt_or_usage(app: ChatState, text: str) -> None:
    if text:
        app.start_turn(text)
    else:
        app.renderer.notice("usage: /steer TEXT (or Alt-Enter after the text) while a turn runs")


def _while_busy(app: ChatState, text: str) -> bool:
    """A line typed while a turn runs; False: leave."""
    if (steered := _steered(text)) is not None:
        app.spawn(steer, app, steered)  # read on meanwhile: the agent may answer at its step's end
    elif text.split()[0] in ("/quit", "/exit"):
        return False
    elif text.startswith("/") and not app.is_agent_command(text):
        app.renderer.notice("(that command waits for the turn to end: type it again then)")
    else:
        app.renderer.notice("(queued: it runs when the current turn ends)")
        app.start_turn(text)
    return True


async def steer(app: ChatState, text: str) -> None:
    """``_session/steering`` of ``text`` into the running turn (a prompt of its own when none runs by then)."""
    if not text:
        _prompt_or_usage(app, text)
        return
    assert app.conn is not None
    params = {
        "sessionId": app.session_id,
        "prompt": [{"type": "text", "text": text}],
        # Ended meanwhile: the chat sends it as a prompt itself, so the turn is one it waits for.
        "_meta": {"steering": {"idleBehavior": "promptRequired"}},
    }
    try:
        answer = as_obj(await app.conn.request("_session/steering", params))
    except RpcError as exc:
        app.renderer.error(f"error: {exc.message}")
        return
    match answer.get("outcome"):
        case "injected":
            app.renderer.notice("(sent: the agent reads it after its current step)")
        case "startedNewTurn":  # an agent that ignored promptRequired: its markers show the turn
            app.renderer.notice("(the turn had ended: the agent started one for it)")
        case _:  # promptRequired: no turn was running any more
            app.renderer.notice("(the turn had ended: sent as a prompt)")
            app.start_turn(text)


async def ask_permission(app: ChatState, params: dict[str, Any]) -> dict[str, Any]:
    """A permission question: shown, answered by the next line (a number or the option's name)."""
    options = as_objs(params.get("options"))
    if not options or app.cancelling:
        return _CANCELLED
    call: dict[str, Any] = params.get("toolCall") if isinstance(params.get("toolCall"), dict) else {}  # pyright: ignore[reportAssignmentType]
    style = app.renderer.style
    known = app.renderer.tools.get(str(call.get("toolCallId")))
    title = call.get("title") or (known.title if known else "a tool call")
    app.renderer.line(style.yellow(f"? Allow {title}?"))
    content = call.get("content")
    if isinstance(content, list):
        app.renderer.tool_content(content, str(call.get("toolCallId") or "") or None)  # pyright: ignore[reportUnknownArgumentType]
    for i, option in enumerate(options, 1):
        app.renderer.line(f"  {i}) {option.get('name') or option.get('optionId')}")
    async with app.one_question:  # the next line answers one question at a time
        if app.input_ended or app.cancelling:
            return _CANCELLED
        question = app.question = Question(f"choose 1-{len(options)}: ")
        app.reader.retitle(question.prompt, remember=False)  # the line being typed becomes the answer
        app.poke()
        try:
            while (answer := await question.next_answer()) is not None:
                chosen = _pick(answer.strip(), options)
                if chosen is not None:
                    kind = next((str(o.get("kind")) for o in options if o.get("optionId") == chosen), "")
                    if kind.startswith("reject"):  # marked here, as editors do: no status comes
                        app.renderer.mark(str(call.get("toolCallId")), "rejected")
                    return {"outcome": {"outcome": "selected", "optionId": chosen}}
                app.renderer.notice(f"type a number from 1 to {len(options)}")
        finally:
            app.question = None
            app.reader.retitle(BUSY_PROMPT if app.busy else IDLE_PROMPT)
    return _CANCELLED


def _pick(answer: str, options: list[dict[str, Any]]) -> str | None:
    if answer.isdigit() and 1 <= int(answer) <= len(options):
        return str(options[int(answer) - 1].get("optionId"))
    lowered = answer.lower()
    for option in options:
        if lowered and lowered in (str(option.get("optionId")).lower(), str(option.get("name", "")).lower()):
            return str(option.get("optionId"))
    return None
