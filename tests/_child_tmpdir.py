"""The processes a test run spawns get a temp folder of the run's own (``TMPDIR``), removed when the run ends.

An agent a test kills (``kill -9``, or a teardown's kill of one that lingered) cannot remove its sessions'
private folders (``acp-agent-sandbox-<pid>-…``, see ``coding.permissions._sandboxing``): in the machine's
temp folder only a later agent's sweep of hour-old ones would, so each full run left some fifty there. The
test process itself keeps the machine's temp folder (``tempfile.tempdir`` is pinned before ``TMPDIR``
changes), so pytest's ``tmp_path`` folders stay where they were, kept for a failed test's inspection.
Under ``pytest-xdist`` each worker makes its own inside the controller's.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_KEY = pytest.StashKey[tuple[str | None, str]]()


def pytest_configure(config: pytest.Config) -> None:
    tempfile.tempdir = tempfile.gettempdir()  # this process's own stays the same
    folder = tempfile.mkdtemp(prefix="acp-agent-tests-")
    config.stash[_KEY] = (os.environ.get("TMPDIR"), folder)
    os.environ["TMPDIR"] = folder


def pytest_unconfigure(config: pytest.Config) -> None:
    held = config.stash.get(_KEY, None)
    if held is None:
        return
    before, folder = held
    if before is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = before
    shutil.rmtree(folder, ignore_errors=True)
