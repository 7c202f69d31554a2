"""A real HTTP/1.1 server on 127.0.0.1 that replays scripted responses: the conformance kit's fake model,
and the project's provider tests and benches.

Runs in its own thread (plain sockets), so it serves asyncio, trio and other processes alike.

    with FakeServer() as server:
        server.route("POST", "/v1/chat/completions", Reply.sse(stream_bytes, every=7))
        model = ChatCompletions(server.url + "/v1", "m")
        ...
        server.requests[0].json        # the body the client sent

API:
- ``FakeServer.route(method, path, *replies)``: each request to the route takes the next reply; the last
  one repeats. A reply may be a ``Reply`` or a callable ``(Recorded) -> Reply``.
- ``Reply(status, headers, body, chunked)``: ``body`` is a sequence of pieces, each written (and flushed)
  on its own: ``bytes``, ``Stall`` (wait until released or the server closes), ``Drop`` (close the
  connection at once, mid-body). ``chunked`` (default) uses chunked transfer encoding, else the body is
  ended by closing the connection.
- ``Reply.sse(data, split_at=..., every=...)`` splits a byte-exact stream at chosen offsets or every n
  bytes; ``Reply.json(status, obj, headers)`` is a plain JSON response.
- ``FakeServer(fallback=...)``: a callable ``(Recorded) -> Reply`` that answers requests no route matches
  (default: a 404 JSON error).
- ``server.requests``: every ``Recorded`` request (method, path, headers lower-cased, body bytes, ``json``,
  ``query``), but title requests.
- A title request (a model request whose body holds one of ``TITLE_MARKERS``: an agent's own side request,
  made after a session's first exchange) is answered with ``FakeServer(title=...)`` (default: empty, so no
  title is written) in the request's wire format, takes no scripted reply, and is kept in
  ``server.title_requests`` instead of ``requests``.
"""

from __future__ import annotations

import select
import socket
import threading
from collections.abc import Callable
from typing import Final

from .exchange import Drop, Recorded, Reply, ReplySource, Stall
from .turn import Turn
from .wire import api_of, model_of, rendered

__all__ = [
    "TITLE_MARKERS",
    "Drop",
    "is_title_request",
    "FakeServer",
    "Recorded",
    "Reply",
    "ReplySource",
    "Stall",
]


TITLE_MARKERS: Final = (b"Write a short title for the conversation",)
"""What the body of a title request holds: acp-agent's title system prompt (``harness.titles.TITLE_SYSTEM``;
a test pins the two together)."""


def is_title_request(req: Recorded) -> bool:
    """Whether ``req``'s body holds one of ``TITLE_MARKERS``."""
    return any(m in req.body for m in TITLE_MARKERS)


class FakeServer:
    def __init__(
        self,
        fallback: Callable[[Recorded], Reply] | None = None,
        *,
        title: str = "",
        titles_apart: bool = True,
    ) -> None:
        self._fallback = fallback
        self.title = title
        """The answer to a title request (see ``TITLE_MARKERS``): empty by default, so no title is written."""
        self.titles_apart = titles_apart
        """False: title requests are served as any other (a server that bills every request)."""
        self.title_requests: list[Recorded] = []
        self.title_asked = threading.Event()
        """Set once a title request came (before its answer is written)."""
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.requests: list[Recorded] = []
        self._routes: dict[tuple[str, str], list[ReplySource]] = {}
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._conns: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._serve, name="fake-server", daemon=True)

    # -- public --------------------------------------------------------------------------------

    def route(self, method: str, path: str, *replies: ReplySource) -> None:
        with self._lock:
            self._routes[(method.upper(), path)] = list(replies)

    def start(self) -> FakeServer:
        self._accept.start()
        return self

    def close(self) -> None:
        self._closing.set()
        try:
            self._sock.close()
        except OSError:
            pass
        with self._lock:
            conns = list(self._conns)
            threads = list(self._threads)
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in threads:
            t.join(timeout=5)

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- serving -------------------------------------------------------------------------------

    def _serve(self) -> None:
        while not self._closing.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            t = threading.Thread(target=self._handle, args=(conn,), daemon=True)
            with self._lock:  # (close() joins the threads it sees: each is started before it is seen)
                self._conns.add(conn)
                t.start()
                self._threads.append(t)

    def _next_reply(self, req: Recorded) -> Reply:
        with self._lock:
            queue = self._routes.get((req.method, req.path))
            if not queue and self._fallback is not None:
                fallback = self._fallback
            elif not queue:
                return Reply.json(
                    404,
                    {"error": {"message": f"no route {req.method} {req.path}", "type": "not_found_error"}},
                )
            else:
                source = queue.pop(0) if len(queue) > 1 else queue[0]
                return source(req) if callable(source) else source
        return fallback(req)

    def _title_reply(self, req: Recorded) -> Reply | None:
        """The answer to a title request (an agent's side request, kept apart from the scripted replies and
        from ``requests``: a test's script and counts stay as they were); None for any other request."""
        api = api_of(req)
        if not self.titles_apart or req.method != "POST" or api is None or not is_title_request(req):
            return None
        usage = {"input": 120, "output": 6} if self.title else {"input": 0, "output": 0}
        return rendered(api, req, Turn(text=self.title, usage=usage), model_of(api, req) or "fake-model")

    def _handle(self, conn: socket.socket) -> None:
        buf = b""
        try:
            while not self._closing.is_set():
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _version = lines[0].split(" ", 2)
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0"))
                while len(buf) < length:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                body, buf = buf[:length], buf[length:]
                path, _, query = target.partition("?")
                req = Recorded(method.upper(), path, headers, body, query)
                title = self._title_reply(req)
                with self._lock:
                    (self.requests if title is None else self.title_requests).append(req)
                if title is not None:
                    self.title_asked.set()
                if not self._respond(conn, title or self._next_reply(req)):
                    return
                if headers.get("connection", "").lower() == "close":
                    return
        except OSError:
            return
        finally:
            with self._lock:
                self._conns.discard(conn)
            try:
                conn.close()
            except OSError:
                pass

    def _respond(self, conn: socket.socket, reply: Reply) -> bool:
        """Write ``reply``; False when the connection must end (dropped, or delimited by close)."""
        status_text = {
            200: "OK",
            400: "Bad Request",
            401: "Unauthorized",
            404: "Not Found",
            429: "Too Many Requests",
            500: "Internal Server Error",
            503: "Service Unavailable",
            529: "Overloaded",
        }
        head = [f"HTTP/1.1 {reply.status} {status_text.get(reply.status, 'Status')}"]
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        if reply.chunked:
            head.append("transfer-encoding: chunked")
        else:
            head.append("connection: close")
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        for piece in reply.body:
            if isinstance(piece, Stall):
                piece.reached.set()
                while not piece.release.is_set():
                    if self._closing.is_set():
                        return False
                    readable, _, _ = select.select([conn], [], [], 0.02)
                    if readable and _closed_by_client(conn):
                        piece.client_closed.set()
                        return False
                continue
            if isinstance(piece, Drop):
                # SO_LINGER 0: the close sends RST, as a crashed server would
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                return False
            if not piece:
                continue
            if reply.chunked:
                conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            else:
                conn.sendall(piece)
        if reply.chunked:
            conn.sendall(b"0\r\n\r\n")
            return True
        return False


def _closed_by_client(conn: socket.socket) -> bool:
    """Whether a readable connection was closed by the client: its end of the stream, or a reset (a client
    that closes with our bytes still unread in its socket sends RST, not FIN: the common case of an agent
    that stops reading mid-stream)."""
    try:
        return not conn.recv(1, socket.MSG_PEEK)
    except OSError:
        return True
