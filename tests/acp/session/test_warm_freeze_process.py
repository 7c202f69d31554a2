"""The agent's process leaves its start-up objects out of the garbage collector's passes once warmed up
(``freeze_after_warm_up``); a process that did not ask (a test's) keeps collecting them."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.process

_CHILD = r"""
import gc, sys
from acp_agent.coding import coding_factory
from acp_agent.session._warm import freeze_after_warm_up, warm_imports

if sys.argv[1] == "agent":
    freeze_after_warm_up()
warm_imports(coding_factory({}, {"HOME": "/nonexistent"}))
print(gc.get_freeze_count())
"""


def _frozen_after_warm_up(kind: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, kind], capture_output=True, text=True, timeout=60, check=True
    )
    return int(done.stdout.strip())


def test_the_agents_process_freezes_what_its_warm_up_imported() -> None:
    assert _frozen_after_warm_up("agent") > 20_000  # the harness, the tools, the wire models...


def test_a_process_that_did_not_ask_freezes_nothing() -> None:
    assert _frozen_after_warm_up("test") == 0
