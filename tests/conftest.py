"""Shared test configuration: async tests run on anyio; paths to the shared reference material."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
ACP_SCHEMA = SHARED / "acp-spec" / "schema.json"


@pytest.fixture
def anyio_backend() -> str:
    """Default backend; the harness suite overrides this to run on asyncio and trio."""
    return "asyncio"


def require_shared(path: Path) -> Path:
    """Skip (with the reason) when the shared reference material is not beside the checkout."""
    if not path.exists():
        pytest.skip(f"{path} is absent: the shared reference material is not beside this checkout")
    return path
