"""The protocol suite runs on both anyio backends (ResourceWarning is an error, as everywhere: the connection
and its test pipes close every stream they open)."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param
