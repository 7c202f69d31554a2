"""The HTTP clients of the providers: one per origin and event loop, shared by every model that talks to it.

Models on one event loop that talk to the same origin with the same timeouts share one
``httpx2.AsyncClient`` (its connection pool: a later session's first request reuses an open connection); the
last model to close closes it, unless the application keeps idle clients for the life of the process
(``keep_idle_clients``). A model given its own ``transport`` (tests) gets a private client. httpx2 itself is
imported in a worker thread when the first client is made. The certificate store is loaded once per
process, in a worker thread, and only for ``https://`` origins; an ``http://`` origin gets a context with
no certificates, so a TLS connection from its client cannot verify and fails closed. Requests carry their
own auth headers: nothing but the connections (and a server's cookies) is shared.
"""

from __future__ import annotations

import importlib
import ssl
import sys
import threading
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

if TYPE_CHECKING:
    import httpx2

__all__ = ["HttpConfig", "keep_idle_clients", "shared_clients"]

_ClientKey = tuple[str, float, float]
"""(origin, connect timeout, idle timeout)."""


class _Shared:
    """One client and how many ``HttpConfig``s hold it."""

    __slots__ = ("client", "users")

    def __init__(self, client: httpx2.AsyncClient) -> None:
        self.client = client
        self.users = 0


_CLIENTS: RunVar[dict[_ClientKey, _Shared]] = RunVar("harness_http_clients")
_verified: ssl.SSLContext | None = None
_verified_lock = threading.Lock()
_keep_idle = False


def keep_idle_clients(keep: bool = True) -> None:
    """Keep a shared client open when its last model closes (an application process that talks to the
    same endpoints for its whole life: the model-list request's connection serves the first prompt).
    The process's end closes them. Off by default: a library user's ``aclose`` closes the client."""
    global _keep_idle
    _keep_idle = keep


def _verified_context() -> ssl.SSLContext:
    """The process's verifying context (the system certificate store), built on first use."""
    global _verified
    with _verified_lock:
        if _verified is None:
            import httpx2

            _verified = httpx2.create_ssl_context(verify=True, trust_env=False)
        return _verified


def _unverifiable_context() -> ssl.SSLContext:
    """For ``http://`` origins: no certificates loaded, verification still required (fails closed)."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _origin(url: str) -> str:
    scheme, _, rest = url.partition("://")
    return f"{scheme.lower()}://{rest.split('/', 1)[0].lower()}"


def _pool() -> dict[_ClientKey, _Shared]:
    try:
        return _CLIENTS.get()
    except LookupError:
        clients: dict[_ClientKey, _Shared] = {}
        _CLIENTS.set(clients)
        return clients


def shared_clients() -> int:
    """How many shared clients are open on the current event loop (for tests and diagnostics)."""
    return len(_pool())


class HttpConfig:
    """Connection settings shared by the providers: timeouts (seconds), and the client for ``origin``:
    shared per event loop (see the module docstring), or private when a ``transport`` is given."""

    __slots__ = ("_held", "_private", "_transport", "connect_timeout", "idle_timeout", "origin")

    def __init__(
        self,
        *,
        connect_timeout: float = 10.0,
        idle_timeout: float = 300.0,
        transport: httpx2.AsyncBaseTransport | None = None,
        origin: str = "https://",
    ) -> None:
        self.connect_timeout = connect_timeout
        self.idle_timeout = idle_timeout
        self.origin = _origin(origin)
        self._transport = transport
        self._private: httpx2.AsyncClient | None = None
        self._held: tuple[dict[_ClientKey, _Shared], _ClientKey, _Shared] | None = None

    def _new_client(self, context: ssl.SSLContext) -> httpx2.AsyncClient:
        import httpx2

        return httpx2.AsyncClient(
            timeout=httpx2.Timeout(
                connect=self.connect_timeout,
                read=self.idle_timeout,
                write=self.connect_timeout,
                pool=self.connect_timeout,
            ),
            # Sessions stream side by side through one pool: no cap on open connections.
            limits=httpx2.Limits(max_connections=None, max_keepalive_connections=20),
            transport=self._transport,
            verify=context,
            trust_env=False,
        )

    async def client(self) -> httpx2.AsyncClient:
        """The client to send with, created on first use on the event loop that streams."""
        if self._transport is not None:
            if self._private is None or self._private.is_closed:
                self._private = self._new_client(_unverifiable_context())
            return self._private
        pool = _pool()
        if self._held is not None and self._held[0] is pool:
            return self._held[2].client
        if "httpx2" not in sys.modules:
            # Its import (httpcore2, h11; trio where installed) takes tens of ms: not on the event loop.
            await anyio.to_thread.run_sync(importlib.import_module, "httpx2")
        self._held = None  # (held on another event loop, which has ended)
        key = (self.origin, self.connect_timeout, self.idle_timeout)
        shared = pool.get(key)
        if shared is None:
            if self.origin.startswith("https:"):
                # The certificate store takes tens of ms to load: not on the event loop.
                context = await anyio.to_thread.run_sync(_verified_context)
            else:
                context = _unverifiable_context()
            shared = pool.get(key)  # another model may have made it meanwhile
            if shared is None:
                shared = pool[key] = _Shared(self._new_client(context))
        shared.users += 1
        self._held = (pool, key, shared)
        return shared.client

    async def aclose(self) -> None:
        """Let go of the client; a shared one is closed when its last holder lets go."""
        to_close: httpx2.AsyncClient | None = None
        if self._private is not None:
            to_close, self._private = self._private, None
        elif self._held is not None:
            pool, key, shared = self._held
            self._held = None
            shared.users -= 1
            if shared.users <= 0 and not _keep_idle and pool.get(key) is shared:
                del pool[key]
                to_close = shared.client
        if to_close is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                await to_close.aclose()
