"""The agent's process never imports trio, which it does not run on: httpcore2 would import it wherever it
is installed (as in this test environment), 3.5 MB and tens of ms for nothing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

pytestmark = pytest.mark.process

_SCRIPT = r"""
import sys
import acp_agent.cli as cli
try:
    cli.main(["--version"])
except SystemExit:
    pass
import httpx2, httpcore2._synchronization as synchronization
print(synchronization.trio is None, sys.modules["trio"] is None)
"""


def test_the_agents_commands_leave_trio_unimported_and_http_works_without_it() -> None:
    assert importlib.util.find_spec("trio") is not None, "trio is installed here (the dev extra)"
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == ["True", "True"]
