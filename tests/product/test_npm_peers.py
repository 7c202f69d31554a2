"""``.ci/npm-peers.sh`` without npm: outside CI it says the npm tests will be skipped and succeeds (so the
README's ``bash .ci/npm-peers.sh && pytest`` runs the rest of the suite); with ``CI=true`` it fails."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _run_without_npm(tmp_path: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"  # only what the script needs before it looks for npm: no npm on this PATH
    bin_dir.mkdir()
    for tool in ("bash", "dirname", "tr"):
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    env = {"PATH": str(bin_dir), "HOME": str(tmp_path)}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [str(bin_dir / "bash"), str(REPO / ".ci" / "npm-peers.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )


@pytest.mark.process
@pytest.mark.parametrize("ci", [None, "", "false", "0"])
def test_without_npm_outside_ci_the_script_succeeds_and_says_the_npm_tests_skip(
    ci: str | None, tmp_path: Path
) -> None:
    result = _run_without_npm(tmp_path, ci)
    assert result.returncode == 0, result.stderr
    assert "npm is not installed; the MCP npm tests will be skipped" in result.stderr


@pytest.mark.process
@pytest.mark.parametrize("ci", ["true", "TRUE", "1", "yes"])
def test_without_npm_in_ci_the_script_fails(ci: str, tmp_path: Path) -> None:
    result = _run_without_npm(tmp_path, ci)
    assert result.returncode == 1
    assert "CI=true: the MCP npm tests must run" in result.stderr
