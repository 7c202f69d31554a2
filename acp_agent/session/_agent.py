"""The ACP agent: the connection's handler. Routes methods, gates them on ``initialize``, owns sessions.

``initialize`` is answered without pydantic or the harness (start-up budget); the heavy modules are
imported in a worker thread right after, while the client reads the answer.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.to_thread

from .._early import AUTH_METHOD_ID as _AUTH_METHOD_ID
from .._early import PROTOCOL_VERSION
from ..protocol.errors import INTERNAL_ERROR, RpcError

if TYPE_CHECKING:
    from harness import Model

    from ..models import ModelSettings
    from ..protocol.connection import Connection, RequestContext
    from ._session import Session
    from ._setup import SessionFactory
    from ._store import SessionMeta, SessionStore

__all__ = ["PROTOCOL_VERSION", "AcpAgent"]

log = logging.getLogger(__name__)

PAGE_SIZE: Final = 50

_METHODS: Final = frozenset(
    {
        "initialize",
        "authenticate",
        "session/new",
        "session/load",
        "session/resume",
        "session/list",
        "session/close",
        "session/delete",
        "session/prompt",
        "session/set_mode",
        "session/set_config_option",
    }
)


async def _warm_up() -> None:
    try:
        await anyio.to_thread.run_sync(_warm_imports)
    except Exception:
        log.exception("warming up imports failed")


def _warm_imports() -> None:
    # Pays pydantic's and the harness's import cost off the event loop, before the first session.
    import importlib

    importlib.import_module("harness.transcript")
    try:
        importlib.import_module("acp_agent.coding._factory")
    except ImportError:  # pragma: no cover - the coding package is optional for the session layer
        log.debug("the coding factory is not importable", exc_info=True)

    from ..protocol import models

    models.NewSessionRequest.model_validate({"cwd": "/", "mcpServers": []})
    models.PromptRequest.model_validate({"sessionId": "s", "prompt": [{"type": "text", "text": "x"}]})


def _finish_anyway() -> None:
    pass


class AcpAgent:
    """Implements ``acp_agent.protocol.Handler``."""

    def __init__(
        self,
        *,
        home: Path,
        settings: ModelSettings,
        factory: SessionFactory | None = None,
        model: Model | None = None,
    ) -> None:
        self.home = home
        self.settings = settings
        self._factory = factory
        self._model = model
        self._model_lock: anyio.Lock | None = None
        self._conn: Connection | None = None
        self._initialized = False
        self.client_capabilities: dict[str, Any] = {}
        self.sessions: dict[str, Session] = {}
        self._store: SessionStore | None = None
        self._opening: dict[Any, Callable[[], None]] = {}
        self._closing: dict[str, anyio.Event] = {}
        self._warm_when_attached = False
        self._spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None

    def attach(
        self, connection: Connection, spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None
    ) -> None:
        """Bind the connection; ``spawn`` (a task group's ``start_soon``) runs background work."""
        self._conn = connection
        self._spawn = spawn
        if self._warm_when_attached and spawn is not None:
            self._warm_when_attached = False
            spawn(_warm_up)

    @property
    def store(self) -> SessionStore:
        if self._store is None:
            from ._store import SessionStore

            self._store = SessionStore(self.home / "sessions")
        return self._store

    # --- the Handler protocol --------------------------------------------------------------------

    async def handle_request(self, method: str, params: Any, ctx: RequestContext) -> Any:
        if method == "initialize":
            return await self._initialize(params)
        if method not in _METHODS:
            raise RpcError.method_not_found(method)
        if not self._initialized:
            raise RpcError.invalid_request("not initialized: send initialize first")
        if method == "session/prompt":
            return await self._prompt(params, ctx)
        # The other methods are short: finish them (also at end of input) rather than answer -32800.
        ctx.on_cancel_request(_finish_anyway)
        if method == "session/new":
            return await self._new(params, ctx)
        if method == "session/load":
            return await self._load(params, ctx, replay=True)
        if method == "session/resume":
            return await self._load(params, ctx, replay=False)
        if method == "session/list":
            return await self._list(params)
        if method == "session/close":
            return await self._close(params)
        if method == "session/delete":
            return await self._delete(params)
        if method == "session/set_mode":
            return await self._set_mode(params)
        if method == "session/set_config_option":
            return await self._set_config_option(params)
        return await self._authenticate(params)

    async def handle_notification(self, method: str, params: Any) -> None:
        if method != "session/cancel" or not self._initialized:
            return  # unknown notifications are ignored
        fields: dict[str, Any] = params if isinstance(params, dict) else {}  # pyright: ignore[reportUnknownVariableType]
        session_id = fields.get("sessionId")
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
        if session is None:
            log.debug("session/cancel for unknown session %r ignored", session_id)
            return
        session.cancel(sequence=self._conn.sequence if self._conn is not None else None)

    @property
    def watching(self) -> bool:
        """Whether some opening response is awaited (``response_written`` wants to hear of it)."""
        return bool(self._opening)

    def response_written(self, request_id: Any) -> None:
        """Called by the stdio wrapper once the response to ``request_id`` is on the wire."""
        callback = self._opening.pop(request_id, None)
        if callback is not None:
            callback()

    async def aclose(self) -> None:
        """Close every session (cancels running turns; frees their resources)."""
        sessions, self.sessions = list(self.sessions.values()), {}
        async with anyio.create_task_group() as tg:
            for session in sessions:
                tg.start_soon(session.close)

    # --- initialize / authenticate ----------------------------------------------------------------

    async def _initialize(self, params: Any) -> dict[str, Any]:
        from .._early import initialize_result
        from ..models import how_to_configure

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
        caps = params.get("clientCapabilities")
        self.client_capabilities = dict(caps) if isinstance(caps, dict) else {}  # pyright: ignore[reportUnknownArgumentType]
        first = not self._initialized
        self._initialized = True
        if first:
            if self._spawn is not None:
                self._spawn(_warm_up)
            else:
                self._warm_when_attached = True

    async def _authenticate(self, params: Any) -> dict[str, Any]:
        from ..protocol.models import AuthenticateRequest

        req = AuthenticateRequest.model_validate(params)
        if req.method_id != _AUTH_METHOD_ID:
            raise RpcError.invalid_params(f"invalid params: methodId: unknown auth method {req.method_id!r}")
        if not self.settings.configured and self._model is None:
            from ..models import how_to_configure

            raise RpcError.auth_required(how_to_configure())
        return {}

    # --- sessions ---------------------------------------------------------------------------------

    def _session(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is None:
            raise RpcError.not_found(f"session not found: {session_id}", uri=session_id)
        return session

    async def _new(self, params: Any, ctx: RequestContext) -> Any:
        from ..protocol.models import NewSessionRequest, NewSessionResponse
        from ._store import SessionMeta, now_iso

        req = NewSessionRequest.model_validate(params)
        cwd, dirs = _check_roots(req.cwd, req.additional_directories)
        servers = _kept_servers(req.mcp_servers)
        now = now_iso()
        meta = SessionMeta(f"sess_{uuid.uuid4().hex}", cwd, now, now, None, dirs, servers)
        session = await self._open(meta, [], ctx)
        await self.store.save_meta(meta)
        log.info("session %s created in %s", session.id, cwd)
        return NewSessionResponse.model_validate({"sessionId": session.id, **_controls_state(session)})

    async def _load(self, params: Any, ctx: RequestContext, *, replay: bool) -> Any:
        from ..protocol.models import LoadSessionRequest, ResumeSessionRequest

        req = (LoadSessionRequest if replay else ResumeSessionRequest).model_validate(params)
        cwd, dirs = _check_roots(req.cwd, req.additional_directories)
        live = self.sessions.get(req.session_id)
        if live is not None and live.busy:
            raise RpcError.invalid_request("invalid request: a prompt is running on this session")
        meta = await self.store.load_meta(req.session_id)
        if meta is None:
            raise RpcError.not_found(f"session not found: {req.session_id}", uri=req.session_id)
        if live is not None and not replay:
            live.opened.set()
            return _controls_state(live)
        if live is not None:
            await live.close()
            self.sessions.pop(req.session_id, None)
        servers = _kept_servers(req.mcp_servers or [])
        meta = meta.touched(cwd=cwd, additional_directories=dirs, mcp_servers=servers)
        history = await self.store.load_messages(meta.id)
        session = await self._open(meta, history, ctx)
        await self.store.save_meta(meta)
        if replay:
            await session.replay()
        log.info("session %s %s (%d messages)", meta.id, "loaded" if replay else "resumed", len(history))
        return _controls_state(session)

    async def _open(self, meta: SessionMeta, history: list[Any], ctx: RequestContext) -> Session:
        from ._session import Session
        from ._setup import SessionEnvironment, default_factory

        assert self._conn is not None, "attach() the connection first"
        env = SessionEnvironment(
            session_id=meta.id,
            cwd=Path(meta.cwd),
            additional_directories=tuple(Path(d) for d in meta.additional_directories),
            mcp_servers=meta.mcp_servers,
            client_capabilities=self.client_capabilities,
            connection=self._conn,
            home=self.home,
            spawn=self._spawn,
        )
        factory = self._factory or default_factory
        setup = await factory(env)
        session = Session(meta, env, setup, self.store, history, self._get_model, self._conn)
        self.sessions[meta.id] = session
        self._opening[ctx.request_id] = session.opened.set
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

    async def _prompt(self, params: Any, ctx: RequestContext) -> Any:
        from ..protocol.models import PromptRequest, PromptResponse

        req = PromptRequest.model_validate(params)
        session = self._session(req.session_id)
        stop = await session.prompt(req.prompt, ctx)
        return PromptResponse(stop_reason=stop)  # pyright: ignore[reportArgumentType]

    async def _set_mode(self, params: Any) -> dict[str, Any]:
        from ..protocol.models import SetSessionModeRequest

        req = SetSessionModeRequest.model_validate(params)
        controls = self._session(req.session_id).setup.controls
        if controls is None:
            raise RpcError.invalid_params("invalid params: this session has no modes")
        await controls.set_mode(req.mode_id)
        return {}

    async def _set_config_option(self, params: Any) -> dict[str, Any]:
        from ..protocol.models import SetSessionConfigOptionRequest

        req = SetSessionConfigOptionRequest.model_validate(params)
        controls = self._session(req.session_id).setup.controls
        if controls is None:
            raise RpcError.invalid_params("invalid params: this session has no config options")
        return {"configOptions": await controls.set_config_option(req.config_id, req.value)}

    async def _list(self, params: Any) -> Any:
        from ..protocol.models import ListSessionsRequest, ListSessionsResponse, SessionInfo

        req = ListSessionsRequest.model_validate(params if params is not None else {})
        wanted = _absolute_or_none(req.cwd)
        offset = _decode_cursor(req.cursor) if req.cursor is not None else 0
        metas = await self.store.list()
        for live in self.sessions.values():  # in-memory state is newer than disk mid-turn
            metas = [live.meta if m.id == live.id else m for m in metas]
        if wanted is not None:
            metas = [m for m in metas if _normalised(m.cwd) == wanted]
        metas.sort(key=lambda m: (m.updated_at, m.id), reverse=True)
        page = metas[offset : offset + PAGE_SIZE]
        more = offset + PAGE_SIZE < len(metas)
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=m.id,
                    cwd=m.cwd,
                    title=m.title,
                    updated_at=m.updated_at,
                    additional_directories=list(m.additional_directories) or None,
                )
                for m in page
            ],
            next_cursor=_encode_cursor(offset + PAGE_SIZE) if more else None,
        )

    async def _close(self, params: Any) -> dict[str, Any]:
        from ..protocol.models import CloseSessionRequest

        req = CloseSessionRequest.model_validate(params)
        session = self.sessions.pop(req.session_id, None)
        if session is None:
            await self._closed_fully(req.session_id)
            if await self.store.load_meta(req.session_id) is None:
                raise RpcError.not_found(f"session not found: {req.session_id}", uri=req.session_id)
            return {}
        await self._close_session(session)
        return {}

    async def _close_session(self, session: Session) -> None:
        """Close a session that left the live table; until its turn has ended and its last step is on
        disk, a delete (or load) of the same id waits for it."""
        done = anyio.Event()
        self._closing[session.id] = done
        try:
            await session.close()
        finally:
            self._closing.pop(session.id, None)
            done.set()

    async def _closed_fully(self, session_id: str) -> None:
        done = self._closing.get(session_id)
        if done is not None:
            await done.wait()

    async def _delete(self, params: Any) -> dict[str, Any]:
        from ..protocol.models import DeleteSessionRequest

        req = DeleteSessionRequest.model_validate(params)
        session = self.sessions.pop(req.session_id, None)
        if session is not None:
            await self._close_session(session)
        await self._closed_fully(req.session_id)
        await self.store.delete(req.session_id)
        return {}

    # --- the model --------------------------------------------------------------------------------

    async def _get_model(self) -> Model:
        if self._model is not None:
            return self._model
        if self._model_lock is None:
            self._model_lock = anyio.Lock()
        async with self._model_lock:
            if self._model is None:
                from ..models import ModelConfigError, build_model

                if self.settings.provider is None:
                    from ..models import how_to_configure

                    raise RpcError.auth_required(how_to_configure())
                try:
                    # Providers import httpx2 and more: off the event loop.
                    self._model = await anyio.to_thread.run_sync(build_model, self.settings)
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


def _controls_state(session: Session) -> dict[str, Any]:
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


def _normalised(path: str) -> str:
    return os.path.normpath(path)


def _absolute_or_none(cwd: str | None) -> str | None:
    if cwd is None:
        return None
    if not os.path.isabs(cwd):
        raise RpcError.invalid_params("invalid params: cwd: must be an absolute path")
    return os.path.normpath(cwd)


def _check_roots(cwd: str, dirs: list[str] | None) -> tuple[str, tuple[str, ...]]:
    if not os.path.isabs(cwd):
        raise RpcError.invalid_params("invalid params: cwd: must be an absolute path")
    for i, d in enumerate(dirs or []):
        if not os.path.isabs(d):
            raise RpcError.invalid_params(
                f"invalid params: additionalDirectories.{i}: must be an absolute path"
            )
    return os.path.normpath(cwd), tuple(os.path.normpath(d) for d in dirs or [])


def _kept_servers(servers: list[Any]) -> tuple[dict[str, Any], ...]:
    from ..protocol.models import McpServerUnknown, dump

    kept: list[dict[str, Any]] = []
    for server in servers:
        if isinstance(server, McpServerUnknown):
            log.warning("MCP server %r of unsupported type %r skipped", server.name, server.type)
            continue
        kept.append(dump(server))
    return tuple(kept)


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


def _decode_cursor(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        if not text.startswith("o:"):
            raise ValueError(cursor)
        offset = int(text[2:])
        if offset < 0:
            raise ValueError(cursor)
        return offset
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise RpcError.invalid_params("invalid params: cursor: not a cursor this agent gave out") from None
