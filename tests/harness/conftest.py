"""The harness suite runs on both anyio backends (ResourceWarning is an error, as everywhere: a run closes every
model stream it opened, the middleware chain's too, even when a middleware raised mid-stream)."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return request.param
