"""Local TCP ports for tests that run side by side (``pytest -n``'s workers, another checkout's suite on the
same machine).

A port found by binding port 0 and closing the socket again is free only until someone else binds it: another
worker's fake server may take it before the test's own child listens there, or before the test connects to it
expecting a refusal, and the test then talks to the wrong server. So:

- ``RefusedPort`` keeps the port bound, without listening, for as long as the test needs it: a connection to
  it is refused, and nobody else can bind it meanwhile. ``listen()`` turns it into the test's own listener
  without releasing it.
- ``child_port()`` is for a child process that binds the port itself (``server-everything``'s ``PORT``, a fault
  server's argument): the port is left in TIME_WAIT, which the kernel's port-0 allocation skips for a minute
  while a server that sets ``SO_REUSEADDR`` (node, uvicorn, Python's servers) may still bind it.
"""

from __future__ import annotations

import socket
from types import TracebackType

from ephemeral_port_reserve import reserve  # pyright: ignore[reportMissingTypeStubs] (untyped, one function)

__all__ = ["RefusedPort", "child_port"]

HOST = "127.0.0.1"


class RefusedPort:
    """A local port bound and not listening while the block runs: connecting to it is refused."""

    def __init__(self) -> None:
        self._socket: socket.socket | None = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind((HOST, 0))
        self.port: int = int(self._socket.getsockname()[1])
        self.url = f"http://{HOST}:{self.port}"

    def listen(self) -> socket.socket:
        """The port's socket, listening from now on; the caller owns it (and closes it)."""
        sock, self._socket = self._socket, None
        if sock is None:
            raise RuntimeError(f"port {self.port} already handed over")
        sock.listen(16)
        return sock

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def __enter__(self) -> RefusedPort:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def child_port() -> int:
    """A local port for a child server to bind (see the module's docstring for why not bind-and-release)."""
    port: object = reserve(HOST)
    assert isinstance(port, int)
    return port
