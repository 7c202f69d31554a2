"""Every ```python block of the README and of the manuals under docs/ runs as it is (each in a fresh
namespace)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
BLOCKS = [
    (path, block)
    for path in DOCS
    for block in re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)
]


def _id(item: tuple[Path, str]) -> str:
    return item[0].relative_to(REPO).as_posix()


@pytest.mark.parametrize("item", BLOCKS, ids=[f"{_id(b)}-{i}" for i, b in enumerate(BLOCKS)])
def test_the_readme_example_runs(item: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    path, source = item
    exec(compile(source, str(path.relative_to(REPO)), "exec"), {"__name__": "readme_example"})
    capsys.readouterr()


def test_the_readme_starts_with_the_two_fresh_machine_commands_and_links_the_moved_manuals() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first = readme.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert first[0].startswith("python3 -m venv .venv && .venv/bin/pip install -q -e '.[dev]'")
    assert first[0].endswith("| .venv/bin/acp-harness-agent")
    assert first[1] == "bash .ci/npm-peers.sh && .venv/bin/python -m pytest"
    for doc in ("contributing", "architecture", "harness", "conformance", "benchmarks"):
        assert f"(docs/{doc}.md)" in readme and (REPO / "docs" / f"{doc}.md").is_file()


def test_every_relative_link_of_the_readme_and_docs_leads_somewhere() -> None:
    for path in DOCS:
        text = path.read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"^[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            where = (path.parent / file).resolve() if file else path
            assert where.exists(), f"{path.name}: {target}"
            if anchor and where.suffix == ".md":
                headings = re.findall(r"^#{1,6} (.*)$", where.read_text(encoding="utf-8"), flags=re.M)
                slugs = {
                    re.sub(r"[^\w\- ]", "", h.replace("`", "").strip().lower()).replace(" ", "-")
                    for h in headings
                }
                assert anchor in slugs, f"{path.name}: {target}"
