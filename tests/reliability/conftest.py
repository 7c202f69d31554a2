"""Reliability suites: the real agent process under fuzzing, kills, cancel storms and secret checks.

Quick mode (CI) by default; ``RELIABILITY_LONG=1`` runs the full counts. The suites drive the process
over pipes with the asyncio backend only: what they test is the process, not the event loop library.
"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty ``ACP_AGENT_HOME``."""
    path = tmp_path / "home"
    path.mkdir()
    return path
