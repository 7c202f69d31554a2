"""The kit judges agents fairly: run as a user runs it (``python -m acp_conformance``, a profile file of
their own) against small agents made to fail on purpose (``fake_agents.py``), it classifies each fault by
its level, reports what is not advertised apart from failures, and exits by the levels that failed."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.process

FAKE = Path(__file__).parent / "fake_agents.py"
PROFILE = """\
# A user's own profile: the agent answers prompts itself, no model.
name = "fake"
model_free = true
"""


def kit(tmp_path: Path, mode: str, *args: str) -> tuple[int, dict[str, Any]]:
    profile = tmp_path / "fake.toml"
    profile.write_text(PROFILE)
    command = [sys.executable, "-m", "acp_conformance", "--agent", f"{sys.executable} {FAKE} {mode}"]
    command += ["--profile", str(profile), "--json", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def outcomes(report: dict[str, Any]) -> dict[str, str]:
    return {r["id"]: r["outcome"] for r in report["results"]}


def test_an_agent_that_answers_a_notification_fails_two_musts_and_the_run(tmp_path: Path) -> None:
    code, report = kit(tmp_path, "answers-notification", "-k", "cancel.notification")
    got = outcomes(report)
    assert got["cancel.notification-gets-no-response"] == "failed"
    assert (
        got["wire.only-acp-on-stdout"] == "failed"
    )  # an error response without an id is no JSON-RPC message
    assert report["summary"]["MUST"]["failed"] == 2
    assert code == 1 and report["exit_status"] == 1


def test_the_same_checks_pass_for_an_agent_that_stays_silent(tmp_path: Path) -> None:
    code, report = kit(tmp_path, "good", "-k", "cancel.notification")
    assert outcomes(report)["cancel.notification-gets-no-response"] == "passed"
    assert code == 0


def test_an_unadvertised_delete_is_reported_apart_and_fails_nothing(tmp_path: Path) -> None:
    code, report = kit(tmp_path, "no-delete", "-k", "delete")
    got = outcomes(report)
    assert got["caps.delete-advertised-is-implemented"] == "not_advertised"
    assert got["session-delete.deletes"] == "not_advertised"
    assert got["session-delete.unknown-succeeds"] == "not_advertised"
    assert got["caps.delete-unadvertised-is-not-found"] == "passed"  # it answers -32601, as advised
    assert report["summary"]["not_advertised"] >= 3
    assert all(
        v["failed"] == 0 for k, v in report["summary"].items() if k in ("MUST", "SHOULD", "RECOMMENDED")
    )
    assert code == 0


def test_an_advertised_delete_that_answers_method_not_found_fails_a_must(tmp_path: Path) -> None:
    code, report = kit(tmp_path, "delete-not-routed", "-k", "caps.delete")
    got = outcomes(report)
    assert got["caps.delete-advertised-is-implemented"] == "failed"
    assert got["caps.delete-unadvertised-is-not-found"] == "not_applicable"
    assert code == 1


def test_a_recommended_miss_fails_only_with_strict(tmp_path: Path) -> None:
    code, report = kit(tmp_path, "vague-errors", "-k", "jsonrpc.invalid-params")
    got = outcomes(report)
    assert got["jsonrpc.invalid-params"] == "passed"  # -32602 it is: the SHOULD holds
    assert got["errors.invalid-params-name-the-field"] == "failed"
    assert report["summary"]["RECOMMENDED"]["failed"] == 2
    assert report["summary"]["MUST"]["failed"] == 0 and report["summary"]["SHOULD"]["failed"] == 0
    assert code == 0
    strict_code, strict = kit(tmp_path, "vague-errors", "-k", "jsonrpc.invalid-params", "--strict")
    assert strict_code == 1 and strict["exit_status"] == 1


def test_a_field_named_in_the_error_data_counts_as_named(tmp_path: Path) -> None:
    _code, report = kit(tmp_path, "field-in-data", "-k", "jsonrpc.invalid-params")
    assert outcomes(report)["errors.invalid-params-name-the-field"] == "passed"


def test_model_scenarios_are_not_applicable_without_a_model_and_junit_says_so(tmp_path: Path) -> None:
    junit = tmp_path / "report.xml"
    code, report = kit(tmp_path, "good", "-k", "tools.", "--junit", str(junit))
    assert outcomes(report)["tools.turn-with-a-tool-call-completes"] == "not_applicable"
    assert code == 0
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    case = next(
        c for c in suite.iter("testcase") if c.get("name", "").startswith("tools.turn-with-a-tool-call")
    )
    assert case.get("classname") == "acp-conformance.MUST"
    assert case.find("skipped") is not None
    assert int(suite.get("skipped", "0")) >= 5 and suite.get("failures") == "0"


@pytest.mark.parametrize(
    "args", [["--profile", "no-such-profile"], ["--scenarios", "/nonexistent/dir", "--only-extra"]]
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "acp_conformance", "--agent", "true", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("acp-conformance: ")
