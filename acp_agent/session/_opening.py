"""What a session's opening response says, and the ``session/new`` answered before the agent was imported.

``controls_state`` is the ``modes`` and ``configOptions`` of a session/new, load, resume or fork response.

``EarlySession``: ``acp_agent._early`` may answer the first ``session/new`` before this layer is imported,
naming the session and saying its modes and config options (computed from the configuration and the
cached model list by the factory's own functions). Once the connection is attached the session is built as
``session/new`` builds one, under that id, and no later request or notification is served before that ends.
What the built session says differently (a model list refreshed in between, say) is sent as
``current_mode_update`` / ``config_option_update``. A session that cannot be built is remembered with the
reason, which its first prompt gets as the error.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Any

import anyio

from ..protocol import models as m
from ..protocol.jsonvalue import as_object
from ._holds import SessionInUse
from ._roots import checked_roots_sync
from ._store import SessionMeta, now_iso

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from .._early import EarlyOpened
    from ._registry import SessionRegistry
    from ._session import Session

__all__ = ["EarlySession", "controls_state", "kept_servers"]

log = logging.getLogger(__name__)


def controls_state(session: Session) -> dict[str, Any]:
    """``modes`` and ``configOptions`` for a session response (nothing without controls)."""
    controls = session.setup.controls
    if controls is None:
        return {}
    out: dict[str, Any] = {}
    modes = controls.modes()
    if modes is not None:
        out["modes"] = modes
    options = controls.config_options()
    if options is not None:
        out["configOptions"] = options
    return out


def kept_servers(servers: list[Any]) -> tuple[dict[str, Any], ...]:
    """The MCP servers of a request as stored (kinds this agent does not support are skipped, logged)."""
    kept: list[dict[str, Any]] = []
    for server in servers:
        if isinstance(server, m.McpServerUnknown):
            log.warning("MCP server %r of unsupported type %r skipped", server.name, server.type)
            continue
        kept.append(m.dump(server))
    return tuple(kept)


class EarlySession:
    """The agent's one early-answered session (see the module docstring): ``opened`` is set before the
    connection is attached."""

    def __init__(self) -> None:
        self.opened: EarlyOpened | None = None
        self._building: anyio.Event | None = None
        self._scope: anyio.CancelScope | None = None
        self._failed: dict[str, str] = {}
        self._plain = ""
        """The early session's id when it has no MCP servers (its record is complete)."""

    def attach(self, agent: SessionRegistry, spawn: Callable[[Callable[[], Awaitable[None]]], None]) -> None:
        opened, self.opened = self.opened, None
        if opened is None:
            return
        building = self._building = anyio.Event()
        scope = self._scope = anyio.CancelScope()
        self._plain = "" if opened.params.get("mcpServers") else opened.session_id

        async def build() -> None:
            try:
                with scope:
                    await self._build(agent, opened)
            finally:
                building.set()

        spawn(build)

    async def built(self) -> None:
        """Returns once the early session is built or failed (at once when there is none)."""
        if self._building is not None and not self._building.is_set():
            await self._building.wait()

    async def ended(self) -> None:
        """The input ended: a build under way of a session without MCP servers is cut short (the editor
        closed the thread it just opened: nobody waits for its tools), as the record written at the
        answer is what its build would store; one with MCP servers is built and stored with them (a
        server starting is not cut short). Returns at once when there is none."""
        if self._building is None or self._building.is_set():
            return
        if self._scope is not None and self._plain:
            self._scope.cancel()
            log.info("session %s (answered at start-up): the input ended before it was built", self._plain)
        await self._building.wait()

    def failed(self, session_id: str) -> str | None:
        """Why the early session ``session_id`` could not be built (None: it was, or is not one)."""
        return self._failed.get(session_id)

    async def _build(self, agent: SessionRegistry, opened: EarlyOpened) -> None:
        try:
            meta = await _meta(opened)
            await agent.store.save_meta(meta, new=True)  # (a new session: its record may not exist)
            session = await agent.open_session(meta, [], None)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            log.exception("session %s (answered at start-up) could not be set up", opened.session_id)
            self._failed[opened.session_id] = str(exc) or type(exc).__name__
            with contextlib.suppress(SessionInUse):
                await agent.store.delete(opened.session_id)  # the record written at the answer: not a session
            return
        session.opened.set()  # its answer is long on the wire
        log.info("session %s created in %s (answered at start-up)", session.id, session.meta.cwd)
        await _correct(session, opened.state, controls_state(session))


async def _meta(opened: EarlyOpened) -> SessionMeta:
    """The early session's meta, as ``session/new`` would store it (its folders checked, its MCP servers
    as kept). In a worker thread: the request model's first validation builds its schema (and imports
    pydantic's plugin loader), tens of milliseconds this early in the process."""

    def checked() -> tuple[m.NewSessionRequest, str, tuple[str, ...]]:
        req = m.NewSessionRequest.model_validate(opened.params)
        return req, *checked_roots_sync(req.cwd, tuple(req.additional_directories or ()))

    req, cwd, dirs = await anyio.to_thread.run_sync(checked)
    now = now_iso()
    return SessionMeta(opened.session_id, cwd, now, now, None, dirs, kept_servers(req.mcp_servers))


async def _correct(session: Session, said: dict[str, Any], state: dict[str, Any]) -> None:
    """Tell the client what the built session says differently from the early answer."""
    modes = as_object(state.get("modes"))
    if modes and modes != said.get("modes"):
        current = str(modes.get("currentModeId"))
        log.info("session %s: mode %s, not as answered at start-up", session.id, current)
        await session.send_update(m.CurrentModeUpdate(current_mode_id=current))
    options = state.get("configOptions")
    if options is not None and options != said.get("configOptions"):
        log.info("session %s: config options not as answered at start-up; sent again", session.id)
        await session.send_update(m.ConfigOptionUpdate.model_validate({"configOptions": options}))
