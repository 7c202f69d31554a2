"""The CLI's explicit command table (``acp_agent.cli.COMMANDS``): each entry's module is a command, and the
command line imports a subcommand's module only when it names that subcommand."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from acp_agent.cli import COMMANDS
from tests.conftest import REPO


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_in_the_table_names_a_module_with_arguments_and_a_main(name: str) -> None:
    module = importlib.import_module(COMMANDS[name].module)
    assert callable(module.add_arguments) and callable(module.main)


_LOADED = (
    "import sys; from acp_agent.cli import build_parser, COMMANDS;"
    "build_parser(sys.argv[1:]).format_help();"
    "print(' '.join(n for n, e in COMMANDS.items() if e.module in sys.modules))"
)


def _commands_loaded(*argv: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _LOADED, *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.split()


@pytest.mark.process
def test_the_top_level_help_lists_the_commands_without_importing_any() -> None:
    assert _commands_loaded("--help") == []


@pytest.mark.process
@pytest.mark.parametrize("name", ["doctor", "permissions", "setup", "trust"])
def test_naming_a_subcommand_imports_that_command_alone(name: str) -> None:
    assert _commands_loaded("--model", "m", name) == [name]


@pytest.mark.process
def test_a_subcommand_that_cannot_be_imported_is_a_clear_error_not_a_traceback() -> None:
    code = (
        "import acp_agent.cli as c; c.COMMANDS = {'gone': c.CommandEntry('x', 'acp_agent.no_such_module')};"
        "c.main(['gone'])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1
    assert "cannot load the gone command (acp_agent.no_such_module)" in done.stderr
    assert "Traceback" not in done.stderr
