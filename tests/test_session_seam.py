"""The session layer reaches the harness through one module, ``acp_agent.session._harness``: importing the
session package loads no harness module (``tests/test_layering.py``), and no session module imports the
harness at run time but that seam (a function-local ``from harness import ...`` is what it replaced)."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from tests.conftest import REPO

SESSION = REPO / "acp_agent" / "session"
SEAM = SESSION / "_harness.py"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _is_harness(name: str | None) -> bool:
    return name is not None and (name == "harness" or name.startswith("harness."))


def runtime_harness_imports(source: str) -> list[int]:
    """The lines of ``source`` that import a harness module when they run: every import statement or
    ``importlib.import_module`` call naming one, except under ``if TYPE_CHECKING:``."""
    found: list[int] = []

    def visit(node: ast.AST) -> None:
        match node:
            case ast.If(test=test) if _is_type_checking(test):
                for child in node.orelse:
                    visit(child)
                return
            case ast.Import(names=names) if any(_is_harness(a.name) for a in names):
                found.append(node.lineno)
            case ast.ImportFrom(module=module, level=0) if _is_harness(module):
                found.append(node.lineno)
            case ast.Call(
                func=ast.Attribute(attr="import_module"), args=[ast.Constant(value=str() as name), *_]
            ):
                if _is_harness(name):
                    found.append(node.lineno)
            case _:
                pass
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def test_no_session_module_imports_the_harness_at_run_time_but_the_seam() -> None:
    found = {
        path.relative_to(REPO).as_posix(): lines
        for path in sorted(SESSION.rglob("*.py"))
        if path != SEAM and (lines := runtime_harness_imports(path.read_text(encoding="utf-8")))
    }
    assert found == {}, (
        "a session module imports the harness at run time: use `from . import _harness` and"
        " `_harness.Name` (add the name to acp_agent/session/_harness.py), or import it under TYPE_CHECKING"
    )


def test_the_import_reader_sees_function_local_and_string_imports_and_skips_type_checking_ones() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "import harness.atomic\n"  # 2
        "if TYPE_CHECKING:\n"
        "    from harness import Message\n"
        "else:\n"
        "    import harness.events\n"  # 6
        "def f():\n"
        "    from harness.mcp import McpManager\n"  # 8
        "    importlib.import_module('harness.titles')\n"  # 9
        "    from harnessed import x\n"
        "    from . import _harness\n"
    )
    assert runtime_harness_imports(source) == [2, 6, 8, 9]


def _seam_tables() -> tuple[set[tuple[str, str]], set[tuple[str, str]], set[str]]:
    """(the seam's TYPE_CHECKING imports, its ``_EXPORTS`` table, its ``__all__``), read from its source."""
    tree = ast.parse(SEAM.read_text(encoding="utf-8"))
    checked: set[tuple[str, str]] = set()
    exports: set[tuple[str, str]] = set()
    declared: set[str] = set()
    for node in tree.body:
        match node:
            case ast.If(test=test, body=body) if _is_type_checking(test):
                for stmt in body:
                    assert isinstance(stmt, ast.ImportFrom) and stmt.module is not None
                    checked |= {(stmt.module, alias.name) for alias in stmt.names}
            case ast.AnnAssign(target=ast.Name(id="_EXPORTS"), value=ast.Dict() as table):
                for key, names in zip(table.keys, table.values, strict=True):
                    assert isinstance(key, ast.Constant) and isinstance(names, ast.Tuple)
                    exports |= {(str(key.value), str(ast.literal_eval(n))) for n in names.elts}
            case ast.Assign(targets=[ast.Name(id="__all__")], value=value):
                declared = set(ast.literal_eval(value))
            case _:
                pass
    return checked, exports, declared


def test_the_seam_loads_each_name_from_the_module_type_checkers_are_told_and_exports_them_all() -> None:
    checked, exports, declared = _seam_tables()
    assert exports, "the seam's _EXPORTS table was not found"
    assert checked == exports, (
        "the TYPE_CHECKING imports and _EXPORTS name the same names from the same modules"
    )
    assert declared == {name for _, name in exports} | {"preload"}


def _python(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.process
def test_a_name_loads_its_own_harness_module_at_first_use_and_is_then_kept_in_the_seam() -> None:
    _python(
        "import sys\n"
        "import acp_agent.session\n"
        "from acp_agent.session import _harness\n"
        "def loaded(): return {m for m in sys.modules if m == 'harness' or m.startswith('harness.')}\n"
        "assert loaded() == set(), loaded()\n"
        "assert not hasattr(_harness, '__wrapped__') and loaded() == set(), 'a dunder probe loads nothing'\n"
        "private_dir = _harness.private_dir\n"
        "import harness.atomic\n"
        "assert private_dir is harness.atomic.private_dir and vars(_harness)['private_dir'] is private_dir\n"
        "assert 'harness.events' not in loaded() and 'harness.mcp' not in loaded(), loaded()\n"
        "assert _harness.registry is sys.modules['harness.providers.registry']\n"
        "for name in _harness.__all__: getattr(_harness, name)\n"
        "try:\n"
        "    _harness.Nothing\n"
        "except AttributeError as exc:\n"
        "    assert 'Nothing' in str(exc), exc\n"
        "else:\n"
        "    raise AssertionError('an unknown name resolved')\n"
    )
