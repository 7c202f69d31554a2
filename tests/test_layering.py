"""The layering of the README's architecture section, pinned: every import statement (at module level,
inside functions, under ``TYPE_CHECKING``) and every ``importlib.import_module("…")`` of a layer is read
from its source, and none may reach a layer above it or beside it; and what importing a package loads at
run time (the start-up budget's seams)."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO

# layer (a package) -> the packages it must never import
RULES: dict[str, tuple[str, ...]] = {
    "harness": ("acp_agent",),
    "acp_agent.protocol": (
        "harness",
        "acp_agent.session",
        "acp_agent.coding",
        "acp_agent.chat",
        "acp_agent.config",
        "acp_agent.cli",
    ),
    "acp_agent.session": ("acp_agent.coding", "acp_agent.config", "acp_agent.chat"),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> Iterator[tuple[int, str]]:
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return _imports_in(path.read_text(encoding="utf-8"), package)


def _imports_in(source: str, package: str) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) for every import in ``source``, a module of ``package``."""
    for node in ast.walk(ast.parse(source)):
        match node:
            case ast.Import(names=names):
                for alias in names:
                    yield node.lineno, alias.name
            case ast.ImportFrom(module=name, level=level, names=names):
                base = package.split(".")[: len(package.split(".")) - level + 1] if level else []
                target = ".".join([*base, *([name] if name else [])])
                yield node.lineno, target
                for alias in names:  # `from . import coding` names a module too
                    yield node.lineno, f"{target}.{alias.name}"
            case ast.Call(func=ast.Attribute(attr="import_module"), args=[ast.Constant(value=str() as name)]):
                yield node.lineno, name
            case _:
                pass


def _reaches(name: str, forbidden: str) -> bool:
    return name == forbidden or name.startswith(forbidden + ".")


@pytest.mark.parametrize("layer", sorted(RULES))
def test_a_layer_never_imports_the_layers_it_must_not_know(layer: str) -> None:
    folder = REPO.joinpath(*layer.split("."))
    breaches = [
        f"{path.relative_to(REPO)}:{line} imports {name}"
        for path in sorted(folder.rglob("*.py"))
        for line, name in _imports(path)
        for forbidden in RULES[layer]
        if _reaches(name, forbidden)
    ]
    assert breaches == []


def test_the_import_reader_sees_relative_lazy_and_string_imports() -> None:
    source = (
        "import importlib\n"
        "if TYPE_CHECKING:\n"
        "    from ..cli import AgentConfig\n"
        "def f():\n"
        "    from ..coding import coding_factory\n"
        "    from .. import config\n"
        "    importlib.import_module('acp_agent.chat')\n"
    )
    names = {name for _line, name in _imports_in(source, "acp_agent.session")}
    assert {"acp_agent.cli", "acp_agent.coding", "acp_agent.config", "acp_agent.chat"} <= names


def _python(code: str) -> None:
    """Run ``code`` in a fresh interpreter at the repository root; it must exit 0."""
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr.decode()


_NO_HARNESS = "assert not [m for m in sys.modules if m == 'harness' or m.startswith('harness.')], 'harness';"


@pytest.mark.process
def test_importing_the_protocol_package_loads_neither_pydantic_nor_harness_until_a_model_is_used() -> None:
    _python(
        "import sys, acp_agent.protocol as p, acp_agent.protocol.stdio;"
        "assert 'pydantic' not in sys.modules, 'pydantic';"
        f"{_NO_HARNESS}"
        "p.PromptRequest; assert 'pydantic' in sys.modules"
    )


@pytest.mark.process
def test_the_wire_models_load_no_harness_module() -> None:
    _python(f"import sys, acp_agent.protocol.models; {_NO_HARNESS}")


@pytest.mark.process
def test_importing_the_session_layer_loads_no_harness_module() -> None:
    _python(f"import sys, acp_agent.session; {_NO_HARNESS}")
