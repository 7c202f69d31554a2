"""``acp-harness-agent chat``'s conversation with the agent (as an editor has one): start a session, run
prompts and slash commands, stream replies, Ctrl-C to cancel a turn. The agent process it talks to is
``_process``'s."""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup, TaskStatus

from .. import __version__
from ..protocol.connection import Connection
from ..protocol.errors import ConnectionClosedError, RpcError
from ._input import EditedLines, Lines
from ._typing import BUSY_PROMPT, IDLE_PROMPT, Question, ask_permission, read_lines
from .render import Renderer, as_obj, as_objs

__all__ = ["ChatApp", "ChatOptions"]

log = logging.getLogger(__name__)

PROTOCOL_VERSION: Final = 1

HELP: Final = """\
/mode [NAME]     show or switch the session mode
/model [NAME]    show or switch the model
/sessions        list saved sessions
/load ID         continue a saved session
/fork            continue in a copy of this session (this one stays as it is)
/new             start a new session
/steer TEXT      while a turn runs: slip TEXT into it (also Alt-Enter after the text)
/quit            leave (also Ctrl-D on an empty line, or Ctrl-C on one when idle)
Other /commands are sent to the agent. A line sent while a turn runs is queued: it runs next.
Ctrl-C during a reply cancels it. Otherwise it clears the line (on an empty one: leaves)."""


@dataclass(frozen=True, slots=True)
class ChatOptions:
    cwd: Path
    agent_args: tuple[str, ...] = ()
    env: dict[str, str] | None = None


def _rpc_message(exc: RpcError) -> str:
    if isinstance(exc, ConnectionClosedError):
        return "the agent closed the connection"
    return exc.message


class ChatApp:
    """One terminal conversation with one agent process."""

    def __init__(
        self, options: ChatOptions, reader: Lines, renderer: Renderer, prompt: Callable[[str], None]
    ) -> None:
        self.options = options
        self.reader = reader
        self.renderer = renderer
        self._show_prompt = prompt
        self.conn: Connection | None = None
        self.session_id: str | None = None
        self.modes: list[tuple[str, str]] = []
        self.can_load = False
        self.can_fork = False
        self.turns = 0
        """Prompts sent and not answered yet (the running turn and those queued behind it)."""
        self.agent_turn = False
        """A turn no prompt answer ends runs (a steering message's; ``turn_marker``)."""
        self.cancelling = False
        self.question: Question | None = None
        """A permission question waiting for the next line."""
        self.one_question = anyio.Lock()
        self.input_ended = False
        self.changed = anyio.Event()
        self._turn_tasks: TaskGroup | None = None
        self._repl_scope: anyio.CancelScope | None = None
        if isinstance(reader, EditedLines):
            reader.on_ctrl_c = self._ctrl_c_key

    async def read_line(self, prompt: str, *, remember: bool = True) -> str | None:
        """A line typed after ``prompt``; None at the end of input. Ctrl-C typed in it is handled as the
        Ctrl-C signal is (the line is then empty)."""
        if not self.reader.edits:
            self._show_prompt(prompt)
        try:
            line = await self.reader.readline(prompt, remember=remember)
        except KeyboardInterrupt:  # typed on an empty line, the chat not taking it (raw mode: no SIGINT)
            await self.interrupt()
            await anyio.lowlevel.checkpoint()  # leaving: the cancellation lands here
            return ""
        if line is None:
            self.input_ended = True
        return line

    async def ask_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        """A ``session/request_permission`` from the agent: answered by the user's next line (``_typing``)."""
        return await ask_permission(self, params)

    @property
    def busy(self) -> bool:
        """A turn runs: a prompt's (or one is queued), or one the agent started."""
        return bool(self.turns) or self.agent_turn

    def poke(self) -> None:
        """Turns or the question changed (``_typing.read_lines`` may be waiting for it)."""
        self.changed.set()

    # --- Ctrl-C -------------------------------------------------------------------------------------

    async def watch_interrupts(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            task_status.started()
            async for _ in signals:
                await self.interrupt()

    def _ctrl_c_key(self) -> bool:
        """Ctrl-C typed at the edited line: it cancels a running turn (True), else the line has it."""
        if self.busy and not self.cancelling and self._turn_tasks is not None:
            self._turn_tasks.start_soon(self.interrupt)
            return True
        return False

    async def interrupt(self) -> None:
        """First Ctrl-C in a turn cancels it; a second one (or one when idle) leaves."""
        if self.busy and not self.cancelling and self.conn is not None and self.session_id:
            self.cancelling = True
            self.renderer.notice("^C cancelling… (Ctrl-C again to quit)")
            if self.question is not None:
                self.question.resolve(None)
            await self.conn.notify("session/cancel", {"sessionId": self.session_id})
            return
        self.renderer.notice("^C bye")
        if self._repl_scope is not None:
            self._repl_scope.cancel()

    # --- the conversation ---------------------------------------------------------------------------

    async def start(self) -> bool:
        """``initialize`` and ``session/new``; False (with the reason shown) when the agent cannot start."""
        assert self.conn is not None
        try:
            with anyio.fail_after(60):
                init = await self.conn.request(
                    "initialize",
                    {
                        "protocolVersion": PROTOCOL_VERSION,
                        "clientCapabilities": {
                            "fs": {"readTextFile": True, "writeTextFile": True},
                            "terminal": False,
                        },
                        "clientInfo": {
                            "name": "acp-agent-chat",
                            "title": "acp-harness-agent chat",
                            "version": __version__,
                        },
                    },
                )
        except TimeoutError:
            self.renderer.error(
                "the agent did not answer initialize within 60 s; run `acp-harness-agent doctor`."
            )
            return False
        except RpcError as exc:
            self.renderer.error(
                f"the agent could not start: {_rpc_message(exc)}; run `acp-harness-agent doctor`."
            )
            return False
        answer = as_obj(init)
        agent = as_obj(answer.get("agentCapabilities"))
        self.can_load = bool(agent.get("loadSession"))
        self.can_fork = as_obj(agent.get("sessionCapabilities")).get("fork") is not None
        for method in as_objs(answer.get("authMethods")):
            if method.get("description"):
                self.renderer.error(str(method["description"]))
        return await self.new_session()

    async def new_session(self) -> bool:
        assert self.conn is not None
        try:
            result = await self.conn.request("session/new", {"cwd": str(self.options.cwd), "mcpServers": []})
        except RpcError as exc:
            self.renderer.error(f"cannot start a session: {_rpc_message(exc)}")
            return False
        self._opened(result)
        self.session_id = str(result.get("sessionId"))
        self.renderer.notice(f"session {self.session_id} in {self.options.cwd} — /help for commands")
        return True

    def _opened(self, result: Any) -> None:
        self.renderer.tools.clear()
        self.agent_turn = False  # (another session's: its markers are not shown)
        answer = as_obj(result)
        modes = as_obj(answer.get("modes"))
        self.modes = [
            (str(m["id"]), str(m.get("name") or m["id"]))
            for m in as_objs(modes.get("availableModes"))
            if isinstance(m.get("id"), str)
        ]
        current = modes.get("currentModeId")
        self.renderer.current_mode = current if isinstance(current, str) else None
        if "configOptions" in answer:
            self.renderer.config_options = as_objs(answer["configOptions"])

    async def repl(self) -> int:
        """The conversation: lines read (``_typing``), turns run as tasks of the chat's own; 0 when the
        user left, 1 when the agent did."""
        with anyio.CancelScope() as self._repl_scope:
            async with anyio.create_task_group() as self._turn_tasks:
                if not await read_lines(self):
                    self._turn_tasks.cancel_scope.cancel()  # /quit: now, the turns with it
                # The end of input: the running and queued turns still end, and show their answers.
            self.renderer.end_line()
            if self.input_ended and not self._gone():
                self.renderer.line("")  # past the prompt Ctrl-D left
        self._turn_tasks = None
        if self._gone():
            self.renderer.error(
                "the agent exited; its last messages are above (see the log with --log-level debug)."
            )
            return 1
        return 0

    def _gone(self) -> bool:
        return self.conn is not None and self.conn.closed

    def agent_gone(self) -> None:
        """The agent's output ended: stop reading (``repl`` says so)."""
        if self._repl_scope is not None:
            self._repl_scope.cancel()

    def spawn(self, fn: Callable[..., Coroutine[Any, Any, None]], *args: Any) -> None:
        """Run ``fn(*args)`` as a task of the conversation (it ends with it)."""
        assert self._turn_tasks is not None
        self._turn_tasks.start_soon(fn, *args)

    def start_turn(self, text: str) -> None:
        """Send ``text`` as a prompt from a task of the chat's (the agent queues it behind a running one)."""
        self.turns += 1  # now: the next line read already sees a turn running
        self.reader.retitle(BUSY_PROMPT)
        self.spawn(self.turn, text)

    def is_agent_command(self, text: str) -> bool:
        return text.split()[0] not in _LOCAL_COMMANDS

    async def turn(self, text: str) -> None:
        """One prompt and its answer (counted in ``turns`` by ``start_turn``)."""
        assert self.conn is not None
        try:
            result = await self.conn.request(
                "session/prompt", {"sessionId": self.session_id, "prompt": [{"type": "text", "text": text}]}
            )
        except RpcError as exc:
            self.renderer.error(f"error: {_rpc_message(exc)}")
            return
        finally:
            self.turns -= 1
            self._turn_over()
        self._ended(as_obj(result).get("stopReason"))
        usage = self.renderer.usage_line(as_obj(as_obj(result).get("usage")))
        if usage:
            self.renderer.notice(usage)

    def turn_marker(self, turn: dict[str, Any]) -> None:
        """A ``session_info_update``'s ``_meta.turn`` (``acp_agent.session._turn_state``): a turn no prompt
        answer ends (a steering message's, one the turn before left) starts (``running``: before the
        answer of the turn it follows), or ends (``idle``, with its ``stopReason``)."""
        state = turn.get("state")
        if state == "running" and not self.agent_turn:
            self.agent_turn = True
            if self.question is None:
                self.reader.retitle(BUSY_PROMPT)
            self.poke()
        elif state == "idle" and self.agent_turn:
            self.agent_turn = False
            self._turn_over()
            if turn.get("stopReason") == "error":
                self.renderer.end_line()
                self.renderer.error(f"error: {turn.get('message') or 'the turn failed'}")
            else:
                self._ended(turn.get("stopReason"))

    def _turn_over(self) -> None:
        self.cancelling = False  # a cancel covers the turn it was typed in, not the queued ones
        if not self.busy and self.question is None:
            self.reader.retitle(IDLE_PROMPT)
        self.poke()

    def _ended(self, stop: Any) -> None:
        """What a turn's stop reason tells the user."""
        self.renderer.end_line()
        if stop == "cancelled":
            self.renderer.mark_open("cancelled")  # as editors do: the agent sends no status over it
            self.renderer.notice("(cancelled)")
        elif stop not in (None, "end_turn"):
            self.renderer.notice(f"({str(stop).replace('_', ' ')})")

    async def command(self, text: str) -> bool:
        """A local slash command; False means quit. Unknown ones go to the agent (see ``repl``)."""
        name, _, arg = text.partition(" ")
        arg = arg.strip()
        if name in ("/quit", "/exit"):
            return False
        if name == "/help":
            self.renderer.line(HELP)
            for cmd, description in self.renderer.commands:
                if f"/{cmd}" not in _LOCAL_COMMANDS:  # /mode, /model: the chat's own, listed above
                    self.renderer.line(f"/{cmd:<15} {description}")
        elif name == "/mode":
            await self._mode(arg)
        elif name == "/model":
            await self._model(arg)
        elif name == "/sessions":
            await self._sessions()
        elif name == "/load":
            await self._load(arg)
        elif name == "/new":
            await self.new_session()
        elif name == "/fork":
            await self._fork()
        return True

    async def _call(self, method: str, params: dict[str, Any]) -> Any:
        assert self.conn is not None
        try:
            return await self.conn.request(method, params)
        except RpcError as exc:
            if exc.code == -32601:
                self.renderer.error(f"this agent does not support {method}")
            else:
                self.renderer.error(f"{method} failed: {_rpc_message(exc)}")
            return None

    def _option(self, category: str) -> dict[str, Any] | None:
        for option in self.renderer.config_options:
            if option.get("category") == category or option.get("id") == category:
                return option
        return None

    def _option_values(self, option: dict[str, Any]) -> list[tuple[str, str]]:
        values: list[tuple[str, str]] = []
        for item in as_objs(option.get("options")):
            # A select's options are values, or groups of values.
            for entry in [item] if "value" in item else as_objs(item.get("options")):
                if "value" in entry:
                    values.append((str(entry["value"]), str(entry.get("name") or entry["value"])))
        return values

    async def _set_option(self, option: dict[str, Any], value: str) -> None:
        values = self._option_values(option)
        ids = [v for v, _ in values]
        if values and value not in ids:
            self.renderer.error(
                f"unknown {option.get('name', 'value')} {value!r}; choose one of: {', '.join(ids)}"
            )
            return
        result = await self._call(
            "session/set_config_option",
            {"sessionId": self.session_id, "configId": option.get("id"), "value": value},
        )
        if "configOptions" in as_obj(result):
            self.renderer.config_options = as_objs(as_obj(result)["configOptions"])
        if result is not None:
            self.renderer.notice(f"{option.get('name', option.get('id'))}: {value}")

    def _list_values(self, title: str, values: list[tuple[str, str]], current: Any) -> None:
        self.renderer.line(f"{title}:")
        for value, name in values:
            mark = "*" if value == current else " "
            self.renderer.line(f" {mark} {value}" + (f"  ({name})" if name != value else ""))

    async def _mode(self, arg: str) -> None:
        option = self._option("mode")
        if self.modes:
            if not arg:
                self._list_values("modes", self.modes, self.renderer.current_mode)
                return
            ids = [m for m, _ in self.modes]
            if arg not in ids:
                self.renderer.error(f"unknown mode {arg!r}; choose one of: {', '.join(ids)}")
                return
            if (
                await self._call("session/set_mode", {"sessionId": self.session_id, "modeId": arg})
                is not None
            ):
                self.renderer.current_mode = arg
                self.renderer.notice(f"mode: {arg}")
        elif option is not None:
            if not arg:
                self._list_values("modes", self._option_values(option), option.get("currentValue"))
            else:
                await self._set_option(option, arg)
        else:
            self.renderer.error("this agent offers no modes")

    async def _model(self, arg: str) -> None:
        option = self._option("model")
        if option is None:
            self.renderer.error("this agent offers no model choice; restart the chat with --model NAME")
        elif not arg:
            self._list_values("models", self._option_values(option), option.get("currentValue"))
        else:
            await self._set_option(option, arg)

    async def _sessions(self) -> None:
        result = await self._call("session/list", {})
        if result is None:
            return
        sessions = as_objs(as_obj(result).get("sessions"))
        if not sessions:
            self.renderer.line("no saved sessions")
        for info in sessions:
            mark = "*" if info.get("sessionId") == self.session_id else " "
            updated = str(info.get("updatedAt") or "")[:19]
            cwd = self.renderer.style.dim(str(info.get("cwd") or ""))
            self.renderer.line(
                f"{mark} {info.get('sessionId')}  {updated}  {info.get('title') or '(untitled)'}  {cwd}"
            )

    async def _load(self, session_id: str) -> None:
        if not session_id:
            self.renderer.error("usage: /load ID (see /sessions)")
            return
        if not self.can_load:
            self.renderer.error("this agent cannot load sessions")
            return
        previous, self.session_id = self.session_id, session_id  # replayed updates carry the new id
        result = await self._call(
            "session/load", {"sessionId": session_id, "cwd": str(self.options.cwd), "mcpServers": []}
        )
        if result is None:
            self.session_id = previous
            return
        self._opened(result)
        self.renderer.end_line()
        self.renderer.notice(f"session {session_id} loaded")

    async def _fork(self) -> None:
        if not self.can_fork:
            self.renderer.error("this agent cannot fork sessions")
            return
        params: dict[str, Any] = {
            "sessionId": self.session_id,
            "cwd": str(self.options.cwd),
            "mcpServers": [],
        }
        result = await self._call("session/fork", params)
        if result is None:
            return
        source, self.session_id = self.session_id, str(as_obj(result).get("sessionId"))
        self._opened(result)
        self.renderer.notice(f"forked into session {self.session_id}; /load {source} goes back")


_LOCAL_COMMANDS: Final = frozenset(
    {"/quit", "/exit", "/help", "/mode", "/model", "/sessions", "/load", "/new", "/fork"}
)
