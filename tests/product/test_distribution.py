"""The distribution's name and what it installs: the command is the distribution's name (PyPI's ``acp-agent``
is an unrelated project), ``acp-agent`` stays as a second command, and nothing the agent depends on brings
PyPI's unrelated ``harness`` (which would overwrite this project's top-level ``harness`` package)."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def test_the_command_is_the_distributions_name_and_acp_agent_is_a_second_name() -> None:
    name = PROJECT["name"]
    assert name != "acp-agent"
    assert PROJECT["scripts"][name] == PROJECT["scripts"]["acp-agent"] == "acp_agent.__main__:main"


def test_no_runtime_dependency_brings_another_harness_package() -> None:
    seen: set[str] = set()
    todo = [_name(r) for r in PROJECT["dependencies"]]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue  # an optional or platform-specific requirement that is not installed here
        todo += [_name(r) for r in requires if "extra ==" not in r]
    assert "harness" not in seen
    import harness

    assert Path(harness.__file__).resolve().parent == REPO / "harness"
