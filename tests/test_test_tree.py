"""The test tree is one package: every folder with Python in it has an ``__init__.py``, so each helper module
loads once under one name (``tests.reliability._reliability_support``, never also ``_reliability_support``
with a second ``AgentProcess`` class) and helpers are imported as ``tests.x.y`` (neither bare nor relative)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_every_tests_folder_with_python_in_it_is_a_package() -> None:
    folders = {path.parent for path in TESTS.rglob("*.py") if "__pycache__" not in path.parts}
    assert sorted(str(f.relative_to(TESTS)) for f in folders if not (f / "__init__.py").exists()) == []


def test_test_helpers_are_imported_by_their_absolute_name() -> None:
    helpers = {path.stem for path in TESTS.rglob("*.py") if not path.stem.startswith(("test_", "__"))}
    bare: list[str] = []
    for path in TESTS.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            match node:
                case ast.ImportFrom(module=module, level=level) if level > 0:
                    bare.append(f"{path.relative_to(TESTS)}: from {'.' * level}{module or ''}")
                case ast.ImportFrom(module=str(module)) if module.split(".")[0] in helpers:
                    bare.append(f"{path.relative_to(TESTS)}: from {module}")
                case ast.Import(names=names):
                    bare += [
                        f"{path.relative_to(TESTS)}: import {a.name}" for a in names if a.name in helpers
                    ]
                case _:
                    pass
    assert bare == []
