"""No product module over 500 lines: a module that grows past it is split by responsibility (what it does),
not by line count. The product is what ships: ``harness``, ``acp_agent`` and ``acp_conformance``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Final

from tests.conftest import REPO

MAX_LINES: Final = 500
PRODUCT: Final = ("harness", "acp_agent", "acp_conformance")


def oversized(paths: Iterable[Path], limit: int = MAX_LINES) -> dict[str, int]:
    """Each module of ``paths`` longer than ``limit`` lines, with its length."""
    found: dict[str, int] = {}
    for path in paths:
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found[path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else str(path)] = lines
    return found


def _product_modules() -> list[Path]:
    return sorted(path for package in PRODUCT for path in (REPO / package).rglob("*.py"))


def test_no_product_module_is_longer_than_500_lines() -> None:
    modules = _product_modules()
    assert len(modules) > 100, "the product's modules were not found"
    assert oversized(modules) == {}, (
        f"modules over {MAX_LINES} lines: split each by responsibility (what it does), not by line count"
    )


def test_a_501_line_module_is_too_long_and_a_500_line_one_is_not(tmp_path: Path) -> None:
    at_limit = tmp_path / "at_limit.py"
    at_limit.write_text("x = 1\n" * 500, encoding="utf-8")
    over = tmp_path / "over.py"
    over.write_text("x = 1\n" * 500 + "y = 2", encoding="utf-8")  # the last line without its newline counts
    assert oversized([at_limit, over]) == {str(over): 501}
