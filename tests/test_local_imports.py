"""Function-local imports are start-up seams only, and their number can only go down.

Ruff's ``PLC0415`` refuses an import inside a function except in the files ``pyproject.toml``'s per-file
ignores list, each with what its imports keep out of the import that loads it (start-up before ``initialize``,
the session layer's harness seam, a subcommand's own dependencies, the heavy packages). A per-file ignore alone
would let a listed file gain any number of them, so ``RECORDED`` holds how many each file has: one more fails
(and names the rule), one fewer asks for the number to be lowered. The count is the one ``PLC0415`` reports:
every ``import`` statement inside a function, a method or a class body, at any depth."""

from __future__ import annotations

import ast
import tomllib
from typing import Final

from tests.conftest import REPO

PRODUCT: Final = ("harness", "acp_agent", "acp_conformance")

RECORDED: Final[dict[str, int]] = {
    "acp_agent/__main__.py": 1,
    "acp_agent/_early.py": 1,
    "acp_agent/chat/__init__.py": 8,
    "acp_agent/chat/_input.py": 1,
    "acp_agent/chat/render.py": 1,
    "acp_agent/cli.py": 11,
    "acp_agent/coding/__init__.py": 4,
    "acp_agent/coding/_elicit.py": 4,
    "acp_agent/coding/context/_textfiles.py": 1,
    "acp_agent/coding/models/_catalog.py": 4,
    "acp_agent/coding/models/_model_facts.py": 1,
    "acp_agent/coding/models/_model_list.py": 2,
    "acp_agent/coding/opening.py": 1,
    "acp_agent/commands/doctor.py": 12,
    "acp_agent/commands/doctor_facts.py": 1,
    "acp_agent/commands/permissions_cmd.py": 3,
    "acp_agent/commands/sandbox_cmd.py": 5,
    "acp_agent/commands/setup_cmd.py": 7,
    "acp_agent/commands/trust_cmd.py": 2,
    "acp_agent/config/__init__.py": 1,
    "acp_agent/config/_files.py": 4,
    "acp_agent/config/_mcp.py": 1,
    "acp_agent/config/_project.py": 2,
    "acp_agent/config/_resolve.py": 1,
    "acp_agent/config/_table.py": 6,
    "acp_agent/config/_user.py": 5,
    "acp_agent/logs.py": 2,
    "acp_agent/model_setup.py": 9,
    "acp_agent/protocol/stdio.py": 1,
    "acp_agent/small_files.py": 1,
    "acp_agent/session/_content.py": 1,
    "acp_agent/session/_harness.py": 1,
    "acp_agent/session/_index.py": 3,
    "acp_agent/session/_mcp_acp.py": 5,
    "acp_agent/session/_warm.py": 1,
    "acp_agent/session/serve.py": 3,
    "acp_agent/trust.py": 3,
    "acp_conformance/validate.py": 1,
    "harness/_validate.py": 2,
    "harness/mcp/_client.py": 8,
    "harness/mcp/_convert.py": 1,
    "harness/mcp/_errors.py": 1,
    "harness/mcp/_lifecycle.py": 1,
    "harness/mcp/_prompts.py": 1,
    "harness/mcp/_server.py": 1,
    "harness/mcp/_stdio.py": 2,
    "harness/mcp/conformance_client.py": 4,
    "harness/policy/_shellparse.py": 1,
    "harness/providers/_clients.py": 2,
    "harness/providers/_http.py": 4,
    "harness/providers/model_info.py": 1,
    "harness/sandbox/__init__.py": 1,
    "harness/tools/web.py": 4,
}
"""Function-local imports per product file (the only files allowed any); a number here only goes down."""

RULE: Final = (
    "an import inside a function is kept only where it is a start-up seam (docs/architecture.md): import at"
    " module level; in acp_agent/session use the harness seam (`from . import _harness`, then `_harness.Name`)."
    " A new seam is a reviewed change: RECORDED here and pyproject.toml's PLC0415 per-file ignores, with why."
)


def local_imports(source: str) -> int:
    """How many import statements of ``source`` are not at its top level: inside a function, a method or a
    class body, at any depth (a module-level ``if``/``try`` is top level)."""
    found = 0

    def visit(node: ast.AST, in_function: bool) -> None:
        nonlocal found
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, ast.Import | ast.ImportFrom):
                found += 1
            visit(
                child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            )

    visit(ast.parse(source), False)
    return found


def _counts() -> dict[str, int]:
    counts: dict[str, int] = {}
    for package in PRODUCT:
        for path in sorted((REPO / package).rglob("*.py")):
            if found := local_imports(path.read_text(encoding="utf-8")):
                counts[path.relative_to(REPO).as_posix()] = found
    return counts


def test_no_file_has_more_function_local_imports_than_recorded_nor_fewer() -> None:
    counts = _counts()
    assert counts, "the product's modules were not found"
    more = {f: f"{n} (recorded {RECORDED.get(f, 0)})" for f, n in counts.items() if n > RECORDED.get(f, 0)}
    assert more == {}, f"more function-local imports than recorded: {RULE}"
    fewer = {f: n for f in RECORDED if (n := counts.get(f, 0)) < RECORDED[f]}
    assert fewer == {}, (
        "fewer function-local imports than recorded: lower RECORDED (tests/test_local_imports.py)"
    )


def test_ruffs_per_file_ignores_name_exactly_the_files_recorded() -> None:
    with (REPO / "pyproject.toml").open("rb") as f:
        ignores: dict[str, list[str]] = tomllib.load(f)["tool"]["ruff"]["lint"]["per-file-ignores"]
    listed = {path for path, rules in ignores.items() if "PLC0415" in rules and path.startswith(PRODUCT)}
    assert listed == set(RECORDED), (
        "pyproject.toml's PLC0415 per-file ignores and RECORDED name the same files"
    )


def test_the_counter_counts_imports_in_functions_methods_and_class_bodies_not_at_the_top_level() -> None:
    source = (
        "import os\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    import json\n"
        "try:\n"
        "    import tomllib\n"
        "except ImportError:\n"
        "    pass\n"
        "def f():\n"
        "    import shlex\n"  # 1
        "    if True:\n"
        "        from re import compile\n"  # 2
        "    def g():\n"
        "        import csv\n"  # 3
        "class C:\n"
        "    import enum\n"  # 4: a class body is not the top level either
        "    async def m(self):\n"
        "        try:\n"
        "            import sqlite3\n"  # 5
        "        except ImportError:\n"
        "            pass\n"
    )
    assert local_imports(source) == 5
