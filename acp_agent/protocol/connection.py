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
`errors.error_from_exception`; for a method it does not serve it raises `RpcError.method_not_found(method)`. `handle_notification(method, params)` returns nothing; for a method it does
not know it should simply return (or raise `RpcError.method_not_found`, logged at debug). `params` are
the raw decoded JSON (`dict`, `list` or `None`); the handler validates them. The connection only routes:
gating ("not initialized") and method tables belong to the handler.

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
  ending with `stopReason: "cancelled"`). Exactly one answer per request either way; a request that
  already finished keeps its answer; unknown ids are ignored.
- cancelling the caller of `request()` (or its `timeout` expiring) sends `$/cancel_request` with that id
  to the client, then re-raises.

Framing and bad input: one JSON value per line, `\\r\\n` and blank lines tolerated, lines up to
`max_line_bytes` (256 MiB default). Invalid JSON -> `-32700` (id null); a non-object value or an object
that is neither request, notification nor response -> `-32600` (id echoed when readable); an empty batch
`[]` -> one `-32600`; a non-empty batch is answered with one array of the responses of its requests (none
if it held only notifications). Unknown `$/` notifications and responses to unknown ids are logged at
debug and ignored. Request ids are echoed exactly (string, integer or null).

End of input (EOF, a read error, or `close()`): no more lines are read; every in-flight request that
registered a cancel callback (a running turn) is cancelled through it, as if `$/cancel_request` had arrived;
at EOF other requests (quick ones such as `session/new` sent just before EOF) run on, while `close()`
cancels them too; pending `request()`
calls raise `ConnectionClosedError`; handlers get `shutdown_grace` seconds (default 5) to finish and their
answers are written if the send stream still works; then the remaining tasks are cancelled and `serve()`
returns normally. Writes after the send stream broke are dropped (logged).

Writes: one lock, so lines never interleave; each write is shielded from cancellation so a line is never
cut, bounded by `write_timeout` (after which the stream counts as broken). JSON is written with
`ensure_ascii=False, separators=(",", ":"), allow_nan=False`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeAlias, cast

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup

from .errors import ConnectionClosedError, RpcError, error_from_exception

__all__ = ["Connection", "Handler", "RequestContext", "RequestId"]

_HIGH_WATER = 1024 * 1024  # bytes buffered before a writer waits for the client to read

_log = logging.getLogger("acp_agent.protocol")

RequestId: TypeAlias = int | str | None
JsonDict: TypeAlias = dict[str, Any]

CANCEL_REQUEST_METHOD: Final = "$/cancel_request"
_LOG_LIMIT: Final = 2048
_THREAD_PARSE_BYTES: Final = 1 << 20
_MISSING: Final = object()


class RequestContext:
    """What a request handler knows about its request."""

    __slots__ = (
        "_cancel_callback",
        "_cancel_requested",
        "_scope",
        "cancellable",
        "method",
        "request_id",
        "sequence",
    )

    def __init__(
        self, request_id: RequestId, method: str, scope: anyio.CancelScope, sequence: int = 0
    ) -> None:
        self.request_id: RequestId = request_id
        self.method = method
        self.sequence = sequence
        """The request's place among the messages read (see ``Connection.sequence``)."""
        self.cancellable = True
        """False: `$/cancel_request` (and the end of input) only marks the request; it finishes and answers
        as usual (for short requests, where cancelling would only lose work). Set it before the first await."""
        self._scope = scope
        self._cancel_requested = False
        self._cancel_callback: Callable[[], None] | None = None

    @property
    def cancel_requested(self) -> bool:
        """True once the client sent `$/cancel_request` for this id (or the connection is closing)."""
        return self._cancel_requested

    def on_cancel_request(self, callback: Callable[[], None] | None) -> None:
        """Handle cancellation yourself: `callback` (sync, quick) is called instead of cancelling the
        handler's scope; the handler then still answers normally. `None` restores the default.
        Register it before the handler's first await: a cancel that arrived earlier already cancelled
        the scope."""
        self._cancel_callback = callback

    def _request_cancel(self) -> None:
        if self._cancel_requested:
            return
        self._cancel_requested = True
        if not self.cancellable:
            return
        callback = self._cancel_callback
        if callback is None:
            self._scope.cancel()
            return
        try:
            callback()
        except Exception:
            _log.exception("cancel callback of request %r failed; cancelling it", self.request_id)
            self._scope.cancel()


class Handler(Protocol):
    """The session layer's side of the connection."""

    async def handle_request(self, method: str, params: Any, ctx: RequestContext) -> Any: ...

    async def handle_notification(self, method: str, params: Any) -> None: ...


@dataclass(slots=True, eq=False)
class _Pending:
    event: anyio.Event
    result: Any = None
    error: RpcError | None = None


@dataclass(frozen=True, slots=True)
class _Request:
    id: RequestId
    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class _Notification:
    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class _Response:
    id: RequestId
    message: JsonDict


@dataclass(frozen=True, slots=True)
class _Invalid:
    id: RequestId
    message: str


_Message: TypeAlias = _Request | _Notification | _Response | _Invalid | None


def _valid_id(value: object) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _classify(msg: JsonDict) -> _Message:
    """Sort one decoded JSON object; `None` means ignore it (a response we cannot route)."""
    raw_id = msg.get("id")
    id_ok = _valid_id(raw_id)
    echo_id: RequestId = cast(RequestId, raw_id) if id_ok else None
    if "method" not in msg:
        if "result" in msg or "error" in msg:
            if "id" not in msg or not id_ok:
                _log.warning("ignoring a response without a usable id: %s", _clip(repr(msg)))
                return None
            return _Response(echo_id, msg)
        return _Invalid(echo_id, "invalid request: missing method")
    if msg.get("jsonrpc") != "2.0":
        return _Invalid(echo_id, 'invalid request: jsonrpc must be "2.0"')
    method = msg["method"]
    if not isinstance(method, str):
        return _Invalid(echo_id, "invalid request: method must be a string")
    params = msg.get("params")
    if params is not None and not isinstance(params, dict | list):
        return _Invalid(echo_id, "invalid request: params must be an object or an array")
    if "id" not in msg:
        return _Notification(method, params)
    if not id_ok:
        return _Invalid(None, "invalid request: id must be a string, an integer or null")
    return _Request(echo_id, method, params)


def _jsonable(value: Any) -> Any:
    """Pydantic models are dumped like `models.dump`; anything else is passed as is."""
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return model_dump(by_alias=True, exclude_none=True, mode="json")
    return value


def _encode(obj: Any) -> bytes:
    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:
        # Lone surrogates (e.g. from undecodable file names) cannot be UTF-8: escape them instead.
        return json.dumps(obj, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode() + b"\n"


def _error_message(request_id: RequestId, error: RpcError) -> JsonDict:
    return {"jsonrpc": "2.0", "id": request_id, "error": error.to_dict()}


def _clip(text: str) -> str:
    return text if len(text) <= _LOG_LIMIT else text[:_LOG_LIMIT] + f"... ({len(text)} chars)"


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
        self._send = send
        self._handler = handler
        self._shutdown_grace = shutdown_grace
        self._write_timeout = write_timeout
        self._max_line_bytes = max_line_bytes
        self._inflight: dict[RequestId, RequestContext] = {}
        self._sequence = 0
        self._pending: dict[int, _Pending] = {}
        self._next_id = 0
        self._active = 0
        self._serving = False
        self._closed = False
        self._close_requested = False
        self._send_broken = False
        # anyio primitives need a running event loop: created on first use.
        self._write_lock: anyio.Lock | None = None
        # While serving, lines go to an output buffer that one writer task drains: a burst of updates
        # (a streamed reply) becomes one write instead of one shielded write per line.
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._writer_running = False
        self._writer_wake: anyio.Event | None = None
        self._queued = 0
        self._written = 0
        self._progress: anyio.Event | None = None
        self._space: anyio.Event | None = None
        self._idle: anyio.Event | None = None
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
        async with anyio.create_task_group() as tg:
            self._tg = tg
            self._writer_running = True
            tg.start_soon(self._writer)
            with anyio.CancelScope() as self._read_scope:
                if not self._close_requested:
                    await self._read_loop()
            await self._shutdown(everything=self._close_requested)
            await self._drain_output()
            self._writer_running = False
            tg.cancel_scope.cancel()

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
            message["params"] = _jsonable(params)
        await self._write_message(message)

    async def request(self, method: str, params: Any = None, *, timeout: float | None = None) -> Any:
        """Send a request to the client and return its `result` (raw JSON).

        Raises `RpcError` if the client answers with an error, `ConnectionClosedError` if the
        connection ends first, `TimeoutError` after `timeout` seconds. On timeout or cancellation of
        the caller, `$/cancel_request` is sent for the id before re-raising.
        """
        if self._closed or self._send_broken:
            raise ConnectionClosedError()
        request_id = self._next_id
        self._next_id += 1
        pending = _Pending(anyio.Event())
        self._pending[request_id] = pending
        try:
            message: JsonDict = {"jsonrpc": "2.0", "id": request_id, "method": method}
            if params is not None:
                message["params"] = _jsonable(params)
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
        buffer = bytearray()
        scan_from = 0
        discarding = False  # inside an over-long line: skip to its newline
        while True:
            try:
                chunk = await self._receive.receive()
            except anyio.EndOfStream:
                _log.debug("end of input")
                break
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
                _log.warning("input failed (%s); treating it as end of input", exc)
                break
            if discarding:
                newline = chunk.find(b"\n")
                if newline < 0:
                    continue
                chunk = chunk[newline + 1 :]
                discarding = False
            buffer += chunk
            while True:
                newline = buffer.find(b"\n", scan_from)
                if newline < 0:
                    scan_from = len(buffer)
                    if len(buffer) > self._max_line_bytes:
                        _log.warning("input line longer than %d bytes dropped", self._max_line_bytes)
                        buffer.clear()
                        scan_from = 0
                        discarding = True
                        await self._write_message(
                            _error_message(None, RpcError.parse_error("parse error: line too long"))
                        )
                    break
                with memoryview(buffer) as view:
                    line = bytes(view[:newline])
                del buffer[: newline + 1]
                scan_from = 0
                await self._handle_line(line)
        if buffer and not discarding:
            await self._handle_line(bytes(buffer))  # a last line without its newline

    async def _handle_line(self, line: bytes) -> None:
        if not line or line.isspace():
            return
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug("<- %s", _clip(line[: _LOG_LIMIT + 1].decode("utf-8", "replace")))
        try:
            if len(line) > _THREAD_PARSE_BYTES:
                decoded: Any = await anyio.to_thread.run_sync(json.loads, line)
            else:
                decoded = json.loads(line)
        except (ValueError, RecursionError) as exc:
            _log.debug("unparsable input line: %s", exc)
            await self._write_message(_error_message(None, RpcError.parse_error()))
            return
        if isinstance(decoded, list):
            await self._handle_batch(cast(list[Any], decoded))
            return
        if not isinstance(decoded, dict):
            await self._write_message(
                _error_message(None, RpcError.invalid_request("invalid request: expected an object"))
            )
            return
        message = _classify(cast(JsonDict, decoded))
        match message:
            case _Request():
                ctx = self._register(message)
                if isinstance(ctx, RequestContext):
                    self._spawn(self._run_request, ctx, message.params)
                else:
                    await self._write_message(ctx)
            case _Notification():
                await self._on_notification(message)
            case _Response():
                self._on_response(message)
            case _Invalid():
                await self._write_message(
                    _error_message(message.id, RpcError.invalid_request(message.message))
                )
            case None:
                pass

    async def _handle_batch(self, items: list[Any]) -> None:
        if not items:
            await self._write_message(
                _error_message(None, RpcError.invalid_request("invalid request: empty batch"))
            )
            return
        ready: list[JsonDict] = []
        jobs: list[tuple[RequestContext, Any]] = []
        for item in items:
            message = _classify(cast(JsonDict, item)) if isinstance(item, dict) else _Invalid(None, "")
            match message:
                case _Request():
                    ctx = self._register(message)
                    if isinstance(ctx, RequestContext):
                        jobs.append((ctx, message.params))
                    else:
                        ready.append(ctx)
                case _Notification():
                    await self._on_notification(message)
                case _Response():
                    self._on_response(message)
                case _Invalid():
                    text = message.message or "invalid request: expected an object"
                    ready.append(_error_message(message.id, RpcError.invalid_request(text)))
                case None:
                    pass
        if jobs:
            self._spawn(self._run_batch, ready, jobs)
        elif ready:
            await self._write_message(ready)

    def _register(self, message: _Request) -> RequestContext | JsonDict:
        """A context for a new inbound request, or the error to answer it with at once."""
        if message.method.startswith("$/"):
            return _error_message(message.id, RpcError.method_not_found(message.method))
        if message.id in self._inflight:
            return _error_message(message.id, RpcError.invalid_request("invalid request: duplicate id"))
        self._sequence += 1
        ctx = RequestContext(message.id, message.method, anyio.CancelScope(), self._sequence)
        self._inflight[message.id] = ctx
        return ctx

    async def _on_notification(self, message: _Notification) -> None:
        if message.method == CANCEL_REQUEST_METHOD:
            params: Any = message.params
            if isinstance(params, dict) and "requestId" in params:
                request_id: Any = cast(JsonDict, params)["requestId"]
                ctx = self._inflight.get(request_id) if _valid_id(request_id) else None
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

    def _on_response(self, message: _Response) -> None:
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
        await self._write_message(await self._execute(ctx, params))

    async def _run_batch(self, ready: list[JsonDict], jobs: list[tuple[RequestContext, Any]]) -> None:
        answers: list[JsonDict] = list(ready)

        async def run_one(ctx: RequestContext, params: Any) -> None:
            answers.append(await self._execute(ctx, params))

        async with anyio.create_task_group() as tg:
            for ctx, params in jobs:
                tg.start_soon(run_one, ctx, params)
        await self._write_message(answers)

    async def _execute(self, ctx: RequestContext, params: Any) -> JsonDict:
        """Run the handler; always returns the one response for the request."""
        response: JsonDict | None = None
        try:
            with ctx._scope:  # pyright: ignore[reportPrivateUsage]
                try:
                    result = await self._handler.handle_request(ctx.method, params, ctx)
                    response = {"jsonrpc": "2.0", "id": ctx.request_id, "result": self._result_json(result)}
                except Exception as exc:
                    response = _error_message(ctx.request_id, error_from_exception(exc))
        finally:
            if self._inflight.get(ctx.request_id) is ctx:
                del self._inflight[ctx.request_id]
        if response is None:  # our own cancel scope was cancelled: $/cancel_request or shutdown
            response = _error_message(ctx.request_id, RpcError.request_cancelled())
        return response

    @staticmethod
    def _result_json(result: Any) -> Any:
        if result is None:
            return {}  # ACP results are objects: an empty result is `{}`, never `null`
        value = _jsonable(result)
        _encode(value)  # fail here (-> -32603) rather than at write time
        return value

    # --- writing -----------------------------------------------------------------------------

    async def _write_message(self, message: JsonDict | list[JsonDict]) -> bool:
        """Write one line; False if the send stream is (or just became) unusable."""
        try:
            data = _encode(message)
        except (TypeError, ValueError) as exc:
            _log.error("cannot encode an outgoing message: %s", exc)
            request_id = message.get("id", _MISSING) if isinstance(message, dict) else _MISSING
            if request_id is _MISSING or "method" in message:
                return False
            data = _encode(_error_message(cast(RequestId, request_id), RpcError.internal_error()))
        return await self._write_bytes(data)

    async def _write_bytes(self, data: bytes) -> bool:
        if self._send_broken:
            _log.debug("dropping an outgoing line: send stream unusable")
            return False
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug("-> %s", _clip(data[: _LOG_LIMIT + 1].decode("utf-8", "replace").rstrip("\n")))
        if self._writer_running:
            # Buffered: order is the order of the calls; the caller waits only when the buffer is full.
            self._out.append(data)
            self._out_bytes += len(data)
            self._queued += 1
            if self._writer_wake is not None:
                self._writer_wake.set()
            while self._out_bytes > _HIGH_WATER and not self._send_broken and self._writer_running:
                if self._space is None or self._space.is_set():
                    self._space = anyio.Event()
                await self._space.wait()
            return not self._send_broken
        return await self._write_now(data)

    async def _writer(self) -> None:
        """Drain the output buffer: everything queued so far goes out in one shielded write."""
        while True:
            if not self._out:
                self._writer_wake = anyio.Event()
                await self._writer_wake.wait()
                continue
            chunks, self._out, self._out_bytes = self._out, [], 0
            if self._space is not None:
                self._space.set()
            await self._write_now(b"".join(chunks))
            self._written += len(chunks)
            progress, self._progress = self._progress, None
            if progress is not None:
                progress.set()

    async def _drain_output(self) -> None:
        """Wait (bounded by the write timeout) until the writer has written everything queued."""
        with anyio.move_on_after(self._write_timeout):
            while self._written < self._queued and not self._send_broken:
                if self._progress is None:
                    self._progress = anyio.Event()
                await self._progress.wait()

    async def _write_now(self, data: bytes) -> bool:
        if self._send_broken:
            return False
        if self._write_lock is None:
            self._write_lock = anyio.Lock()
        async with self._write_lock:
            if self._send_broken:
                return False
            # Shielded: a cancelled writer must not leave half a line on the stream.
            with anyio.CancelScope(shield=True):
                with anyio.move_on_after(self._write_timeout) as timeout:
                    try:
                        await self._send.send(data)
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                        _log.warning("output failed (%s); dropping further output", exc)
                        self._send_broken = True
                        return False
                if timeout.cancelled_caught:
                    _log.warning("output blocked for %.0f s; dropping further output", self._write_timeout)
                    self._send_broken = True
                    return False
        return True

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
