"""The byte-exact provider streams in ``fixtures/`` (see its README) that the provider tests replay through
the conformance kit's fake server (``acp_conformance.fake_model``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["FIXTURES", "fixture"]

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()
