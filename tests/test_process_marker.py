"""The ``process`` marker is enforced: a test (or its fixture) that spawns a process without the mark fails with
the spawning line and the fix, even when the test swallows the spawn's error; a marked one passes."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.process  # the inner tests spawn `true`

INNER = """
import subprocess
import pytest

@pytest.fixture
def spawned():
    subprocess.run(["true"], check=True)

def test_quiet():
    assert True

def test_spawns():
    subprocess.run(["true"], check=True)

@pytest.mark.process
def test_marked_spawns():
    subprocess.run(["true"], check=True)

def test_swallows_a_failed_spawn():
    try:
        subprocess.run(["/nonexistent/program"])
    except OSError:
        pass

def test_uses_a_spawning_fixture(spawned):
    assert True
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(INNER)
    return pytester.runpytest_inprocess("-p", "tests._process_marker", "-p", "no:cacheprovider", *args)


def test_unmarked_spawns_fail_with_the_spawning_line_and_marked_ones_pass(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "-rfE")
    result.assert_outcomes(passed=2, failed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_spawns _*",
            "*this test spawns a process (in its call) but is not marked `process`*",
            "*subprocess.Popen(?'true'?)*",
            "*from *test_unmarked_spawns_fail*.py:12 (test_spawns)*",
            "*Mark it `@pytest.mark.process`*",
        ]
    )
    result.stdout.fnmatch_lines(["*ERROR at setup of test_uses_a_spawning_fixture*", "*(in its setup)*"])
    result.stdout.fnmatch_lines(["*FAILED*test_spawns*", "*FAILED*test_swallows_a_failed_spawn*"])
    result.stdout.fnmatch_lines(["*ERROR*test_uses_a_spawning_fixture*"])
    result.stdout.no_fnmatch_line("*test_marked_spawns*")


def test_not_process_leaves_the_marked_test_out(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "-m", "not process", "-p", "no:warnings")
    result.assert_outcomes(passed=1, failed=2, errors=1, deselected=1)


def test_the_survey_lists_spawning_tests_without_failing_them(pytester: pytest.Pytester) -> None:
    report = pytester.path / "survey.tsv"
    result = _run(pytester, f"--process-survey={report}")
    result.assert_outcomes(passed=5)
    rows: dict[str, str] = {}
    for line in report.read_text().splitlines():  # a row per phase that spawned, and one per call
        node, spawned, _marked, _phase = line.split("\t")
        name = node.split("::")[1]
        rows[name] = max(rows.get(name, "0"), spawned)
    assert rows == {
        "test_quiet": "0",
        "test_spawns": "1",
        "test_marked_spawns": "1",
        "test_swallows_a_failed_spawn": "1",
        "test_uses_a_spawning_fixture": "1",
    }


def test_under_xdist_each_worker_fails_unmarked_spawns_and_the_survey_gets_every_workers_rows(
    pytester: pytest.Pytester,
) -> None:
    """``pytest -n 2`` (CI's command): the watch runs in every worker, and the workers' survey rows (one
    appended line each, so they cannot interleave) all reach the one file."""
    result = _run(pytester, "-n", "2", "-rfE")
    result.assert_outcomes(passed=2, failed=2, errors=1)
    result.stdout.fnmatch_lines(["*this test spawns a process (in its call) but is not marked `process`*"])
    report = pytester.path / "survey.tsv"
    result = _run(pytester, "-n", "2", f"--process-survey={report}")
    result.assert_outcomes(passed=5)
    rows = [line.split("\t") for line in report.read_text().splitlines()]
    assert all(len(row) == 4 for row in rows), rows
    assert sorted(row[0].split("::")[1] for row in rows if row[3] == "call") == [
        "test_marked_spawns",
        "test_quiet",
        "test_spawns",
        "test_swallows_a_failed_spawn",
        "test_uses_a_spawning_fixture",
    ]
