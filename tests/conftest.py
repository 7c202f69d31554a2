"""Shared test configuration: async tests run on anyio; paths to the shared reference material; what a
test does when a peer or a reference file it needs is absent.

Tests may skip (with the reason) where ``../shared`` or the npm test peers are absent, except in CI
(``CI=true``), where everything must run: the same check fails the test instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from tests._ports import RefusedPort

pytest_plugins = ("tests._process_marker", "tests._gc_each_test", "tests._child_tmpdir", "pytester")
"""A test that spawns a process must be marked ``process`` (the plugin fails it otherwise; ``pytester`` tests it);
``--gc-each-test`` makes a leak fail the test that made it; spawned processes get a temp folder of the run's
own (``tests._child_tmpdir``)."""

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
ACP_SCHEMA = SHARED / "acp-spec" / "next" / "v1" / "schema.json"
ACP_UNSTABLE_SCHEMA = SHARED / "acp-spec" / "next" / "v1" / "schema.unstable.json"
"""The ACP v1 schemas the suite checks messages against (TypeScript SDK 2.4.0, November 2026)."""
IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
"""``CI=true``: a missing test peer or reference file fails the test instead of skipping it."""


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A local port that refuses connections for the whole test (held bound, so that no other worker's
    server can take it meanwhile: see ``tests._ports``)."""
    with RefusedPort() as held:
        yield held.port


@pytest.fixture
def anyio_backend() -> str:
    """Default backend; the harness suite overrides this to run on asyncio and trio."""
    return "asyncio"


def missing(reason: str) -> NoReturn:
    """Something the test needs is absent: skip with ``reason``, or fail in CI."""
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: every test must run)", pytrace=False)
    pytest.skip(reason)


def require_shared(path: Path) -> Path:
    """``path`` from the shared reference material beside the checkout (see ``missing`` when absent)."""
    if not path.exists():
        missing(f"{path} is absent: the shared reference material is not beside this checkout")
    return path
