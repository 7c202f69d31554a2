"""Every ```python block of the README runs as it is (each in a fresh namespace)."""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO

BLOCKS = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("source", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_the_readme_example_runs(source: str, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(source, "README.md", "exec"), {"__name__": "readme_example"})
    capsys.readouterr()
