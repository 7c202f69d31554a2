"""The ports tests hand to servers and clients stay theirs while tests run side by side (``tests._ports``)."""

from __future__ import annotations

import errno
import socket

import pytest

from tests._ports import RefusedPort, child_port


def test_a_refused_port_refuses_connections_and_nobody_else_can_bind_it_while_held() -> None:
    with RefusedPort() as held:
        with socket.socket() as client, pytest.raises(ConnectionRefusedError):
            client.connect(("127.0.0.1", held.port))
        for reuse in (False, True):  # a server that sets SO_REUSEADDR (most do) cannot take it either
            with socket.socket() as other:
                other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, int(reuse))
                with pytest.raises(OSError) as refused:
                    other.bind(("127.0.0.1", held.port))
                assert refused.value.errno == errno.EADDRINUSE


def test_a_refused_port_becomes_the_tests_own_listener_without_being_released() -> None:
    with RefusedPort() as held:
        listener = held.listen()
        with listener, socket.create_connection(("127.0.0.1", held.port), timeout=5) as client:
            accepted, _ = listener.accept()
            with accepted:
                client.sendall(b"ping")
                assert accepted.recv(4) == b"ping"
        with pytest.raises(RuntimeError, match="already handed over"):
            held.listen()


def test_the_fixture_port_refuses_connections(refused_port: int) -> None:
    with socket.socket() as client, pytest.raises(ConnectionRefusedError):
        client.connect(("127.0.0.1", refused_port))


def test_a_child_port_is_held_against_plain_binds_but_a_server_that_reuses_addresses_binds_it() -> None:
    """The port sits in TIME_WAIT: a bind without SO_REUSEADDR (which is also the check port-0 allocation makes,
    so another test's fake server or refused port is not given it) fails, while a server that sets it (node,
    uvicorn and Python's servers do) binds it, and until then nothing listens there."""
    port = child_port()
    with socket.socket() as client, pytest.raises(ConnectionRefusedError):
        client.connect(("127.0.0.1", port))
    with socket.socket() as plain, pytest.raises(OSError) as taken:
        plain.bind(("127.0.0.1", port))
    assert taken.value.errno == errno.EADDRINUSE
    with socket.create_server(("127.0.0.1", port)) as server:  # sets SO_REUSEADDR
        assert server.getsockname()[1] == port
