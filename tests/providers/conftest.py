"""Provider tests: a fake HTTP server per test (the helpers are in ``provider_support``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from acp_conformance.fake_model import FakeServer


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as s:
        yield s
