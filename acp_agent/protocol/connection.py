"""JSON-RPC 2.0 over newline-delimited JSON on anyio byte streams: the ACP transport.

API (stable; the session layer builds on it):

    conn = Connection(receive, send, handler)       # anyio ByteReceiveStream / ByteSendStream
    await conn.serve()                              # returns after EOF (see "End of input")
    async with conn.run(): ...                      # serve() in the background; close() on exit
    result = await conn.request(method, params, timeout=None)   # agent -> client request
    await conn.notify(method, params)               # agent -> client notification
    conn.close()                                    # stop reading; same shutdown as EOF

`handler` implements `Handler`: `handle_request(method, params, ctx)` returns the result (a pydantic
model is dumped with `dump`, `None` becomes `{}`) or raises; any exception is mapped to an error by
`errors.error_from_exception`; for a method it does not serve it raises `RpcError.method_not_found(method)`.
`handle_notification(method, params)` returns nothing; for a method it does not know it should simply
return (or raise `RpcError.method_not_found`, logged at debug). `params` are the raw decoded JSON (`dict`,
`list` or `None`); the handler validates them. The connection only routes: gating ("not initialized") and
method tables belong to the handler.

Concurrency:
- every inbound request runs in its own task in the connection's task group, so a slow request never
  blocks the read loop or other requests;
- notifications run INLINE in the read loop, in arrival order, so `session/cancel` takes effect before
  the next line is read. Notification handlers must therefore be quick and must never await a client
  response (`request()` from a notification handler would deadlock): spawn work elsewhere if needed;
- responses to our own requests are resolved inline.

Cancellation:
- `$/cancel_request {requestId}` from the client calls `RequestContext` cancellation: by default the
  handler's cancel scope is cancelled and the request answered `-32800`; a handler that registered
  `ctx.on_cancel_request(callback)` gets the callback instead and answers normally (e.g. a prompt turn
  ending with `stopReason: "cancelled"`); a request the handler marked `ctx.cancellable = False` (a short
  one) only notes it and answers as usual. Exactly one answer per request either way; a request that
  already finished keeps its answer; unknown ids are ignored.
- cancelling the caller of `request()` (or its `timeout` expiring) sends `$/cancel_request` with that id
  to the client, then re-raises.

Framing and bad input (`_reader`; its debug trace, which never holds credentials, is `_trace`): one JSON
value per line, `\\r\\n` and blank lines tolerated, lines up to `max_line_bytes` (256 MiB default). Invalid
JSON -> `-32700` (id null); a non-object value or an object that is neither request, notification nor
response -> `-32600` (id echoed when readable); an empty batch `[]` -> one `-32600`; a non-empty batch is
answered with one array of the responses of its requests (none if it held only notifications). Unknown `$/`
notifications and responses to unknown ids are logged at debug and ignored. Request ids are echoed exactly
(string, integer or null).

End of input (EOF, a read error, or `close()`): no more lines are read; every in-flight request that
registered a cancel callback (a running turn) is cancelled through it, as if `$/cancel_request` had arrived;
at EOF other requests (quick ones such as `session/new` sent just before EOF) run on, while `close()`
cancels them too; pending `request()` calls raise `ConnectionClosedError`; handlers get `shutdown_grace`
seconds (default 5) to finish and their answers are written if the send stream still works; then the
remaining tasks are cancelled and `serve()` returns normally. Writes after the send stream broke are dropped
(logged).

Writes (`_writer`): while serving, lines go into a bounded memory stream that one writer task drains:
everything queued goes out in one write, so a burst of updates (a streamed reply) costs one write, not one
per line; a caller waits only while the stream is full (the client reads slower than we write). A response
is written in its request's task when no earlier line is still to be written, so it reaches the wire before
the work its handler started (a session's after-open work) gets its turn. Lines never interleave, and go out
in the order they were written; each write is shielded from cancellation so a line is never cut, bounded by `write_timeout`
(after which the stream counts as broken). JSON is written with `ensure_ascii=False, separators=(",", ":"),
allow_nan=False`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final, cast

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup

from ._context import Handler, RequestContext
from ._jsonrpc import (
    CANCEL_REQUEST_METHOD,
    Invalid,
    JsonDict,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    classify,
    encode,
    error_message,
    jsonable,
    result_line,
    text_chunk_line,
    valid_id,
)
from ._reader import read_values
from ._trace import trace_out
from ._writer import LineWriter
from .errors import ConnectionClosedError, RpcError, error_from_exception

__all__ = ["Connection", "Handler", "RequestContext", "RequestId"]

_log = logging.getLogger("acp_agent.protocol")

_MISSING: Final = object()

_Job = tuple[RequestContext, Any]
"""A request to run: its context and its params."""


@dataclass(slots=True, eq=False)
class _Pending:
    event: anyio.Event
    result: Any = None
    error: RpcError | None = None


class Connection:
    """One JSON-RPC peer connection; see the module docstring for the exact behaviour."""

    def __init__(
        self,
        receive: ByteReceiveStream,
        send: ByteSendStream,
        handler: Handler,
        *,
        shutdown_grace: float = 5.0,
        write_timeout: float = 60.0,
        max_line_bytes: int = 256 * 1024 * 1024,
    ) -> None:
        self._receive = receive
        self._handler = handler
        self._shutdown_grace = shutdown_grace
        self._max_line_bytes = max_line_bytes
        self._inflight: dict[RequestId, RequestContext] = {}
        self._sequence = 0
        self._pending: dict[int, _Pending] = {}
        self._next_id = 0
        self._active = 0
        self._serving = False
        self._closed = False
        self._close_requested = False
        self._out = LineWriter(send, write_timeout=write_timeout)
        self._idle: anyio.Event | None = None  # anyio primitives need a running event loop
        self._read_scope: anyio.CancelScope | None = None
        self._tg: TaskGroup | None = None

    # --- public API --------------------------------------------------------------------------

    @property
    def sequence(self) -> int:
        """How many requests and notifications were read so far. While a notification is handled, it is
        that notification's place: a request whose ``ctx.sequence`` is lower was read before it (even if
        its handler has not started yet), which lets ``session/cancel`` reach a prompt still queued."""
        return self._sequence

    @property
    def closed(self) -> bool:
        """True once input ended (EOF or `close()`): no more requests will be read."""
        return self._closed

    async def serve(self) -> None:
        """Read and dispatch until EOF or `close()`, then shut down (module docstring) and return."""
        if self._serving:
            raise RuntimeError("Connection.serve() is already running")
        self._serving = True
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                self._out.start(tg)
                with anyio.CancelScope() as self._read_scope:
                    if not self._close_requested:
                        await self._read_loop()
                await self._shutdown(everything=self._close_requested)
                await self._out.drain()
                tg.cancel_scope.cancel()
        finally:
            self._out.close()  # also when serve() itself was cancelled

    @asynccontextmanager
    async def run(self) -> AsyncGenerator[Connection]:
        """Serve in the background for the duration of the block; on exit `close()` and wait for the
        shutdown to finish."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.serve)
            try:
                yield self
            finally:
                self.close()

    def close(self) -> None:
        """Stop reading input; the connection then shuts down as on EOF."""
        self._close_requested = True
        if self._read_scope is not None:
            self._read_scope.cancel()

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (`params` may be a pydantic model). Dropped with a log if the send
        stream is broken."""
        message: JsonDict = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = jsonable(params)
        await self._write_message(message)

    async def notify_text_chunk(self, session_id: str, text: str, message_id: str) -> None:
        """``notify("session/update", ...)`` of an ``agent_message_chunk`` of ``text`` (of the message
        ``message_id``), the same bytes, encoded without the general encoder: the hot path of a streamed
        reply."""
        await self._write_bytes(text_chunk_line(session_id, text, message_id))

    def queue_text_chunk(self, session_id: str, text: str, message_id: str) -> bool:
        """``notify_text_chunk`` when its line can be queued without waiting (no coroutine: three fewer
        per streamed delta); False when not, and nothing was sent: then await ``notify_text_chunk``."""
        data = text_chunk_line(session_id, text, message_id)
        if not self._out.write_nowait(data):
            return False
        trace_out(data)
        return True

    async def request(self, method: str, params: Any = None, *, timeout: float | None = None) -> Any:
        """Send a request to the client and return its `result` (raw JSON).

        Raises `RpcError` if the client answers with an error, `ConnectionClosedError` if the
        connection ends first, `TimeoutError` after `timeout` seconds. On timeout or cancellation of
        the caller, `$/cancel_request` is sent for the id before re-raising.
        """
        if self._closed or self._out.broken:
            raise ConnectionClosedError()
        request_id = self._next_id
        self._next_id += 1
        pending = _Pending(anyio.Event())
        self._pending[request_id] = pending
        try:
            message: JsonDict = {"jsonrpc": "2.0", "id": request_id, "method": method}
            if params is not None:
                message["params"] = jsonable(params)
            if not await self._write_message(message):
                raise ConnectionClosedError()
            try:
                with anyio.fail_after(timeout):
                    await pending.event.wait()
            except BaseException:
                if not pending.event.is_set():
                    with anyio.CancelScope(shield=True), anyio.move_on_after(self._shutdown_grace):
                        await self.notify(CANCEL_REQUEST_METHOD, {"requestId": request_id})
                raise
        finally:
            self._pending.pop(request_id, None)
        if pending.error is not None:
            raise pending.error
        return pending.result

    # --- reading -----------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        await read_values(
            self._receive,
            max_line_bytes=self._max_line_bytes,
            on_value=self._handle_value,
            on_error=self._reject,
        )

    async def _reject(self, error: RpcError) -> None:
        await self._write_message(error_message(None, error))

    async def _handle_value(self, decoded: Any) -> None:
        if isinstance(decoded, list):
            await self._handle_batch(cast(list[Any], decoded))
            return
        outcome = await self._accept(classify(decoded))
        if isinstance(outcome, tuple):
            self._spawn(self._run_request, *outcome)
        elif outcome is not None:
            await self._write_message(outcome)

    async def _handle_batch(self, items: list[Any]) -> None:
        if not items:
            await self._write_message(
                error_message(None, RpcError.invalid_request("invalid request: empty batch"))
            )
            return
        ready: list[JsonDict] = []
        jobs: list[_Job] = []
        for item in items:
            outcome = await self._accept(classify(item))
            if isinstance(outcome, tuple):
                jobs.append(outcome)
            elif outcome is not None:
                ready.append(outcome)
        if jobs:
            self._spawn(self._run_batch, ready, jobs)
        elif ready:
            await self._write_message(ready)

    async def _accept(self, message: Message) -> _Job | JsonDict | None:
        """Act on one message: a request to run, the error to answer at once, or nothing to answer."""
        match message:
            case Request():
                return self._register(message)
            case Notification():
                await self._on_notification(message)
            case Response():
                self._on_response(message)
            case Invalid():
                return error_message(message.id, RpcError.invalid_request(message.message))
            case None:
                pass
        return None

    def _register(self, message: Request) -> _Job | JsonDict:
        """A new inbound request to run, or the error to answer it with at once."""
        if message.method.startswith("$/"):
            return error_message(message.id, RpcError.method_not_found(message.method))
        if message.id in self._inflight:
            return error_message(message.id, RpcError.invalid_request("invalid request: duplicate id"))
        self._sequence += 1
        ctx = RequestContext(message.id, message.method, anyio.CancelScope(), self._sequence)
        self._inflight[message.id] = ctx
        return ctx, message.params

    async def _on_notification(self, message: Notification) -> None:
        if message.method == CANCEL_REQUEST_METHOD:
            params: Any = message.params
            if isinstance(params, dict) and "requestId" in params:
                request_id: Any = cast(JsonDict, params)["requestId"]
                ctx = self._inflight.get(request_id) if valid_id(request_id) else None
                if ctx is not None:
                    _log.debug("client cancelled request %r", request_id)
                    ctx._request_cancel()  # pyright: ignore[reportPrivateUsage]
                    return
            _log.debug("ignoring %s for no running request", CANCEL_REQUEST_METHOD)
            return
        if message.method.startswith("$/"):
            _log.debug("ignoring protocol notification %s", message.method)
            return
        self._sequence += 1
        try:
            await self._handler.handle_notification(message.method, message.params)
        except RpcError as exc:
            level = logging.DEBUG if exc.code == -32601 else logging.WARNING
            _log.log(level, "notification %s failed: %s", message.method, exc.message)
        except Exception:
            _log.exception("notification handler for %s failed", message.method)

    def _on_response(self, message: Response) -> None:
        request_id = message.id
        pending = (
            self._pending.get(request_id)
            if isinstance(request_id, int) and not isinstance(request_id, bool)
            else None
        )
        if pending is None or pending.event.is_set():
            _log.debug("ignoring a response to unknown id %r", request_id)
            return
        body = message.message
        if "error" in body:
            pending.error = RpcError.from_dict(body["error"])
        else:
            pending.result = body.get("result")
        pending.event.set()

    # --- running handlers --------------------------------------------------------------------

    def _spawn(self, func: Callable[..., Awaitable[None]], *args: Any) -> None:
        assert self._tg is not None
        if self._active == 0 or self._idle is None:
            self._idle = anyio.Event()
        self._active += 1
        self._tg.start_soon(self._tracked, func, args)

    async def _tracked(self, func: Callable[..., Awaitable[None]], args: tuple[Any, ...]) -> None:
        try:
            await func(*args)
        finally:
            self._active -= 1
            if self._active == 0 and self._idle is not None:
                self._idle.set()

    async def _run_request(self, ctx: RequestContext, params: Any) -> None:
        response, line = await self._execute(ctx, params)
        if line is not None:
            await self._write_bytes(line, at_once=True)
        else:
            await self._write_message(response, at_once=True)

    async def _run_batch(self, ready: list[JsonDict], jobs: list[_Job]) -> None:
        answers: list[JsonDict] = list(ready)

        async def run_one(ctx: RequestContext, params: Any) -> None:
            answers.append((await self._execute(ctx, params))[0])

        async with anyio.create_task_group() as tg:
            for ctx, params in jobs:
                tg.start_soon(run_one, ctx, params)
        await self._write_message(answers)

    async def _execute(self, ctx: RequestContext, params: Any) -> tuple[JsonDict, bytes | None]:
        """Run the handler; always returns the one response for the request, and its line when a result
        was encoded already (it is encoded before the answer is chosen: one that is not JSON is -32603)."""
        response: JsonDict | None = None
        line: bytes | None = None
        try:
            with ctx._scope:  # pyright: ignore[reportPrivateUsage]
                try:
                    result = await self._handler.handle_request(ctx.method, params, ctx)
                    # ACP results are objects: an empty result is `{}`, never `null`
                    value: Any = {} if result is None else jsonable(result)
                    line = result_line(ctx.request_id, value)
                    response = {"jsonrpc": "2.0", "id": ctx.request_id, "result": value}
                except Exception as exc:
                    response = error_message(ctx.request_id, error_from_exception(exc))
        finally:
            if self._inflight.get(ctx.request_id) is ctx:
                del self._inflight[ctx.request_id]
        if response is None:  # our own cancel scope was cancelled: $/cancel_request or shutdown
            return error_message(ctx.request_id, RpcError.request_cancelled()), None
        return response, line

    # --- writing -----------------------------------------------------------------------------

    async def _write_message(self, message: JsonDict | list[JsonDict], *, at_once: bool = False) -> bool:
        """Write one line (``at_once``: ``LineWriter.write_at_once``); False if the send stream is (or just
        became) unusable."""
        try:
            data = encode(message)
        except (TypeError, ValueError) as exc:
            _log.error("cannot encode an outgoing message: %s", exc)
            request_id = message.get("id", _MISSING) if isinstance(message, dict) else _MISSING
            if request_id is _MISSING or "method" in message:
                return False
            data = encode(error_message(cast(RequestId, request_id), RpcError.internal_error()))
        return await self._write_bytes(data, at_once=at_once)

    async def _write_bytes(self, data: bytes, *, at_once: bool = False) -> bool:
        if not self._out.broken:
            trace_out(data)
        return await (self._out.write_at_once(data) if at_once else self._out.write(data))

    # --- shutdown ----------------------------------------------------------------------------

    async def _shutdown(self, *, everything: bool) -> None:
        self._closed = True
        for ctx in list(self._inflight.values()):
            # At EOF, turns (which registered a callback) end now and a request already being served
            # finishes; an explicit close() cancels everything.
            if everything or ctx._cancel_callback is not None:  # pyright: ignore[reportPrivateUsage]
                ctx._request_cancel()  # pyright: ignore[reportPrivateUsage]
        for pending in self._pending.values():
            if not pending.event.is_set():
                pending.error = ConnectionClosedError()
                pending.event.set()
        with anyio.move_on_after(self._shutdown_grace):
            while self._active and self._idle is not None:
                await self._idle.wait()
        if self._active:
            _log.warning(
                "%d request handler(s) did not finish within %.1f s; cancelling",
                self._active,
                self._shutdown_grace,
            )
