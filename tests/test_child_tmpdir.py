"""``tests._child_tmpdir``: a process a test spawns gets the run's own temp folder, the test process keeps the
machine's, and the folder is gone (``TMPDIR`` as it was) once the run ends."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

INNER = """
import os
import subprocess
import sys
import tempfile
from pathlib import Path

def test_spawns(tmp_path):
    asked = [sys.executable, "-c", "import tempfile; print(tempfile.gettempdir())"]
    child = subprocess.run(asked, capture_output=True, text=True, check=True).stdout.strip()
    (Path(os.environ["RECORD"])).write_text(child + "\\n" + tempfile.gettempdir() + "\\n" + str(tmp_path))
    Path(child, "left-by-a-killed-agent").mkdir()
"""


def test_a_spawned_process_gets_the_runs_own_temp_folder_which_is_removed_at_the_end(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "record.txt"
    monkeypatch.setenv("RECORD", str(record))
    outer = os.environ.get("TMPDIR")
    pytester.makepyfile(INNER)
    result = pytester.runpytest_inprocess("-p", "tests._child_tmpdir", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    child, own, inner_tmp_path = record.read_text().splitlines()
    assert Path(child).name.startswith("acp-agent-tests-")
    assert own == tempfile.gettempdir() != child  # the test process keeps its temp folder
    assert not inner_tmp_path.startswith(child + os.sep)  # and pytest's tmp_path with it
    assert not Path(child).exists()  # removed, with what a killed process left in it
    assert os.environ.get("TMPDIR") == outer
