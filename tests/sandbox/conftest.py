"""The sandbox suite: real Landlock where the kernel has it (CI's does: a missing sandbox fails there)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

from harness.sandbox import probe


def require_landlock() -> None:
    support = probe()
    if support.mechanism != "landlock":
        if os.environ.get("CI") == "true":
            pytest.fail(f"the sandbox suite needs Landlock: {support.describe()}")
        pytest.skip(f"no Landlock here: {support.describe()}")


@pytest.fixture
def landlock() -> None:
    require_landlock()


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on 127.0.0.1 (outside any sandbox): its port."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()
