"""A session's MCP servers: started in the background, their tools, states, failures and prompt commands.

Ownership: ``SessionMcp`` owns one task, ``_own``, started by ``start()`` through the ``spawn`` callable
the host gives (a long-lived task group's ``start_soon``: the agent's connection-wide group, since the
request that opens a session ends long before the session does). That task enters an ``McpManager``,
whose task group runs every server, plus a notifier task that calls ``on_change``; ``aclose()`` tells it to
leave, which ends every server (process groups included). Cancelling the host group ends it the same way.

``harness.mcp`` (and through it the ``mcp`` SDK, about 1 s to import) is imported only inside methods:
the SDK itself loads in a worker thread when the first server starts.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import re
import shlex
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from ..logs import log_file_path
from ._mcp_acp import acp_transport

if TYPE_CHECKING:
    from harness import Tool, ToolSource
    from harness.mcp import (
        Elicitation,
        ElicitationHandler,
        ElicitationReply,
        McpManager,
        McpServer,
        PromptInfo,
        ServerState,
    )

    from ._setup import SessionEnvironment

from ..meta_keys import MCP_TIMEOUT_META
from . import _harness

__all__ = ["CLOSE_WAIT", "MCP_TIMEOUT_META", "SessionMcp", "Spawn", "merge_servers"]

log = logging.getLogger(__name__)

Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]]], object]
"""Runs a coroutine function as a task of a long-lived task group (e.g. ``TaskGroup.start_soon``)."""

"""``_meta`` key of an ``mcpServers`` entry (from the config, or an editor) setting its call timeout."""
CLOSE_WAIT = 2.5  # servers end within about 2 s; a little slack before giving up on the owner task
_SPACES = re.compile(r"\s+")


def merge_servers(
    config_servers: Sequence[Mapping[str, Any]], session_servers: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """ACP server entries merged by name: the session's win over the config's; config order first."""
    merged: dict[str, Mapping[str, Any]] = {}
    for i, entry in enumerate((*config_servers, *session_servers)):
        name = entry.get("name")
        merged[name if isinstance(name, str) and name else f"mcpServers[{i}]"] = entry
    return list(merged.values())


async def _decline(request: Elicitation) -> ElicitationReply:
    return _harness.ElicitationReply.decline()


class _McpTools:
    """The servers' tools as a ``ToolSource``: none until the manager runs, then every ready server's."""

    def __init__(self, owner: SessionMcp) -> None:
        self._owner = owner

    async def tools(self) -> Sequence[Tool]:
        manager = self._owner.manager
        if manager is None:
            return []
        return list(await manager.tools())

    def __repr__(self) -> str:
        return "SessionMcp.tools"


@dataclasses.dataclass(frozen=True, slots=True)
class _Command:
    server: str
    prompt: PromptInfo


class SessionMcp:
    """The MCP servers of one session: the user's configured ones merged by name with the session's.

    ``start()`` returns at once; servers start concurrently in the owned task (see the module docstring),
    run by ``spawn`` (or, when not given, by ``env.spawn`` if the environment has one).
    ``on_change`` (async) is called after any server's state changed (several changes may share a call):
    read ``status_meta()`` then. ``elicitation_handler`` (settable at any time) answers a server's request
    for user input; by default it declines.
    """

    def __init__(
        self,
        env: SessionEnvironment,
        config_servers: Sequence[Mapping[str, Any]] = (),
        *,
        on_change: Callable[[], Awaitable[None]] | None = None,
        spawn: Spawn | None = None,
    ) -> None:
        self.env = env
        self.entries: list[Mapping[str, Any]] = merge_servers(config_servers, env.mcp_servers)
        self.on_change = on_change
        self.spawn = spawn
        self.elicitation_handler: ElicitationHandler = _decline
        self.manager: McpManager | None = None
        """The running manager (None before the owned task entered it and after it left)."""
        self._servers: list[McpServer] = []
        self._invalid: dict[str, str] = {}  # entries that could not be used: name -> why
        self._failures: dict[str, str] = {}  # failures not reported yet: name -> message
        self._reported: set[str] = set()  # failed servers already reported (until they are ready again)
        self._was_ready: set[str] = set()
        self._source = _McpTools(self)
        self._commands: dict[str, _Command] = {}
        self._started = False
        self._closing = False
        self._running = anyio.Event()  # the manager runs, or the owned task ended
        self._stop = anyio.Event()
        self._done = anyio.Event()
        self._changed = anyio.Event()

    # --- lifecycle ------------------------------------------------------------------------------

    @property
    def started(self) -> bool:
        return self._started

    async def start(self) -> None:
        """Start every server in the background (in the owned task); returns at once."""
        if self._started:
            raise _harness.HarnessUsageError("SessionMcp.start() was already called")
        if self._closing:
            return  # the session closed before its servers were started: nothing to start
        self._started = True
        self._servers = self._build_servers()
        for name, cause in self._invalid.items():
            self._failed(name, cause)
        if not self.entries:
            self._running.set()
            self._done.set()
            return
        spawn: Spawn | None = self.spawn or getattr(self.env, "spawn", None)
        if spawn is None:
            raise _harness.HarnessUsageError(
                "SessionMcp needs spawn= (a long-lived task group's start_soon) to run its servers"
            )
        if self._invalid:
            self._changed.set()  # their "failed" state is news too
        spawn(self._own)

    def _build_servers(self) -> list[McpServer]:
        cwd = str(self.env.cwd) if self.env.cwd.is_dir() else None
        out: list[_harness.McpServer] = []
        for i, entry in enumerate(self.entries):
            raw_name = entry.get("name")
            name = raw_name if isinstance(raw_name, str) and raw_name else f"mcpServers[{i}]"
            try:
                (config,) = (
                    [self._acp(name, entry)]
                    if entry.get("type") == "acp"
                    else _harness.parse_acp_servers([entry])
                )
            except _harness.McpConfigError as exc:
                self._invalid[name] = str(exc).removeprefix("mcpServers[0]: ")
                continue
            if isinstance(config, _harness.StdioConfig):
                # Config-file servers may carry their own cwd; otherwise they run in the project.
                own_cwd = entry.get("cwd")
                config = dataclasses.replace(config, cwd=own_cwd if isinstance(own_cwd, str) else cwd)
            # A server over ACP is asked ``server/discover`` first (MCP 2026-07-28, the only revision the ACP
            # SDKs' request-scoped binding serves), then the ``initialize`` handshake if it is an older one.
            mode = "auto" if entry.get("type") == "acp" else "legacy"
            out.append(_harness.McpServer(config, call_timeout=_call_timeout(entry), mode=mode))
        return out

    def _acp(self, name: str, entry: Mapping[str, Any]) -> Any:
        """An MCP-over-ACP server (``_mcp_acp``): reached through the client's connection."""
        server_id, env = entry.get("serverId"), self.env
        if not isinstance(server_id, str) or env.mcp_bridge is None:
            raise _harness.McpConfigError("an acp server needs a serverId and a client connection")
        return _harness.StreamConfig(name, lambda: acp_transport(env.connection, env.mcp_bridge, server_id))

    async def _own(self) -> None:
        try:
            if self._stop.is_set():
                return
            async with (
                _harness.McpManager(
                    self._servers,
                    roots=self.env.roots,
                    elicitation_handler=self._elicit,
                    on_status_change=self._on_status,
                ) as manager,
                anyio.create_task_group() as tg,
            ):
                self.manager = manager
                self._running.set()
                tg.start_soon(self._notifier)
                await self._stop.wait()
                tg.cancel_scope.cancel()
                # Leaving the manager's block ends every server, within about 2 s.
        except Exception as exc:
            log.exception("session %s: running the MCP servers failed", self.env.session_id)
            for server in self._servers:
                self._failed(server.name, f"the agent could not run it: {exc}")
        finally:
            self.manager = None
            self._running.set()
            self._done.set()

    async def aclose(self) -> None:
        """End every server process and its children (within about 2 s)."""
        self._closing = True
        self._stop.set()
        if not self._started or self._done.is_set():
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_WAIT):
            await self._done.wait()
        if not self._done.is_set():
            log.warning("session %s: MCP servers still closing after %s s", self.env.session_id, CLOSE_WAIT)

    # --- states ---------------------------------------------------------------------------------

    @property
    def tools(self) -> ToolSource:
        """The servers' tools (``mcp__<server>__<tool>``), growing as servers become ready."""
        return self._source

    def _on_status(self, state: ServerState) -> None:
        # Called synchronously by the servers: record, and wake the notifier (never block here).

        if state.status == _harness.ServerStatus.READY:
            self._was_ready.add(state.name)
            self._reported.discard(state.name)
            self._failures.pop(state.name, None)
        elif state.status == _harness.ServerStatus.FAILED:
            self._failed(state.name, state.cause or "unknown cause")
        if not self._closing:
            self._changed.set()

    def _failed(self, name: str, cause: str) -> None:
        if name in self._reported or name in self._failures:
            return
        what = "failed" if name in self._was_ready else "failed to start"
        path = log_file_path(self.env.home)
        where = f" (log: {path})" if path is not None else ""
        self._failures[name] = f"MCP server `{name}` {what}: {cause}{where}"

    async def _notifier(self) -> None:
        while True:
            await self._changed.wait()
            self._changed = anyio.Event()
            await self._notify_once()

    async def _notify_once(self) -> None:
        if self.on_change is None or self._closing:
            return
        try:
            await self.on_change()
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:
            log.exception("session %s: on_change failed", self.env.session_id)

    def status_meta(self) -> dict[str, Any]:
        """Every server's state for ``session_info_update`` ``_meta.mcpServers``:
        ``{name: {"state": "starting|ready|failed|stopped", "error": str | None, "tools": n}}``."""
        out: dict[str, Any] = {}
        for server in self._servers:
            state = server.state
            status = state.status.value
            if state.status == _harness.ServerStatus.STOPPED and not self._closing:
                status = "starting"  # configured, its task not running yet
            entry: dict[str, Any] = {"state": status, "error": state.cause, "tools": state.tools}
            entry["transport"] = server.config.transport
            out[server.name] = entry
        for name, cause in self._invalid.items():
            out[name] = {"state": "failed", "error": cause, "tools": 0}
        return out

    def take_failures(self) -> list[str]:
        """Each failure not reported yet, once: ``MCP server `name` failed to start: cause (log: path)``."""
        out = list(self._failures.values())
        self._reported.update(self._failures)
        self._failures.clear()
        return out

    async def wait_ready(self, timeout: float) -> None:
        """Wait (at most ``timeout`` s) for the servers still starting; returns at once when none is."""
        if not self._started:
            return
        deadline = anyio.current_time() + max(timeout, 0.0)
        with anyio.move_on_after(max(timeout, 0.0)):
            await self._running.wait()
        manager = self.manager
        if manager is not None:
            left = deadline - anyio.current_time()
            if left > 0:
                await manager.wait_ready(left if math.isfinite(left) else -1)

    # --- elicitation ----------------------------------------------------------------------------

    async def _elicit(self, request: Elicitation) -> ElicitationReply:
        # Looked up at each request, so the host may set the handler after start().
        return await self.elicitation_handler(request)

    # --- prompts as slash commands --------------------------------------------------------------

    async def commands(self) -> list[dict[str, Any]]:
        """The ready servers' prompts as ACP ``AvailableCommand``s, named ``<server>.<prompt>``."""
        manager = self.manager
        if manager is None:
            return []
        commands: dict[str, _Command] = {}
        out: list[dict[str, Any]] = []
        for prompt in await manager.prompts():
            name = _SPACES.sub("-", f"{prompt.server}.{prompt.name}")
            if name in commands:
                continue
            commands[name] = _Command(prompt.server, prompt)
            description = prompt.description or f"the `{prompt.name}` prompt"
            item: dict[str, Any] = {"name": name, "description": f"{description} (MCP: {prompt.server})"}
            if prompt.arguments:
                hint = " ".join(f"<{a.name}>" if a.required else f"[{a.name}]" for a in prompt.arguments)
                item["input"] = {"hint": hint}
            out.append(item)
        self._commands = commands
        return out

    async def expand(self, name: str, argument_text: str) -> str | None:
        """The text of the MCP prompt behind command ``name`` (None: not an MCP command).

        ``argument_text`` fills the prompt's arguments: ``key=value`` words by name, else words in order
        (the last argument takes the rest of the text). Raises ``harness.mcp.McpError`` (a sentence for
        the user) when a required argument is missing or the server fails.
        """
        command = self._commands.get(name)
        if command is None and self.manager is not None:
            await self.commands()
            command = self._commands.get(name)
        manager = self.manager
        if command is None or manager is None:
            return None
        prompt = command.prompt
        arguments = _prompt_arguments(prompt, argument_text)
        missing = [a.name for a in prompt.arguments if a.required and not arguments.get(a.name)]
        if missing:
            hint = " ".join(f"<{a.name}>" if a.required else f"[{a.name}]" for a in prompt.arguments)
            raise _harness.McpError(f"/{name} needs {', '.join(missing)}: /{name} {hint}")
        text = await manager.get_prompt(command.server, prompt.name, arguments)
        if not prompt.arguments and argument_text.strip():
            text = f"{text}\n\n{argument_text.strip()}"  # nothing to fill: keep what the user typed
        return text


def _prompt_arguments(prompt: PromptInfo, text: str) -> dict[str, str]:
    text = text.strip()
    if not prompt.arguments or not text:
        return {}
    known = {a.name for a in prompt.arguments}
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    pairs = [w.split("=", 1) for w in words]
    if words and all(len(p) == 2 and p[0] in known for p in pairs):
        return {k: v for k, v in pairs}
    if len(prompt.arguments) == 1:
        return {prompt.arguments[0].name: text}
    out: dict[str, str] = {}
    names = [a.name for a in prompt.arguments]
    for i, arg in enumerate(names):
        if i >= len(words):
            break
        out[arg] = " ".join(words[i:]) if i == len(names) - 1 else words[i]
    return out


def _call_timeout(entry: Mapping[str, Any]) -> float:
    """The entry's call timeout from ``_meta`` (the config's ``timeout_s``), else 60 s."""
    meta = entry.get("_meta")
    value = meta.get(MCP_TIMEOUT_META) if isinstance(meta, Mapping) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return 60.0
