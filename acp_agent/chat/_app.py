"""``acp-harness-agent chat``: spawn the agent, speak ACP to it over its stdio (as an editor does), and run a
terminal conversation: prompts, streamed replies, inline permission questions, Ctrl-C to cancel a turn."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import anyio
from anyio.abc import ByteReceiveStream, Process, TaskStatus

from .. import __version__
from ..protocol.connection import Connection
from ..protocol.errors import ConnectionClosedError, RpcError
from ._client import ChatClient
from ._input import LineReader, Lines
from .render import Renderer, as_obj, as_objs

__all__ = ["ChatApp", "ChatOptions", "agent_command"]

log = logging.getLogger(__name__)

PROTOCOL_VERSION: Final = 1
_CLOSE_TIMEOUT: Final = 5.0
_CANCELLED: Final = {"outcome": {"outcome": "cancelled"}}

HELP: Final = """\
/mode [NAME]     show or switch the session mode
/model [NAME]    show or switch the model
/sessions        list saved sessions
/load ID         continue a saved session
/fork            continue in a copy of this session (this one stays as it is)
/new             start a new session
/quit            leave (also Ctrl-D, or Ctrl-C when idle)
Other /commands are sent to the agent. Ctrl-C during a reply cancels it."""


@dataclass(frozen=True, slots=True)
class ChatOptions:
    cwd: Path
    agent_args: tuple[str, ...] = ()
    env: dict[str, str] | None = None


def agent_command(agent_args: Sequence[str]) -> list[str]:
    """The agent process: this interpreter running ``acp_agent`` with the chat's agent flags."""
    return [sys.executable, "-m", "acp_agent", *agent_args]


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
        """Prompts sent and not answered yet."""
        self._cancelling = False
        self._asking: anyio.CancelScope | None = None
        self.typing: anyio.CancelScope | None = None
        """Reading what is typed during a turn; a permission question cancels it to read its answer."""
        self.typing_stopped = anyio.Event()
        self.no_question = anyio.Event()
        self.no_question.set()
        self._repl_scope: anyio.CancelScope | None = None

    # --- the agent's requests -----------------------------------------------------------------------

    async def ask_permission(self, params: dict[str, Any]) -> dict[str, Any]:
        options = as_objs(params.get("options"))
        if not options or self._cancelling:
            return _CANCELLED
        call: dict[str, Any] = params.get("toolCall") if isinstance(params.get("toolCall"), dict) else {}  # pyright: ignore[reportAssignmentType]
        style = self.renderer.style
        known = self.renderer.tools.get(str(call.get("toolCallId")))
        title = call.get("title") or (known.title if known else "a tool call")
        self.renderer.line(style.yellow(f"? Allow {title}?"))
        content = call.get("content")
        if isinstance(content, list):
            self.renderer.tool_content(content, str(call.get("toolCallId") or "") or None)  # pyright: ignore[reportUnknownArgumentType]
        for i, option in enumerate(options, 1):
            self.renderer.line(f"  {i}) {option.get('name') or option.get('optionId')}")
        self.no_question = anyio.Event()
        if self.typing is not None:  # the answer is read here, not as a message typed during the turn
            self.typing.cancel()
            await self.typing_stopped.wait()
        with anyio.CancelScope() as scope:
            self._asking = scope
            try:
                while True:
                    answer = await self._read_line(f"choose 1-{len(options)}: ", remember=False)
                    if answer is None:
                        return _CANCELLED
                    chosen = _pick(answer.strip(), options)
                    if chosen is not None:
                        kind = next((str(o.get("kind")) for o in options if o.get("optionId") == chosen), "")
                        if kind.startswith("reject"):  # marked here, as editors do: no status comes
                            self.renderer.mark(str(call.get("toolCallId")), "rejected")
                        return {"outcome": {"outcome": "selected", "optionId": chosen}}
                    self.renderer.notice(f"type a number from 1 to {len(options)}")
            finally:
                self._asking = None
                self.no_question.set()
        return _CANCELLED

    async def _read_line(self, prompt: str, *, remember: bool = True) -> str | None:
        """A line typed after ``prompt``; None at the end of input, or when Ctrl-C was typed in it (then
        handled as the Ctrl-C signal is)."""
        if not self.reader.edits:
            self._show_prompt(prompt)
        try:
            return await self.reader.readline(prompt, remember=remember)
        except KeyboardInterrupt:  # typed while the line was edited (raw mode: no SIGINT)
            await self.interrupt()
            return None

    # --- Ctrl-C -------------------------------------------------------------------------------------

    async def watch_interrupts(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            task_status.started()
            async for _ in signals:
                await self.interrupt()

    async def interrupt(self) -> None:
        """First Ctrl-C in a turn cancels it; a second one (or one when idle) leaves."""
        if self.turns and not self._cancelling and self.conn is not None and self.session_id:
            self._cancelling = True
            self.renderer.notice("^C cancelling… (Ctrl-C again to quit)")
            if self._asking is not None:
                self._asking.cancel()
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
        with anyio.CancelScope() as self._repl_scope:
            while self.conn is not None and not self.conn.closed:
                self.renderer.end_line()
                line = await self._read_line("> ")
                if line is None:
                    self.renderer.line("")
                    return 0
                text = line.strip()
                if not text:
                    continue
                if text.startswith("/") and not await self.command(text):
                    return 0
                if not text.startswith("/") or self.is_agent_command(text):
                    # One turn at a time: reading lines during a turn fought prompt_toolkit's
                    # own terminal handling (Ctrl-C echo, Ctrl-D after the turn); see the README.
                    await self.turn(text)
            if self.conn is not None and self.conn.closed:
                self.renderer.error(
                    "the agent exited; its last messages are above (see the log with --log-level debug)."
                )
                return 1
        return 0

    def is_agent_command(self, text: str) -> bool:
        return text.split()[0] not in _LOCAL_COMMANDS

    async def turn(self, text: str) -> None:
        assert self.conn is not None
        self.turns += 1
        self._cancelling = False
        try:
            result = await self.conn.request(
                "session/prompt", {"sessionId": self.session_id, "prompt": [{"type": "text", "text": text}]}
            )
        except RpcError as exc:
            self.renderer.error(f"error: {_rpc_message(exc)}")
            return
        finally:
            self.turns -= 1
        self.renderer.end_line()
        stop = as_obj(result).get("stopReason")
        if stop == "cancelled":
            self.renderer.mark_open("cancelled")  # as editors do: the agent sends no status over it
            self.renderer.notice("(cancelled)")
        elif stop not in (None, "end_turn"):
            self.renderer.notice(f"({str(stop).replace('_', ' ')})")
        usage = self.renderer.usage_line(as_obj(as_obj(result).get("usage")))
        if usage:
            self.renderer.notice(usage)

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


def _pick(answer: str, options: list[dict[str, Any]]) -> str | None:
    if answer.isdigit() and 1 <= int(answer) <= len(options):
        return str(options[int(answer) - 1].get("optionId"))
    lowered = answer.lower()
    for option in options:
        if lowered and lowered in (str(option.get("optionId")).lower(), str(option.get("name", "")).lower()):
            return str(option.get("optionId"))
    return None


async def _pump_stderr(stream: ByteReceiveStream, renderer: Renderer) -> None:
    """The agent's stderr (its warnings and errors), shown dimmed so problems are visible."""
    reader = LineReader(stream)
    while (line := await reader.readline()) is not None:
        if line.strip():
            renderer.notice(f"agent: {line}")


async def run_chat(
    options: ChatOptions, reader: Lines, renderer: Renderer, prompt: Callable[[str], None]
) -> int:
    """Spawn the agent and converse until the user leaves or the agent exits; returns the exit code."""
    app = ChatApp(options, reader, renderer, prompt)
    try:
        process = await anyio.open_process(
            agent_command(options.agent_args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=options.cwd,
            env=options.env,
            start_new_session=True,  # the terminal's Ctrl-C is ours to interpret, not the agent's
        )
    except OSError as exc:
        renderer.error(f"cannot start the agent ({exc.strerror}); check that {sys.executable} still exists.")
        return 1
    code = 1
    async with anyio.create_task_group() as tg:
        await tg.start(app.watch_interrupts)
        assert process.stdout is not None and process.stdin is not None and process.stderr is not None
        tg.start_soon(_pump_stderr, process.stderr, renderer)
        conn = Connection(process.stdout, process.stdin, ChatClient(app), shutdown_grace=1.0)
        app.conn = conn
        tg.start_soon(conn.serve)
        try:
            if await app.start():
                code = await app.repl()
        finally:
            with anyio.CancelScope(shield=True):
                conn.close()
                await _stop(process)
            tg.cancel_scope.cancel()
    return code


async def _stop(process: Process) -> None:
    """End input so the agent exits on its own; terminate, then kill, if it does not."""
    if process.stdin is not None:
        await process.stdin.aclose()
    with anyio.move_on_after(_CLOSE_TIMEOUT):
        await process.wait()
        return
    process.terminate()
    with anyio.move_on_after(2.0):
        await process.wait()
        return
    process.kill()
    await process.wait()
