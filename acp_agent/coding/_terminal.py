"""Commands in the editor's terminal: ``terminal/create``, ``terminal/output``, ``wait_for_exit``, ``kill``,
``release``.

The command line goes out as ``command`` with no ``args``: editors run it in the user's shell, and some
Zed versions join ``command`` and ``args`` with spaces unquoted (``bash -c echo hi`` runs only ``echo``),
so one string runs the same everywhere, and the terminal's label (Zed makes it from the create params)
is the command itself. ``terminal_command`` makes that string: under the sandbox ``/bin/sh <runner>
"<command>"`` (``harness.sandbox.wrap_command_line``), short and with the command last and whole, because
Toad labels the terminal with the line it runs and offers nothing else to label it with (it reads no
``_meta``, no title, and names terminals itself); Zed's label is relabelled with the command by a title
update once the terminal is embedded.

The terminal goes into the call's content as soon as it exists; its output is polled for the model while
``wait_for_exit`` waits. No ``outputByteLimit`` is asked: Zed keeps the *start* of output over the limit
(the schema says the end), so a limit would lose the tail; without one, Zed's terminal keeps its
scrollback (the end), and the polling, which sees the output as it grows, has the start. The two are
stitched together (a sliding window is followed by overlap), so the model gets both ends whatever the
client keeps. On cancellation ``terminal/kill``; ``terminal/release`` always, after which the id is dead
(the call's last update does not name it).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.lowlevel

from harness.sandbox import wrap_command_line
from harness.secrets import Secrets

from ..protocol.errors import RpcError
from ..protocol.jsonvalue import as_object
from ..protocol.models import TerminalToolCallContent, ToolCallProgress

if TYPE_CHECKING:
    from harness.tools import CommandRequest, OutputSink

    from ..session.plugin import SessionEnvironment, SessionHandle

__all__ = ["EditorTerminalRunner", "EditorTerminals", "OutputTracker", "terminal_command"]

log = logging.getLogger(__name__)

REQUEST_TIMEOUT_S: Final = 30.0
FIRST_POLL_S: Final = 0.02
POLL_S: Final = 0.25
MAX_POLL_S: Final = 2.0
_ANCHOR: Final = 256
_GAP: Final = "\n[... output the editor's terminal no longer held ...]\n"
_CUT: Final = "\n[... the editor kept only the start of the output; the rest is not available ...]\n"


async def terminal_command(request: CommandRequest) -> str:
    """The ``terminal/create`` ``command`` for ``request``: the command line itself (see the docstring),
    wrapped by the sandbox launcher when the request carries a policy."""
    if request.sandbox is None or not request.sandbox.enabled:
        return request.command

    policy = request.sandbox
    return await anyio.to_thread.run_sync(lambda: wrap_command_line(request.command, policy))


class EditorTerminals:
    """Which editor terminal shows which tool call (the runner notes it, the shell's view takes it)."""

    def __init__(self) -> None:
        self._by_call: dict[str, str] = {}

    def note(self, call_id: str, terminal_id: str) -> None:
        self._by_call[call_id] = terminal_id

    def take(self, call_id: str) -> str | None:
        return self._by_call.pop(call_id, None)


class OutputTracker:
    """What is new in successive ``terminal/output`` snapshots, whether the client's copy grows, slides
    (keeps the end) or stops at a prefix (keeps the start)."""

    def __init__(self) -> None:
        self._last = ""
        self._truncated = False
        self._slid = False

    @property
    def cut(self) -> bool:
        """The client said it truncated, and its copy never moved on: it kept the start only."""
        return self._truncated and not self._slid

    def new(self, snapshot: str, truncated: bool) -> str:
        """The part of ``snapshot`` not seen before."""
        self._truncated = self._truncated or truncated
        last = self._last
        if snapshot.startswith(last):
            self._last = snapshot
            return snapshot[len(last) :]
        if last.startswith(snapshot):
            return ""  # the client's copy shrank to a prefix of what was seen: nothing new
        self._last = snapshot
        self._slid = True  # the client keeps the end: follow the overlap
        at = snapshot.find(last[-_ANCHOR:])
        if at >= 0:
            return snapshot[at + min(len(last), _ANCHOR) :]
        return _GAP + snapshot


class EditorTerminalRunner:
    """A ``harness.tools.CommandRunner`` over ``terminal/*`` (see the module docstring)."""

    def __init__(
        self,
        env: SessionEnvironment,
        terminals: EditorTerminals,
        session: Any,
        secrets: Secrets | None = None,
    ) -> None:
        self._env = env
        self._terminals = terminals
        self._session: Any = session
        """Holds the ``SessionHandle`` once bound (``.handle``)."""
        self._secrets = secrets or Secrets.from_env(os.environ)

    async def run(self, request: CommandRequest, output: OutputSink) -> int | None:
        conn = self._env.connection
        sid = self._env.session_id
        # The editor starts the terminal with its own environment: blank the credentials this agent holds.
        extra = {k: v for k, v in request.env.items() if k not in self._secrets.names}
        merged = {**self._secrets.masked_env(), **extra}
        env_vars = [{"name": k, "value": v} for k, v in merged.items()]
        command = await terminal_command(request)
        params: dict[str, Any] = {"sessionId": sid, "command": command, "cwd": str(request.cwd)}
        if env_vars:
            params["env"] = env_vars
        # Shielded (bounded by its timeout): the editor starts the command before it answers, so a
        # cancel that dropped the answer would lose the only id that can kill it, and its escaped
        # background processes would run on. A cancel that came meanwhile is raised at the next
        # checkpoint, inside the ``try`` whose ``finally`` kills and releases the terminal.
        created: Any = None
        with anyio.CancelScope(shield=True):
            try:
                created = await conn.request("terminal/create", params, timeout=REQUEST_TIMEOUT_S)
            except (RpcError, TimeoutError) as exc:  # ConnectionClosedError is an RpcError
                raise OSError(f"the editor could not start a terminal: {exc}") from exc
        terminal_id = str(as_object(created).get("terminalId") or "")
        if not terminal_id:
            raise OSError("the editor answered terminal/create without a terminalId")
        ids = {"sessionId": sid, "terminalId": terminal_id}
        tracker = OutputTracker()
        exited = False
        status: Any = None
        try:
            await anyio.lowlevel.checkpoint()  # a cancel during the create ends here: killed below
            if request.call_id:
                self._terminals.note(request.call_id, terminal_id)
                # A wrapped command line would be the terminal's label: the title, sent after the
                # terminal, relabels it with the command itself (Zed relabels an execute call's terminal
                # by its title).
                relabel = request.command.strip() if command != request.command else None
                await self._embed(request.call_id, terminal_id, relabel)
            async with anyio.create_task_group() as tg:

                async def poll() -> None:
                    # Soon at first (the start must be seen before the terminal's scrollback drops it),
                    # then less often as the copy grows.
                    wait = FIRST_POLL_S
                    while True:
                        await anyio.sleep(wait)
                        size = await self._pump(ids, tracker, output)
                        wait = min(MAX_POLL_S, POLL_S * (1 + size / 65536), wait * 2)

                tg.start_soon(poll)
                status = await conn.request("terminal/wait_for_exit", ids)
                exited = True
                tg.cancel_scope.cancel()
            await self._pump(ids, tracker, output)
            if tracker.cut:
                await output(_CUT)
            return _exit_code(status)
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                if not exited:
                    await _quietly(conn.request("terminal/kill", ids, timeout=5))
                await _quietly(conn.request("terminal/release", ids, timeout=5))

    async def _embed(self, call_id: str, terminal_id: str, relabel: str | None) -> None:
        handle: SessionHandle | None = getattr(self._session, "handle", None)
        if handle is None:
            return
        await handle.send_update(
            ToolCallProgress(tool_call_id=call_id, content=[TerminalToolCallContent(terminal_id=terminal_id)])
        )
        if relabel:
            await handle.send_update(ToolCallProgress(tool_call_id=call_id, title=relabel))

    async def _pump(self, ids: dict[str, str], tracker: OutputTracker, output: OutputSink) -> int:
        """Read the output once and pass on what is new; returns the size of the client's copy."""
        try:
            answer = await self._env.connection.request("terminal/output", ids, timeout=REQUEST_TIMEOUT_S)
        except (RpcError, TimeoutError) as exc:  # ConnectionClosedError is an RpcError too
            log.debug("terminal/output failed: %s", exc)
            return 0
        text = as_object(answer).get("output")
        if not isinstance(text, str):
            return 0
        new = tracker.new(text, as_object(answer).get("truncated") is True)
        if new:
            await output(new)
        return len(text)


async def _quietly(request: Any) -> None:
    try:
        await request
    except (RpcError, TimeoutError) as exc:  # ConnectionClosedError is an RpcError
        log.debug("terminal clean-up request failed: %s", exc)


_SIGNALS: Final = {"SIGHUP": 1, "SIGINT": 2, "SIGQUIT": 3, "SIGKILL": 9, "SIGTERM": 15, "SIGPIPE": 13}


def _exit_code(status: Any) -> int | None:
    code = as_object(status).get("exitCode")
    if isinstance(code, int):
        return code
    signal = as_object(status).get("signal")
    if isinstance(signal, str):
        return -_SIGNALS.get(signal.upper(), 15)
    return None
