"""The ACP agent: the connection's handler. Owns the sessions and serves the methods of ``ROUTES``.

``ROUTES`` is the one table of the ACP methods this agent serves: for each, how its params are validated
(a protocol model's ``model_validate``; omitted params are ``{}``), the handler that takes the validated
request, whether ``$/cancel_request`` cancels it, whether it waits for ``initialize``, whether it needs a
model configured, and the capability in ``initialize``'s ``agentCapabilities`` that advertises it. A new
method is one row (and its capability in ``acp_agent._early`` when it has one; a test checks both). A handler
is an async ``(agent, request, ctx)`` function: an ``AcpAgent`` method, or a module's function such as
``_listing.list_sessions`` (a family of methods, ``providers/*`` say, belongs in a module of its own), which
takes the narrow protocol of what it uses (``_registry.SessionRegistry`` and the like), never ``AcpAgent``:
no route module imports this one back.

``initialize`` is answered without the harness (start-up budget); the heavy modules are imported in a
worker thread right after, while the client reads the answer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

import anyio
import anyio.to_thread

from .._early import AUTH_METHOD_ID as _AUTH_METHOD_ID
from .._early import PROTOCOL_VERSION, SETUP_METHOD_ID, initialize_result
from ..model_setup import ModelConfigError, build_model, how_to_configure
from ..protocol import models as m
from ..protocol.errors import INTERNAL_ERROR, RpcError
from ..protocol.jsonvalue import as_object
from ._answered import Answered
from ._archive import archive_session, session_status, unarchive_session
from ._auth import auth_status, logout
from ._closes import Closes
from ._closing import close_session, delete_session, in_use_error
from ._controls_routes import set_config_option, set_mode
from ._creating import completed, new_session_setup
from ._deletes import Deletes
from ._first_run import needs_setup, terminal_auth
from ._fork import fork_session
from ._holds import SessionInUse
from ._listing import list_sessions
from ._mcp_acp import McpAcpBridge
from ._opening import EarlySession, controls_state, kept_servers
from ._providers import ProviderRoutes, disable_provider, list_providers, set_provider
from ._reopening import reopen_session
from ._roots import checked_roots
from ._session import Session
from ._setup import SessionEnvironment, SessionFactory, SessionSetup, checked_system_prompt, default_factory
from ._steering import steer_session
from ._store import SessionMeta, SessionStore
from ._threads import parent_of_thread, replay_thread
from ._titles import set_session_title
from ._turn_writes import SessionGone
from ._warm import WarmsUp, warm_imports

if TYPE_CHECKING:
    from harness import Model

    from ..model_setup import ModelSettings
    from ..protocol.connection import Connection, RequestContext

__all__ = ["PROTOCOL_VERSION", "ROUTES", "AcpAgent", "Route", "WarmsUp"]

log = logging.getLogger(__name__)

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Route(Generic[R]):
    """How one ACP method is served (see the module docstring)."""

    request: Callable[[Any], R]
    """Validates the params (``{}`` when omitted) into what ``handler`` takes; raises for bad ones."""
    handler: Callable[[AcpAgent, R, RequestContext], Awaitable[object]]
    cancellable: bool = False
    """``$/cancel_request`` (and the end of input) ends it; otherwise it finishes and answers as usual."""
    needs_initialize: bool = True
    needs_model: bool = False
    """Answered -32000 (``auth_required``, saying how to configure a model) while none is configured."""
    capability: tuple[str, ...] = ()
    """Where ``initialize`` advertises the method in ``agentCapabilities`` (empty: a baseline method)."""


def _params(params: Any) -> Any:
    """``initialize``'s params go to ``initialize_result`` as sent: it is the early answer's check too."""
    return params


class AcpAgent:
    """Implements ``acp_agent.protocol.Handler``."""

    def __init__(
        self,
        *,
        home: Path,
        settings: ModelSettings,
        factory: SessionFactory = default_factory,
        model: Model | None = None,
    ) -> None:
        self.home = home
        self.settings = settings
        self._factory = factory
        self._model = model
        self.has_model_given = model is not None
        self.forget_key: Callable[[], object] | None = None
        """Forgets the key ``acp-agent setup`` stored (``logout``; given by the composition root)."""
        """A model given to the agent (tests, the scripted model): no key is involved."""
        self._model_lock: anyio.Lock | None = None
        self._conn: Connection | None = None
        self._initialized = False
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] = {}
        self.routes = ProviderRoutes()  # providers/set's, for this connection only
        self.mcp_bridge = McpAcpBridge()
        self.sessions: dict[str, Session] = {}
        self._store: SessionStore | None = None
        self.answered = Answered()  # what waits for a response to be on the wire
        self.closing = Closes()  # every close started here: shutdown waits for them
        self.deletes = Deletes()  # a delete runs alone on its session (``_deletes``)
        self._warm_when_attached = False
        self._spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None
        self.early = EarlySession()  # a session/new answered before the event loop (acp_agent._early)

    def attach(
        self, connection: Connection, spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None
    ) -> None:
        """Bind the connection; ``spawn`` (a task group's ``start_soon``) runs background work."""
        self._conn = connection
        self._spawn = spawn
        if self._warm_when_attached and spawn is not None:
            self._warm_when_attached = False
            spawn(self._warm_up)
        if spawn is not None:
            self.early.attach(self, spawn)

    @property
    def store(self) -> SessionStore:
        if self._store is None:
            self._store = SessionStore(self.home / "sessions")
        return self._store

    # --- the Handler protocol --------------------------------------------------------------------

    async def handle_request(self, method: str, params: Any, ctx: RequestContext) -> Any:
        await self.early.built()
        route = ROUTES.get(method)
        if route is None:
            raise RpcError.method_not_found(method)
        ctx.cancellable = route.cancellable
        if route.needs_initialize and not self._initialized:
            raise RpcError.invalid_request("not initialized: send initialize first")
        request = route.request(params if params is not None else {})
        if route.needs_model:
            self._require_model()
        return await route.handler(self, request, ctx)

    async def handle_notification(self, method: str, params: Any) -> None:
        await self.early.built()
        if method == "mcp/message" and self._initialized:
            return await self.mcp_bridge.notified(params)
        if method != "session/cancel" or not self._initialized:
            return  # unknown notifications are ignored
        session_id = as_object(params).get("sessionId")
        session_id = session_id if isinstance(session_id, str) else ""
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancel(sequence=self._conn.sequence if self._conn is not None else None)
            return
        parent = self.sessions.get(parent_of_thread(session_id) or "")
        if parent is None or not parent.cancel_child(session_id):  # else a sub-agent was cancelled alone
            log.debug("session/cancel for unknown session %r ignored", session_id)

    async def aclose(self) -> None:
        """Close every session (cancels running turns; frees their resources); the early session's build,
        if under way, is cut short (``EarlySession.ended``)."""
        await self.early.ended()
        sessions, self.sessions = list(self.sessions.values()), {}
        async with anyio.create_task_group() as tg:
            for session in sessions:
                tg.start_soon(self.closing.close, session)
        await self.closing.wait()  # those begun before (a replaced session's, a session/close's) too
        if self._store is not None:  # its index's connection (a later use opens it again)
            await anyio.to_thread.run_sync(self._store.index.close)

    # --- initialize / authenticate ----------------------------------------------------------------

    async def initialize(self, params: Any, ctx: RequestContext) -> dict[str, Any]:

        try:
            result = initialize_result(
                params,
                configured=self.settings.configured or self._model is not None,
                how_to_configure=how_to_configure(),
            )
        except ValueError as exc:
            raise RpcError.invalid_params(str(exc)) from None
        self.mark_initialized(params)
        return result

    def mark_initialized(self, params: dict[str, Any]) -> None:
        """``initialize`` was answered (here, or before the event loop started: ``acp_agent._early``)."""
        self.client_capabilities = dict(as_object(params.get("clientCapabilities")))
        info = self.client_info = dict(as_object(params.get("clientInfo")))
        client = f"{info.get('name') or '(unnamed)'} {info.get('version') or ''}".strip()
        log.info("initialize: client %s, protocol %s", client, params.get("protocolVersion"))
        log.debug("initialize: %s", json.dumps(params, ensure_ascii=False, default=repr))
        first = not self._initialized
        self._initialized = True
        if first:
            if self._spawn is not None:
                self._spawn(self._warm_up)
            else:
                self._warm_when_attached = True

    async def _warm_up(self) -> None:
        try:
            # Abandoned when its owner, the connection's task group, is cancelled at the end of input:
            # the thread finishes its import unwaited for, and the process exits without it.
            await anyio.to_thread.run_sync(warm_imports, self._factory, abandon_on_cancel=True)
        except Exception:
            log.exception("warming up imports failed")

    async def authenticate(self, req: m.AuthenticateRequest, ctx: RequestContext) -> dict[str, Any]:
        if req.method_id not in (_AUTH_METHOD_ID, SETUP_METHOD_ID):
            raise RpcError.invalid_params(f"invalid params: methodId: unknown auth method {req.method_id!r}")
        if await needs_setup(self.settings, self._model, self._factory, None):
            raise RpcError.auth_required(how_to_configure())
        return {}

    def forget_model(self) -> None:
        """Build the model again for the next session (``logout`` forgot the key it was built with)."""
        if not self.has_model_given:
            self._model = None

    def _require_model(self) -> None:
        if not self.settings.configured and self._model is None:
            raise RpcError.auth_required(how_to_configure())

    # --- opening sessions -------------------------------------------------------------------------

    def live_session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None and (reason := self.early.failed(session_id)) is not None:
            raise RpcError(INTERNAL_ERROR, f"this session could not be set up: {reason}")
        if session is None:
            raise RpcError.not_found(f"session not found: {session_id}", uri=session_id)
        return session

    async def new_session(self, req: m.NewSessionRequest, ctx: RequestContext) -> dict[str, Any]:
        if terminal_auth(self.client_capabilities) and not (self.settings.configured or self._model):
            cwd, _ = await checked_roots(req.cwd, req.additional_directories)
            if await needs_setup(self.settings, self._model, self._factory, cwd):
                # The editor runs `acp-agent setup` (the terminal auth method) before the user types.
                raise RpcError.auth_required(how_to_configure())
        servers = kept_servers(req.mcp_servers)
        prompt = checked_system_prompt(req.system_prompt)
        meta, env, setup = await new_session_setup(
            req, servers, self._factory, self.store, lambda meta: self._environment(meta, prompt)
        )
        session = self._opened(meta, env, setup, [], ctx)
        # Once the answer is out: its index row (~0.2 ms) and the log file's write (~0.1-0.2 ms, on the loop).
        self.after_response(ctx, lambda: self.store.index_created(meta.id))
        self.answered.then(ctx.request_id, lambda: log.info("session %s created in %s", session.id, meta.cwd))
        # The wire shape as the early answer sends it (``controls_state``'s dicts are built to the schema,
        # pinned by the goldens): no model to validate and dump again, 0.1-0.2 ms per session/new.
        return {"sessionId": session.id, **controls_state(session)}

    async def load_session(self, req: m.LoadSessionRequest, ctx: RequestContext) -> dict[str, Any]:
        if self._conn is not None and await replay_thread(self.store, self._conn, req.session_id):
            return {}  # a sub-agent's thread: replayed, read-only
        return await reopen_session(self, req, ctx, replay=True)

    async def resume_session(self, req: m.ResumeSessionRequest, ctx: RequestContext) -> dict[str, Any]:
        return await reopen_session(self, req, ctx, replay=False)

    async def open_session(
        self,
        meta: SessionMeta,
        history: list[Any],
        ctx: RequestContext | None,
        system_prompt: tuple[str, str] | None = None,
    ) -> Session:
        """A live session of ``meta`` and ``history`` (``session/load``, ``resume``, ``fork``, the early
        ``session/new``; a plain ``session/new`` has its own one-hop path, ``_creating``). Its whole set-up
        is done before the answer: a replay shows its tools, and a set-up failure is the request's error."""
        env = self._environment(meta, system_prompt)
        try:
            held = await self.store.hold(meta.id)
        except SessionInUse as exc:  # open in another agent process, or being deleted there (``_holds``)
            raise in_use_error(exc) from None
        if not held:  # removed since it was read
            raise RpcError.not_found(f"session not found: {meta.id}", uri=meta.id)
        try:
            setup = await completed(await self._factory(env))
        except BaseException:
            self.store.release(meta.id)
            raise
        return self._opened(meta, env, setup, history, ctx)

    def _environment(
        self, meta: SessionMeta, system_prompt: tuple[str, str] | None = None
    ) -> SessionEnvironment:
        assert self._conn is not None, "attach() the connection first"
        return SessionEnvironment(
            session_id=meta.id,
            cwd=Path(meta.cwd),
            additional_directories=tuple(Path(d) for d in meta.additional_directories),
            mcp_servers=meta.mcp_servers,
            client_capabilities=self.client_capabilities,
            client_info=self.client_info,
            routes=self.routes,
            mcp_bridge=self.mcp_bridge,
            connection=self._conn,
            home=self.home,
            spawn=self._spawn,
            system_prompt=system_prompt,
        )

    def _opened(
        self,
        meta: SessionMeta,
        env: SessionEnvironment,
        setup: SessionSetup,
        history: list[Any],
        ctx: RequestContext | None,
    ) -> Session:
        """Register the session; its controls' after-open work starts once the answer is written."""
        assert self._conn is not None, "attach() the connection first"
        session = Session(meta, env, setup, self.store, history, self._get_model, self._conn)
        replaced = self.sessions.get(meta.id)
        self.sessions[meta.id] = session
        if replaced is not None and self._spawn is not None:
            # Two loads of one session at once both opened it: the newer one serves it, the other is
            # closed (its MCP servers and sandbox folder would outlive it otherwise).
            self._spawn(self.closing.begin(replaced))
        if ctx is not None:  # (None: the answer was written before, acp_agent._early)
            self.answered.then(ctx.request_id, session.opened.set)
        controls = setup.controls
        if controls is not None and self._spawn is not None:
            after = controls.opened

            async def once_open() -> None:
                await session.opened.wait()
                try:
                    await after()
                except anyio.get_cancelled_exc_class():
                    raise
                except Exception:
                    log.exception("session %s: after-open work failed", session.id)

            self._spawn(once_open)
        return session

    # --- the other session methods ----------------------------------------------------------------

    async def prompt(self, req: m.PromptRequest, ctx: RequestContext) -> m.PromptResponse:
        session = self.live_session(req.session_id)
        try:
            stop = await session.prompt(req.prompt, ctx)
        except SessionGone:
            raise await self.session_gone(session.id, session) from None
        finally:
            # Once the answer is out: the turn's follow-up, then its last writes fsync'd (only flushed yet).
            self.after_response(ctx, session.answered)
        usage = m.Usage.model_validate(u) if (u := session.turn_usage()) is not None else None
        return m.PromptResponse(stop_reason=stop, usage=usage)  # pyright: ignore[reportArgumentType]

    async def session_gone(self, session_id: str, live: object) -> RpcError:
        """``live``, the session ``session_id`` whose folder another process removed (``SessionGone``): out
        of the table (unless a newer load replaced it there), closed (in the background where there is a
        task group), written no more; the error to answer its request with."""
        session = self.sessions.get(session_id)
        if session is not None and session is live:
            del self.sessions[session_id]
            close = self.closing.begin(session)
            if self._spawn is not None:
                self._spawn(close)
            else:
                await close()
        return RpcError.not_found(
            f"session not found: {session_id}: its folder was removed outside this agent "
            "(deleted by another process while it was open here)",
            uri=session_id,
        )

    def after_response(self, ctx: RequestContext, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work`` once the response to ``ctx``'s request is on the wire (in the background)."""
        spawn = self._spawn
        if spawn is None:
            return

        async def run() -> None:
            try:
                await work()
            except anyio.get_cancelled_exc_class():
                raise
            except Exception:
                log.exception("work after the response to request %r failed", ctx.request_id)

        self.answered.then(ctx.request_id, lambda: spawn(run))

    # --- the model --------------------------------------------------------------------------------

    async def _get_model(self) -> Model:
        if self._model is not None:
            return self._model
        if self._model_lock is None:
            self._model_lock = anyio.Lock()
        async with self._model_lock:
            if self._model is None:
                if not self.settings.configured:  # (none, or its key forgotten by logout)
                    raise RpcError.auth_required(how_to_configure())
                try:
                    # Providers import httpx2 and more: off the event loop.
                    built = await anyio.to_thread.run_sync(build_model, self.settings)
                    self._model = self.routes.model(built, self.settings)
                except ModelConfigError as exc:
                    raise RpcError(INTERNAL_ERROR, str(exc), {"errorKind": "configuration_error"}) from exc
                except Exception as exc:
                    log.exception("building the model failed")
                    raise RpcError(
                        INTERNAL_ERROR,
                        f"cannot set up the model: {exc}",
                        {"errorKind": "configuration_error"},
                    ) from exc
            return self._model


ROUTES: Final[Mapping[str, Route[Any]]] = {
    "initialize": Route(_params, AcpAgent.initialize, needs_initialize=False),
    "authenticate": Route(m.AuthenticateRequest.model_validate, AcpAgent.authenticate),
    "auth/status": Route(_params, auth_status, capability=("auth", "status")),
    "logout": Route(_params, logout, capability=("auth", "logout")),
    "session/new": Route(m.NewSessionRequest.model_validate, AcpAgent.new_session),
    "session/load": Route(
        m.LoadSessionRequest.model_validate, AcpAgent.load_session, capability=("loadSession",)
    ),
    "session/resume": Route(
        m.ResumeSessionRequest.model_validate,
        AcpAgent.resume_session,
        capability=("sessionCapabilities", "resume"),
    ),
    "session/list": Route(
        m.ListSessionsRequest.model_validate,
        list_sessions,
        capability=("sessionCapabilities", "list"),
    ),
    "session/close": Route(
        m.CloseSessionRequest.model_validate,
        close_session,
        capability=("sessionCapabilities", "close"),
    ),
    "session/delete": Route(
        m.DeleteSessionRequest.model_validate,
        delete_session,
        capability=("sessionCapabilities", "delete"),
    ),
    "session/fork": Route(
        m.ForkSessionRequest.model_validate, fork_session, capability=("sessionCapabilities", "fork")
    ),
    "session/archive": Route(
        m.SessionIdRequest.model_validate, archive_session, capability=("sessionCapabilities", "archive")
    ),
    "session/unarchive": Route(
        m.SessionIdRequest.model_validate, unarchive_session, capability=("sessionCapabilities", "archive")
    ),
    "session/status": Route(
        m.SessionIdRequest.model_validate, session_status, capability=("sessionCapabilities", "status")
    ),
    "session/set_title": Route(
        m.SetSessionTitleRequest.model_validate,
        set_session_title,
        capability=("sessionCapabilities", "title"),
    ),
    "session/prompt": Route(m.PromptRequest.model_validate, AcpAgent.prompt, cancellable=True),
    "_session/steering": Route(
        m.SteeringRequest.model_validate, steer_session, capability=("_meta", "steering", "supported")
    ),
    "providers/list": Route(_params, list_providers, capability=("providers",)),
    "providers/set": Route(m.SetProviderRequest.model_validate, set_provider, capability=("providers",)),
    "providers/disable": Route(
        m.DisableProviderRequest.model_validate, disable_provider, capability=("providers",)
    ),
    "session/set_mode": Route(m.SetSessionModeRequest.model_validate, set_mode),
    "session/set_config_option": Route(m.SetSessionConfigOptionRequest.model_validate, set_config_option),
}
